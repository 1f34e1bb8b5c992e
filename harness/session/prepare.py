"""Bringing a unit to a known state before a race or a test: the one routine the runner, conform's
scenario part and the pytest fixtures share."""
from __future__ import annotations

from typing import Mapping

from unohil.protocol import catalogue as cat

from unohil.harness.errors import Nak
from unohil.harness.session.driver import Driver

#: How far ahead a switch edge is injected on a unit without host_input: past any link's round trip.
SWITCH_LEAD_US = 30_000
#: switches a unit with the capability reads only when switched on (FL-20): switch -> capability
READ_AT_POWER_ON = {"speed_switch": "speed_at_power_on"}


def prepare(d: Driver, config: Mapping[str, int] | None = None, seed: int | None = None,
            physical: Mapping[str, str] | None = None) -> None:
    """A new game on a unit that is as the session believes it to be.

    After a reboot the session is said again; after a race cut short the unit is rebooted,
    because it may hold that race's stimuli, which RESET new_game keeps (SPEC 4.9). With
    config, every parameter of the unit's kind is brought to the value given or its default;
    with seed, rng_seed is set last. Every switch (door, power, speed) is put where physical
    says, else where a booted unit has it: RESET new_game does not move them (LA-7, FL-17).
    """
    if d.reset_detected is not None:
        d.reconnect()
    if d.dirty:
        d.reboot()
    if d.clock.estimate is None:
        # a new session's clock is synchronised before the new game, not after it: its exchanges
        # take seconds when replies are lost, and the unit's timers would run meanwhile
        d.sync_clock()
    retries = d.health.retries
    d.reset("new_game", retries=2)      # a second new game (the first ACK lost) is harmless here
    if d.has_cap("config_set"):         # without it the unit keeps its defaults
        _configure(d, config, seed)
    set_switches(d, physical or {})
    if d.health.retries != retries:
        # Each reply lost on the way cost a timeout, and the new game's own timers ran meanwhile (the
        # Flash's inactivity, FL-11, counts from the RESET): one may have fired before the race began.
        # Another new game starts them again, with the configuration now in force.
        d.reset("new_game", retries=2)
    d.inbox.clear()


def _configure(d: Driver, config: Mapping[str, int] | None, seed: int | None) -> None:
    """The configuration, then the seed. A unit configures only while idle (SPEC 4.7): one that left its
    new game meanwhile on its own (asleep, FL-11, while replies lost on the link cost their timeouts) is
    given another new game and the rest sent again; refused twice, the refusal is the unit's."""
    for attempt in (0, 1):
        try:
            if config is not None:
                d.apply_config({k: v for k, v in cat.UNITS[d.kind].with_defaults(config).items() if k != "rng_seed"})
            if seed is not None:
                d.config_set("rng_seed", seed & 0xFFFFFFFF)
            return
        except Nak as exc:
            if attempt or exc.error != "wrong_state":
                raise
            d.reset("new_game", retries=2)


def set_switches(d: Driver, physical: Mapping[str, str]) -> None:
    """Put the unit's switches where physical says (the others where a booted unit has them).

    Only the switches not known to be there already are moved, each by the edge that puts it in its
    position whatever it was (a redundant edge is reported, LA-7, FL-17): the cheapest way there. If
    the unit refuses one, it is rebooted and the edges sent again.
    """
    unit = cat.UNITS[d.kind]
    wanted = {**unit.boot_positions, **physical}
    for attempt in (0, 1):
        known = d.switch_positions or {}
        try:
            moved = [name for name in wanted if known.get(name) != wanted[name]]
            for name in moved:
                _edge(d, name, *unit.switches[name][wanted[name]])
            unread = [n for n in moved if n in READ_AT_POWER_ON and d.has_cap(READ_AT_POWER_ON[n])]
            if unread and wanted.get("power") == "on":
                # the document's gesture: the switch is set under the base, then the base is switched on
                # (FL-20); an edge that finds the power already on is only reported, so off first
                _edge(d, "power", *unit.switches["power"]["off"])
                _edge(d, "power", *unit.switches["power"]["on"])
        except Nak:
            if attempt:
                raise
            d.reboot()
            continue
        d.switch_positions = wanted
        return


def _edge(d: Driver, name: str, action: str, value: int) -> None:
    if d.has_cap("host_input"):
        d.input(name, action, value)
        return
    at = d.device_now() + SWITCH_LEAD_US
    d.inject(at, name, action, value)
    d.wait_until(at)
    d.status()          # a reply after the edge: the race's start is counted from the latest one
