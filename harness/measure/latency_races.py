"""The races `unohil bench` runs on each kind of unit, each ending in the unit's verdict.

Showdown: a countdown, then two presses with a spread of reaction times like people's (a first press
150-450 ms after green, the other side 10-200 ms later), one race in eight a tie inside the tie window
(settled at the landing), one in ten a false start: the verdict timers of every kind of race. Flash:
three players, a game, BUZZER from the current player and the two opponents' presses 150-450 ms
after it: the buzzer verdict at the slowest press. Launcher: a sure burst of one to three cards: the
press's verdict at the last card. Every stimulus is placed in device time, AHEAD_US ahead of what the
unit last said (a press the host got to the unit too late is refused, counted and run again).
"""
from __future__ import annotations

import random
from typing import Callable

from unohil.protocol.devtime import diff

from unohil.harness.errors import Nak
from unohil.harness.run.judge import named_fields
from unohil.harness.scenarios.units import UNITS
from unohil.harness.session.driver import Driver

AHEAD_US = 50_000      # a stimulus this far ahead of the device's last word survives this VM's stalls
VERDICT_WAIT_US = 5_000_000


class TooLate(Exception):
    """The unit refused a stimulus as too late: the host stalled; the race runs again."""


def _inject(d: Driver, at: int, name: str, action: str = "press", value: int = 0) -> None:
    try:
        d.inject(at, name, action, value)
    except Nak as exc:
        if exc.error == "too_late":
            raise TooLate() from None
        raise


def _wait(d: Driver, name: str):
    return d.wait_for(lambda f: f.msg.NAME == name, VERDICT_WAIT_US, name)


def _verdict(d: Driver, name: str) -> tuple:
    """The verdict and the host time the waiting code got it: taken here, before anything the race does
    after its verdict (a wait for a later press), which is no part of the delivery."""
    v = _wait(d, name)
    return v, d.now_us()


def setup_showdown(d: Driver) -> None:
    d.apply_config({"countdown_min_us": 500_000, "countdown_max_us": 500_000, "beep_interval_us": 2_000_000})


def showdown_race(d: Driver, rng: random.Random):
    d.reset("new_game")
    d.input("load_cards", value=1)
    start = d.input("timer")
    first, other = rng.sample(("paddle_a", "paddle_b"), 2)
    kind = rng.random()
    if kind < 0.1:                                  # a false start: adjudicated at the press
        _inject(d, start.dev_us + AHEAD_US, first)
        return _verdict(d, "SD_VERDICT")
    green = _wait(d, "SD_GREEN")
    t1 = green.dev_us + max(AHEAD_US, rng.randrange(150_000, 450_000))
    second = t1 + (rng.randrange(0, d.config_cache.get("tie_window_us", 1000)) if kind < 0.225
                   else rng.randrange(10_000, 200_000))
    _inject(d, t1, first)
    _inject(d, second, other)
    verdict = _verdict(d, "SD_VERDICT")
    d.wait_until(second)        # the later press, often after the verdict: not into the next race (SPEC 4.9)
    return verdict


def setup_flash(d: Driver) -> None:
    pass


def flash_race(d: Driver, rng: random.Random):
    d.reset("new_game")
    for button in ("player_0", "player_1", "player_2"):
        d.input(button)
    d.input("play_pause")
    selected = _wait(d, "FL_SELECTED")
    d.input("play_pause", "release")
    buzzer = d.input("buzzer")
    opponents = [p for p in (0, 1, 2) if p != selected.msg.player]
    for p in opponents:
        _inject(d, buzzer.dev_us + max(AHEAD_US, rng.randrange(150_000, 450_000)), f"player_{p}")
    return _verdict(d, "FL_BUZZER_VERDICT")       # at the slowest press: nothing is left pending


def setup_launcher(d: Driver) -> None:
    d.apply_config({"fire_base_permille": 1000, "burst_min": 1, "burst_mode": 2, "burst_max": 3})


def launcher_race(d: Driver, rng: random.Random):
    d.reset("new_game")
    d.input("door", "press")
    d.input("load_cards", value=3)
    d.input("door", "release")
    d.input("button")
    return _verdict(d, "LA_RESULT")


RACES: dict[str, tuple[Callable, Callable]] = {
    "showdown": (setup_showdown, showdown_race),
    "flash": (setup_flash, flash_race),
    "launcher": (setup_launcher, launcher_race),
}


def unit_identity(d: Driver) -> dict:
    """What the unit is, as a results file names it (the store records its firmware from this)."""
    ident = d.identity
    if ident is None:
        return {"kind": d.kind}
    return {"kind": d.kind, "serial": ident.serial, "firmware": f"{ident.fw_major}.{ident.fw_minor}.{ident.fw_patch}",
            "boot_id": ident.boot_id, "catalog_crc": f"{ident.catalog_crc:#06x}"}


def verdict_latencies(d: Driver, races: int, origin_us: int | None, seed: int = 1,
                      progress: Callable[[int, int], None] | None = None, stop: Callable[[], object] | None = None,
                      into: dict | None = None) -> dict:
    """Run races on the unit; lists of its verdicts' processing (header - knowable_us), the host's read
    and delivery after the verdict was produced, and a command's round trip (us); late_stimuli: races
    run again because the host got a stimulus to the unit too late; outcomes: verdicts by reason.
    stop: asked between races, a true answer ends the run there (a signal); into: the dict the figures
    are gathered in as they come (the caller keeps the finished races if the run is cut short)."""
    setup, race = RACES[d.kind]
    unit = UNITS[d.kind]
    out = into if into is not None else {}
    out.update(processing_us=[], read_us=[], delivered_us=[], command_rtt_us=[], late_stimuli=0, outcomes={})
    outcomes = out["outcomes"]
    setup(d)
    rng = random.Random(seed)
    proc, read, delivered, rtt = out["processing_us"], out["read_us"], out["delivered_us"], out["command_rtt_us"]
    est = d.clock.estimate
    i = 0
    while i < races and not (stop is not None and stop()):
        t0 = d.now_us()
        d.status()
        rtt.append(d.now_us() - t0)
        try:
            v, got = race(d, rng)
        except TooLate:
            out["late_stimuli"] += 1
            if out["late_stimuli"] > races:
                raise
            continue
        outcome = named_fields(v, unit)
        key = str(outcome["reason"]) if "reason" in outcome else f"{unit.outcome_field} {outcome[unit.outcome_field]}"
        outcomes[key] = outcomes.get(key, 0) + 1
        proc.append(diff(v.time_us, v.msg.knowable_us))
        produced = (v.dev_us + origin_us) if origin_us is not None else est.to_host(v.dev_us)
        read.append(v.host_us - produced)
        delivered.append(got - produced)
        if i % 50 == 49:
            est = d.sync_clock(8)
            if progress is not None:
                progress(i + 1, races)
        i += 1
    out["outcomes"] = dict(sorted(outcomes.items()))
    return out
