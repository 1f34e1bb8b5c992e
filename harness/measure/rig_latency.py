"""unohil bench --rig: latency from the physical press to the physical verdict, against the unit's own figures.

Every figure is a difference of rig times (the rig's truth) or of unit times (what the unit reports),
so neither needs the two clocks compared; the timestamp error alone maps the rig's press into unit time
through both time syncs (exact on the virtual clock; within both estimates' uncertainty on a bench).

  Showdown  press_to_launch   paddle press (driven) -> launch solenoid (watched)
            press_to_light    first press -> green lamp off (the verdict shown)
            press_to_red      a false start -> the red lamp swings to the false starter (the other side's
                              red line goes inactive)
            unit_*            the same intervals in the unit's own events (SD_LAUNCH, SD_VERDICT, LIGHT)
            reaction_error    the unit's reaction time (press - SD_GREEN) minus the rig's (press - green lamp)
            timestamp_error   the unit's press time minus the driven press, in unit time
  Flash     press_to_flag     the slowest opponent's press -> the verdict shown: the other opponent's light
                              goes dark, the slowest's keeps flashing (the flag)
            unit_press_to_flag  that LIGHT(off)'s time - the verdict's decisive press
  Launcher  press_to_first_card  button press -> the card-exit sensor; unit: LA_CARD(0) - LA_RESULT.press_us

The floor (SPEC 13.7): between two races, one pulse round the rig's loopback, a drive line wired to a
watched line on the rig itself: floor_loopback is its watched stamp minus its driven one, what the rig's
own path adds to any press_to_ figure in this run. Each press_to_ figure is reported beside it and, as
its _less_floor figure, each edge less the least loopback of the run: the rig's own lag that every edge
had (its capture, SPEC 13.7), so what is left is never less than what the unit adds between its switch
and its output (the median, subtracted once, took the rig's noise off edges that had none: a 1 ms
delay read 969 us on the real clock).
The other figures are not differences of a driven and a watched stamp, and have no floor.
"""
from __future__ import annotations

import random

from unohil.protocol import catalogue as cat

from unohil.harness.measure.latency import distribution, distribution_table
from unohil.harness.rig.races import _unwrap_near, flash_race as buzzer_race, showdown_countdown
from unohil.harness.rig.session import AHEAD_US, RigSession

FALSE_START_SHARE = 0.25        # one race in four is a false start: the red lamp's path is measured too
FLOOR = "floor_loopback_us"
PHYSICAL = "press_to_"          # the figures from a driven stamp to a watched one: the floor is under them
MODE_OFF = cat.ENUM_VALUES["light_mode"]["off"]


def _event_after(s: RigSession, name: str, after_dev: int, where=lambda m: True):
    """The unit's first event name at or after unit time after_dev (from what it has sent so far)."""
    return next(f for f in list(s.unit.history)[-400:] if f.msg.NAME == name and f.dev_us >= after_dev and where(f.msg))


