"""Before a run starts: which scenarios it leaves out (the library's scenarios of unit kinds no device is), and
how long it will take on units that keep real time.

The estimate is the device time the scenarios take, found by running them first on a virtual-clock emulator of
each kind, where time passes only as the unit's timers and the scenario's steps make it pass: every anchor
(a countdown drawn from the scenario's seed, a turn timer, a burst), every repetition, hold, wait and loop is
counted as the runner schedules it, not re-derived from the catalogue's bounds (the latest a verdict may come
is often ten times when it comes). That costs well under a second for the whole library, and only when a
unit keeps real time; a virtual-clock run is over before an estimate would be read.
"""
from __future__ import annotations

from collections import Counter

from unohil.harness.outcome import Outcome
from unohil.harness.report.console import elapsed_text
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.lead import REAL_LEAD_US, VIRTUAL_LEAD_US
from unohil.harness.session.driver import Driver

SAY_ABOVE_S = 60.0      # a shorter run is not worth a line


def left_out(scenarios: list, kinds) -> tuple[list, str | None]:
    """The scenarios of the given unit kinds, and one line naming what the others are and why they are left out
    (None when none is)."""
    kept = [s for s in scenarios if s.unit in kinds]
    others = Counter(s.unit for s in scenarios if s.unit not in kinds)
    if not others:
        return kept, None
    what = " and ".join(f"{n} {kind}" for kind, n in sorted(others.items()))
    have = " and ".join(sorted(kinds))
    return kept, (f"left out {what} scenario(s) of the library: no {' or '.join(sorted(others))} device given "
                  f"(the devices are {have}; give scenario files to run them elsewhere)")


def device_time(scenarios: list, kind: str, *, attended: bool = False) -> tuple[float, int]:
    """The seconds one unit of kind spends on the scenarios (of that kind), as a virtual-clock emulator spends
    them, plus the lead a race takes on a link with transit time; and how many races it ran (a scenario the
    emulator skips, e.g. one that needs a rig, counts for none)."""
    mine = [s for s in scenarios if s.unit == kind]
    total_us = races = 0
    with Driver.open(f"emu://{kind}?clock=virtual") as d:
        runner = Runner(d, attended=attended)
        for sc in mine:
            t0 = d.device_now()
            res = runner.run(sc)
            total_us += d.device_now() - t0
            if res.status is not Outcome.SKIP:
                total_us += len(res.races) * (REAL_LEAD_US - VIRTUAL_LEAD_US)
                races += len(res.races)
    return total_us / 1e6, races


def estimate_line(scenarios: list, drivers: list, *, attended: bool = False) -> str | None:
    """The line that says how long the run will take on units that keep real time (each kind's share spread over
    its units, the kinds side by side), when that is over SAY_ABOVE_S; None otherwise (or when the estimate
    cannot be made: it never stops a run)."""
    real = Counter(d.kind for d in drivers if not d.link.virtual)
    if not real:
        return None
    try:
        spent = {kind: device_time(scenarios, kind, attended=attended) for kind in real}
    except Exception:       # noqa: BLE001 (a dry run that fails says nothing of the real one, which goes on)
        return None
    seconds = max(s / real[kind] for kind, (s, _) in spent.items())
    if seconds <= SAY_ABOVE_S:
        return None
    races = sum(n for _, n in spent.values())
    return (f"estimated duration: about {elapsed_text(seconds)} ({races} races; the scenarios' device time on "
            f"{' and '.join(f'{n} {k} unit(s)' for k, n in sorted(real.items()))} keeping real time)")
