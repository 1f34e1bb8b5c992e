"""Before the seeded scenarios: are the unit's draws SPEC 6.0's?

A unit that says it has `reference_rng` and draws from another stream fails every seeded scenario with
a verdict that looks like a broken rule ("loser: expected b, got a"). So conform first plays a few
races whose outcome is the seeds' first draws and nothing else (a Showdown's countdown length, a Flash's
selections, a launcher's burst size), compares them with SPEC 6.0's generator, and says which draw
first differs: the generator, not the rules, is then what to fix.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from unohil.protocol import algorithms as A, catalogue as cat, devtime

from unohil.harness.outcome import Outcome
from unohil.harness.scenarios.load import loads

CHECK = "the unit's first draws are SPEC 6.0's generator's (before the seeded scenarios)"
SEEDS = 3
_N = 1 << 20           # a power of two: U(n) rejects nothing, so each countdown shows 20 bits of one output

_SHOWDOWN = f"""
name: the unit's first draw of each seed (SPEC 6.0, 6.1)
unit: showdown
seed: 1
repeat: {SEEDS}
config: {{countdown_min_us: 1000000, countdown_max_us: {1_000_000 + _N - 1}}}
steps:
  - load: 1
  - press: timer
    at: start + 1000
  - press: paddle_a
    at: green + 200000
expect:
  verdict: {{loser: b, reason: first_press}}
"""

# whoever was current, both buttons are up again before the next press (a release acts on nothing)
_TURNS = "".join(["  - press: current\n    at: previous + 100000\n  - release: player_0\n    at: previous + 50000\n"
                  "  - release: player_1\n    at: previous\n"] * 7)

# two players every base has; each press of the current player's button ends the turn and draws the next
_FLASH = f"""
name: the unit's first draws of each seed (SPEC 6.0, 6.3)
unit: flash
seed: 1
repeat: {SEEDS}
steps:
  - speed: unlimited
  - press: player_0
    at: start + 1000
  - press: player_1
    at: previous + 100000
  - press: play_pause
    at: previous + 100000
  - release: play_pause
    at: previous + 10000
{_TURNS}expect:
  count: {{FL_SELECTED: 8}}
"""

# a sure fire (its draw U(1000) is made and cannot miss), then the burst's one draw U(T) (6.5)
_LAUNCHER = f"""
name: the unit's first draws of each seed (SPEC 6.0, 6.4, 6.5)
unit: launcher
seed: 1
repeat: {SEEDS}
config: {{fire_base_permille: 1000}}
steps:
  - door: open
    at: start + 1000
  - load: 40
  - door: close
  - press: button
    at: previous + 100000
expect:
  verdict: {{press: 1}}
"""


@dataclass(frozen=True)
class Probe:
    text: str
    what: str                                       # what one observed value is, in words
    observe: Callable[[list, dict], list[int]]      # a race's events, the configuration -> the values seen
    predict: Callable[[A.Pcg32, dict], list[int]]   # SPEC 6.0's generator, seeded -> the values it gives


def _countdown_seen(frames, config) -> list[int]:
    timer = cat.ENUM_VALUES["showdown_input"]["timer"]
    press = next(f for f in frames if f.msg.NAME == "INPUT_SEEN" and f.msg.input == timer)
    verdict = next(f for f in frames if f.msg.NAME == "SD_VERDICT")
    return [devtime.diff(verdict.msg.green_us, press.time_us)]


def _config(config, name):
    return config.get(name, cat.PARAMS_BY_NAME[name].default)


def _countdown_drawn(rng, config) -> list[int]:
    return [A.countdown(rng, _config(config, "countdown_min_us"), _config(config, "countdown_max_us"))]


def _selected_seen(frames, config) -> list[int]:
    return [f.msg.player for f in frames if f.msg.NAME == "FL_SELECTED"]


def _selected_drawn(rng, config) -> list[int]:
    return [A.pick(rng, [0, 1]) for _ in range(8)]


def _burst_seen(frames, config) -> list[int]:
    return [f.msg.planned for f in frames if f.msg.NAME == "LA_RESULT"]


def _burst_drawn(rng, config) -> list[int]:
    A.fires(rng, _config(config, "fire_base_permille"))
    return [A.sample_burst(rng, *(_config(config, p) for p in ("burst_min", "burst_mode", "burst_max")))]


PROBES = {
    "showdown": Probe(_SHOWDOWN, "countdown (us)", _countdown_seen, _countdown_drawn),
    "flash": Probe(_FLASH, "selected player", _selected_seen, _selected_drawn),
    "launcher": Probe(_LAUNCHER, "burst size", _burst_seen, _burst_drawn),
}


def compare(runner, kind: str) -> tuple[Outcome, str]:
    """Play the probe of `kind` on the runner's unit: pass and what matched, fail and where the draws differ
    (or why its races did not give them), or skip and why the unit cannot play it (no config_set, say)."""
    probe = PROBES[kind]
    (sc,) = loads(probe.text, f"<{kind} draws>")
    res = runner.run(sc)
    if res.status is Outcome.SKIP:
        return Outcome.SKIP, f"not compared: {res.error}"
    n = 0
    for race in res.races:
        seed = sc.race_seed(race.index)
        if race.status is not Outcome.PASS:
            why = race.error or "; ".join(race.failures[:2])
            # as for a scenario: a race the unit lost is a fail, one the link lost an error
            return (Outcome.FAIL if race.status is Outcome.FAIL else Outcome.ERROR), f"the race of rng_seed {seed} did not end as SPEC 6.0's draws need: {race.status} ({why})"
        seen = probe.observe(race.frames, sc.config)
        drawn = probe.predict(A.Pcg32(seed), sc.config)[:len(seen)]
        for i, (got, want) in enumerate(zip(seen, drawn)):
            if got != want:
                where = "from the first draw" if n == 0 else f"from draw {i + 1} of rng_seed {seed} ({n} before agree)"
                return Outcome.FAIL, (f"the unit's draws differ from SPEC 6.0's {where}: rng_seed {seed}, {probe.what} "
                               f"{got}, SPEC 6.0's generator gives {want}; the seeded scenarios cannot pass until "
                               f"the generator (PCG32, RNG_STREAM {cat.RNG_STREAM:#x}, U(n)) is SPEC 6.0's")
            n += 1
        if len(seen) < 1:
            return Outcome.FAIL, f"the race of rng_seed {seed} showed no {probe.what}"
    return Outcome.PASS, f"{n} draws of rng_seed {', '.join(str(sc.race_seed(r.index)) for r in res.races)} are SPEC 6.0's"