def showdown_race(s: RigSession, rng: random.Random, out: dict) -> str:
    timer = showdown_countdown(s)
    if rng.random() < FALSE_START_SHARE:
        side = rng.choice(("a", "b"))
        press = timer + rng.randrange(100_000, 400_000)          # inside the 500 ms countdown
        s.press(press, f"paddle_{side}")
        v = s.wait_unit("SD_VERDICT")
        # the red lamp, flashing toward both sides in the countdown, swings to the false starter's: the
        # other side's red line goes inactive
        other = cat.ENUM_VALUES["side"]["b" if side == "a" else "a"]
        red = s.wait_capture(s.line("light", "red", other), "release", after_us=press)
        stamp = _unwrap_near(getattr(v.msg, f"press_{side}_us"), v.dev_us)
        red_u = _event_after(s, "LIGHT", stamp, lambda m: m.light == 1 and m.mode != MODE_OFF and m.target != 0xFF)
        out["press_to_red_us"].append(red.dev_us - press)
        out["unit_press_to_red_us"].append(red_u.dev_us - stamp)
        out["timestamp_error_us"].append(stamp - s.rig_to_unit(press))
        s.settle()
        return "false_start"
    green = s.wait_capture(s.line("light", "green"), after_us=timer)
    first, other = rng.sample(("a", "b"), 2)
    press = green.dev_us + rng.randrange(150_000, 450_000)
    s.press(press, f"paddle_{first}")
    s.press(press + rng.randrange(10_000, 200_000), f"paddle_{other}")
    v = s.wait_unit("SD_VERDICT")
    launch = s.wait_capture(s.line("launch"), after_us=press)
    lamp_off = s.wait_capture(s.line("light", "green"), "release", after_us=press)
    m = v.msg
    stamp = _unwrap_near(getattr(m, f"press_{first}_us"), v.dev_us)
    launch_u = _event_after(s, "SD_LAUNCH", stamp)
    off_u = _event_after(s, "LIGHT", stamp, lambda m: m.light == 0 and m.mode == MODE_OFF)
    out["press_to_launch_us"].append(launch.dev_us - press)
    out["unit_press_to_launch_us"].append(launch_u.dev_us - stamp)
    out["press_to_light_us"].append(lamp_off.dev_us - press)
    out["unit_press_to_light_us"].append(off_u.dev_us - stamp)
    out["reaction_error_us"].append(getattr(m, f"reaction_{first}_us") - (press - green.dev_us))
    out["timestamp_error_us"].append(stamp - s.rig_to_unit(press))
    s.settle()
    return "first_press"


def flash_race(s: RigSession, rng: random.Random, out: dict) -> str:
    late = rng.randrange(10_000, 200_000)
    r = buzzer_race(s, late, rng)                   # player 1 presses late: they are the slowest
    v = r.verdict
    slowest = v.msg.slowest
    press = r.rig["press_b"] if slowest == 1 else r.rig["press_a"]
    # the verdict shown: every opponent's light but the slowest's goes dark, the slowest's keeps flashing
    faster = 1 - slowest
    flag = s.wait_capture(s.line("light", "player", faster), "release", after_us=press)
    decisive = _unwrap_near(v.msg.decisive_us, v.dev_us)
    flag_u = _event_after(s, "LIGHT", decisive, lambda m: m.target == faster and m.mode == MODE_OFF)
    out["press_to_flag_us"].append(flag.dev_us - press)
    out["unit_press_to_flag_us"].append(flag_u.dev_us - decisive)
    out["timestamp_error_us"].append(decisive - s.rig_to_unit(press))
    return r.outcome


def launcher_setup(s: RigSession) -> None:
    s.unit.reset("new_game")
    s.unit.apply_config({"fire_base_permille": 1000, "burst_min": 1, "burst_mode": 2, "burst_max": 3})


def launcher_race(s: RigSession, rng: random.Random, out: dict) -> str:
    s.new_race()
    s.unit.reset("new_game")
    t = s.rig_now() + AHEAD_US
    s.edge(t, "door", "press")
    s.edge(t + 20_000, "load_cards", "press", 3)
    s.edge(t + 40_000, "door", "release")
    press = t + 60_000 + rng.randrange(10_000)
    s.press(press, "button")
    v = s.wait_unit("LA_RESULT")
    card = s.wait_capture(s.line("card"), after_us=press)
    stamp = _unwrap_near(v.msg.press_us, v.dev_us)
    card_u = _event_after(s, "LA_CARD", stamp)
    out["press_to_first_card_us"].append(card.dev_us - press)
    out["unit_press_to_first_card_us"].append(card_u.dev_us - stamp)
    out["timestamp_error_us"].append(stamp - s.rig_to_unit(press))
    s.settle()
    return f"fired {v.msg.fired}"


RACES = {
    "showdown": (lambda s: None, showdown_race),
    "flash": (lambda s: None, flash_race),
    "launcher": (launcher_setup, launcher_race),
}


