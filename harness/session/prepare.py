"""Bringing a unit to a known state before a race or a test: the one routine the runner, conform's
scenario part and the pytest fixtures share."""
from __future__ import annotations

from typing import Mapping

from protocol import catalogue as cat

from harness.session.driver import Driver


def prepare(d: Driver, config: Mapping[str, int] | None = None, seed: int | None = None) -> None:
    """A new game on a unit that is as the session believes it to be.

    After a reboot the session is said again; after a race cut short the unit is rebooted,
    because it may hold that race's stimuli and switch positions, which RESET new_game keeps
    (SPEC 4.9, LA-7, FL-17). With config, every parameter of the unit's kind is brought to
    the value given or its default; with seed, rng_seed is set last.
    """
    if d.reset_detected is not None:
        d.reconnect()
    if d.dirty:
        d.reboot()
    d.reset("new_game", retries=2)      # a second new game (the first ACK lost) is harmless here
    if config is not None and d.has_cap("config_set"):     # without it the unit keeps its defaults
        d.apply_config({k: v for k, v in cat.UNITS[d.kind].with_defaults(config).items() if k != "rng_seed"})
    if seed is not None and d.has_cap("config_set"):
        d.config_set("rng_seed", seed & 0xFFFFFFFF)
    d.inbox.clear()
