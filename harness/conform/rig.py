"""The acceptance run's rig section (SPEC 13.6): does the seat matter, measured from outside through a rig.

One check per pair of seats, each stating the bound it holds the pair to (fairness_bound_us): the
Showdown's two paddles; each seat of a Flash base against player 0 (a base of fewer than three seats
has no race between two opponents: skipped). A skew beyond the offsets swept is far outside the bound:
a fail that says so. The launcher has no race between seats: skipped.
"""
from __future__ import annotations

import time

from unohil.protocol import catalogue as cat

from unohil.harness.conform.report import CheckResult
from unohil.harness.outcome import Outcome

SECTION = "13.6"


def _check(name: str, interval: list[float], detail: str, bound: int, seconds: float) -> CheckResult:
    lo, hi = interval
    ok = -bound <= lo and hi <= bound
    return CheckResult(SECTION, name, Outcome.PASS if ok else Outcome.FAIL, detail, seconds=seconds)


def rig_checks(device_url: str, rig_url: str) -> list[CheckResult]:
    """The fairness checks of the unit at device_url through its rig at rig_url."""
    from unohil.harness.measure.fairness import NotMeasured, measure, measure_seats
    from unohil.harness.rig.links import open_drivers
    from unohil.harness.rig.races import FAIR_RACES, seat_names
    from unohil.harness.rig.session import RigSession
    bound = cat.RIG.timing["fairness_bound_us"]
    within = f"within +-{bound} us (fairness_bound_us), through {rig_url}"
    t0 = time.perf_counter()
    unit, rig = open_drivers(device_url, rig_url)
    try:
        if unit.kind not in FAIR_RACES:
            return [CheckResult(SECTION, f"side skew from outside {within}", Outcome.SKIP,
                                f"a {unit.kind} unit has no race between two seats", gap=False)]
        s = RigSession(unit, rig)
        s.wire()
        if unit.kind == "flash":
            seats = seat_names()[:unit.identity.players]
            if len(seats) < 3:
                return [CheckResult(SECTION, f"every seat's skew from outside {within}", Outcome.SKIP,
                                    f"a base of {len(seats)} seats has no race between two opponents", gap=False)]
            try:
                r = measure_seats(s)
            except NotMeasured as exc:
                return [CheckResult(SECTION, f"every seat's skew from outside {within}", Outcome.FAIL, str(exc))]
            seconds = (time.perf_counter() - t0) / len(r["seats"])
            ref = r["reference"]
            return [_check(f"seat {x['seat']} against {ref}: skew from outside {within}", x["interval_us"],
                           f"{x['skew_toward_reference_us']:+.0f} us toward {ref} (95% interval "
                           f"{x['interval_us'][0]:+.0f} .. {x['interval_us'][1]:+.0f} us); {x['races']} races",
                           bound, seconds) for x in r["seats"]]
        name = f"side skew from outside {within}"
        try:
            r = measure(s)
        except NotMeasured as exc:
            return [CheckResult(SECTION, name, Outcome.FAIL, str(exc))]
    finally:
        unit.close()
        rig.close()
    lo, hi = r["interval_us"]
    a, b = r["seats"]
    detail = (f"skew toward {a} {r['skew_toward_a_us']:+.0f} us (95% interval {lo:+.0f} .. {hi:+.0f} us) between "
              f"{a} and {b}; tie window from outside {r['tie_window_us']:.0f} us ({r['tie_param']} "
              f"{r['tie_setting_us']} us); {r['races']} races")
    return [_check(name, r["interval_us"], detail, bound, time.perf_counter() - t0)]