def rig_latencies(s: RigSession, races: int, seed: int = 1, stop=None, into: dict | None = None,
                  progress=None) -> dict:
    """Run races through the rig; the distributions of each figure and the races by outcome. stop: asked
    between races, a true answer ends the run there (a signal); into: the dict the figures are gathered in
    as they come, which summarise() turns into the result of the races finished (a run cut short)."""
    setup, race = RACES[s.kind]
    out = into if into is not None else {}
    out.update(kind=s.kind, races=races, _figures={}, _outcomes={})
    if s.kind == "showdown":
        s.unit.reset("new_game")
        s.unit.apply_config({"countdown_min_us": 500_000, "countdown_max_us": 500_000,
                             "beep_interval_us": 2_000_000})
    setup(s)
    rng = random.Random(seed)
    figures, outcomes = out["_figures"], out["_outcomes"]
    for _ in range(races):
        if stop is not None and stop():
            break
        lists = _Lists({})                      # one race's figures: kept only once it has finished
        key = race(s, rng, lists)
        lists[FLOOR].append(s.loopback())       # interleaved: the floor sees the rig, link and host the races saw
        for name, values in lists.into.items():
            figures.setdefault(name, []).extend(values)
        outcomes[key] = outcomes.get(key, 0) + 1
        if progress is not None and sum(outcomes.values()) % 10 == 0:
            progress(sum(outcomes.values()), races)
    return summarise(out)


def summarise(out: dict) -> dict:
    """The figures of the races finished (each whole: a race cut short leaves nothing half-made)."""
    figures = {k: list(v) for k, v in out.pop("_figures", {}).items()}
    outcomes = out.pop("_outcomes", {})
    done = sum(outcomes.values())
    floor = figures.get(FLOOR, [])
    median = distribution(floor)["p50"] if floor else None
    least = min(floor) if floor else None
    for name in [k for k in figures if k.startswith(PHYSICAL)]:
        figures[name.removesuffix("_us") + "_less_floor_us"] = [v - least for v in figures[name]]
    out.update({"races_done": done, "outcomes": dict(sorted(outcomes.items())), "floor_median_us": median,
                "floor_least_us": least, "samples": figures,
                "distributions": {k: distribution(v) for k, v in figures.items()},
                "means": {k: sum(v) / len(v) for k, v in figures.items() if v}})
    return out


class _Lists(dict):
    """figure name -> its list of values, made on first use."""
    def __init__(self, into: dict):
        super().__init__()
        self.into = into

    def __missing__(self, key):
        self.into[key] = self[key] = []
        return self[key]


def _order(keys) -> list[str]:
    """The floor first, then each press_to_ figure followed by itself less the floor and by the unit's own
    figure for it, then the others."""
    keys = list(keys)
    out = [k for k in keys if k == FLOOR]
    for k in keys:
        if k.startswith(PHYSICAL) and not k.endswith("_less_floor_us"):
            out += [k, k.removesuffix("_us") + "_less_floor_us", "unit_" + k]
    return out + [k for k in keys if k not in out]


def print_report(result: dict, console) -> None:
    d, means = result["distributions"], result["means"]
    rows = [("  less floor" if key.endswith("_less_floor_us") else key.removesuffix("_us"), d[key], means[key])
            for key in _order(d) if key in d]
    console.print(distribution_table(f"From the physical press: {result['races_done']} {result['kind']} races through "
                                     f"{result['rig']}", rows))
    console.print("  races: " + ", ".join(f"{k} {v}" for k, v in result["outcomes"].items()))
    console.print(f"  floor_loopback: the rig's own path (SPEC 13.7), one loopback pulse after each race; "
                  f"_less_floor: each edge less the least loopback ({result['floor_least_us']} us; median "
                  f"{result['floor_median_us']} us), the rig's lag every edge had")
    console.print("  rig figures are differences of rig times; unit_ ones of the unit's own times; "
                  "timestamp_error maps the rig's press into unit time by both time syncs")
