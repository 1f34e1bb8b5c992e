"""Fairness from outside the unit (protocol/SPEC.md 13.6): side skew and tie window, in rig time.

Races put seat A's press at t and seat B's at t + d (rig time) for offsets d around zero, in both
orders, and record who the unit judged first. P_A(d), A's share (a tie counts a half), rises from 0 to
1; its half-way point d* is the flip point. d* < 0: B must press |d*| earlier to be judged level, a skew
toward A of |d*|, which is what is reported (skew_toward_a_us = -d*).

The flip point is found in two sweeps: a coarse one over +-range finds the offsets between which P_A
leaves 0 and reaches 1, a fine one races at offsets drawn at random from that bracket, a batch at a
time, and d* is lo plus the integral of 1 - P_A over the bracket (the mean of 1 - score over the races
times its width): exact for a sharp flip, the curve's mean for a blurred one (a poll loop's, jitter's).
After each batch the bracket narrows to what the races say (order statistics, with a margin); the 95%
interval is a bootstrap over the races of the last bracket, and the sweep races on until it is
precision_us either side or max_races were run: the count is the tool's, reported, and no step decides
the interval (there is no grid). The unit's tie parameter is at its minimum
for this (a tie needs equal times); the tie window as seen from outside is then measured at the unit's
own setting: half the area under P_tie over d* +- 2 windows.

Every seat (measure_seats): a Flash base's seats, each raced against a reference seat (player 0) with a
third seat on BUZZER; each seat's skew toward the reference with its interval, the seat flagged when the
interval excludes 0 (the unit treats it otherwise than the reference) and held to the SPEC's bound. The
tie window is the unit's, not a seat's: it is measured once, on the first pair.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from unohil.harness.errors import HarnessError
from unohil.harness.rig.races import FAIR_RACES, seat_names
from unohil.harness.rig.session import RigSession

BOOTSTRAP = 400


class NotMeasured(HarnessError):
    """The races could not place the flip point: it lies outside the offsets swept, or a race ended
    otherwise than in a decided press."""


class Stopped(Exception):
    """The measurement was asked to stop (a signal) between two races; what it finished is in its `into`."""


@dataclass
class Sweep:
    offsets: list[int]
    scores: list[list[float]]          # per offset: 1 A judged first, 0 B, 0.5 a tie; one per race

    @property
    def means(self) -> list[float]:
        return [sum(s) / len(s) for s in self.scores]


SCORE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _sweep(run, offsets, trials: int, stop=None, cut: dict | None = None) -> Sweep:
    """cut: told how far the sweep got, for a measurement stopped in it."""
    scores = []
    for d in offsets:
        row = []
        for _ in range(trials):
            if stop is not None and stop():
                if cut is not None:
                    cut.update(offsets_done=len(scores), of=len(list(offsets)))
                raise Stopped()
            outcome = run(d)
            if outcome not in SCORE:
                raise NotMeasured(f"a fairness race at offset {d} us ended {outcome!r}, not in a decided press")
            row.append(SCORE[outcome])
        scores.append(row)
    return Sweep(list(offsets), scores)


def _bracket(sw: Sweep) -> tuple[int, int] | None:
    """The offsets between which P_A leaves 0 and reaches 1 (one coarse step either side), None if it
    does not cross inside the sweep."""
    means = sw.means
    if means[0] > 0 or means[-1] < 1:
        return None
    lo = max(i for i, p in enumerate(means) if p == 0 and all(q < 1 for q in means[:i + 1]))
    hi = min(i for i, p in enumerate(means) if p == 1 and i > lo)
    return sw.offsets[lo], sw.offsets[hi]


def _grid(lo: int, hi: int, points: int, resolution: int) -> list[int]:
    step = max(resolution, -(-(hi - lo) // points))
    return list(range(lo, hi + step, step))


def _flip(lo: int, hi: int, scores: list[float]) -> float:
    """The flip point from races at offsets drawn uniformly from the integers lo..hi: lo plus the integral
    of 1 - P_A over the bracket (its mean times the bracket's width), less half a microsecond so that a
    sharp flip reads half-way between the last offset B wins and the first A does."""
    return lo + (hi - lo + 1) * sum(1.0 - x for x in scores) / len(scores) - 0.5


def _interval(lo: int, hi: int, scores: list[float], rng: random.Random) -> tuple[float, float]:
    """The flip point's 95% interval: a bootstrap over the races (drawn again, each whole). No step widens
    it: the offsets are drawn at random, not from a grid."""
    values = sorted(_flip(lo, hi, [rng.choice(scores) for _ in scores]) for _ in range(BOOTSTRAP))
    return values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]


def _narrowed(lo: int, hi: int, races: list[tuple[int, float]]) -> tuple[int, int]:
    """The bracket the races say the flip lies in (order statistics): above the highest offset below which
    A never won, below the lowest above which A always did; twice its width added either side, as a blurred
    flip's tails (P_A a few per cent) are seldom raced and cutting them would bias the estimate."""
    races = sorted(races)
    low = lo
    for d, x in races:
        if x > 0:
            break
        low = d
    high = hi
    for d, x in reversed(races):
        if x < 1:
            break
        high = d
    margin = 2 * (high - low) + 1
    return max(lo, low - margin), min(hi, high + margin)


def _fine(sweep, bracket: tuple[int, int], batch: int, precision_us: float, max_races: int,
          rng: random.Random) -> dict:
    """Races at offsets drawn at random from the bracket, a batch at a time, until the flip point's 95%
    interval is at most precision_us either side or max_races were run. After each batch the bracket is
    narrowed to what its races say; the estimate is from the races in the last bracket, all of them."""
    lo, hi = bracket
    races: list[tuple[int, float]] = []
    run = 0
    while True:
        offsets = [rng.randint(lo, hi) for _ in range(batch)]
        sw = sweep(offsets)
        run += batch
        races += [(d, row[0]) for d, row in zip(sw.offsets, sw.scores)]
        scores = [x for _, x in races]
        flip = _flip(lo, hi, scores)
        ilo, ihi = _interval(lo, hi, scores, rng)
        if (ihi - ilo) / 2 <= precision_us or run >= max_races:
            return {"flip_us": flip, "interval": (ilo, ihi), "bracket_us": [lo, hi], "races": len(races),
                    "races_all_brackets": run}
        nlo, nhi = _narrowed(lo, hi, races)
        if (nhi - nlo) * 4 <= (hi - lo) * 3:        # a quarter narrower at least: start again in it
            lo, hi, races = nlo, nhi, []


def measure(s: RigSession, *, range_us: int = 2000, coarse_trials: int = 3, fine_points: int = 25,
            fine_trials: int = 6, tie_trials: int = 2, seed: int = 1, seats: tuple[str, str] | None = None,
            precision_us: float = 5.0, max_races: int = 4000,
            tie: bool = True, stop=None, into: dict | None = None) -> dict:
    """Side skew (with its 95% interval) between two seats (the kind's by default: A first) and, with tie, the
    unit's tie window, from outside. stop: asked between races, a true answer raises Stopped; into: the
    dict each sweep's figures go in as it finishes, and "cut": the sweep in progress and how far it got."""
    setup, race, tie_param, default_seats = FAIR_RACES[s.kind]
    seats = seats or default_seats
    rng = random.Random(seed)
    own_tie = s.unit.config_get(tie_param)
    races = [0]

    def run(d: int) -> str:
        races[0] += 1
        return race(s, d, rng, seats).outcome

    out = into if into is not None else {}
    out.update(kind=s.kind, seats=list(seats), tie_param=tie_param, tie_setting_us=own_tie, races=0)

    def sweep(name: str, run_one, offsets, trials: int) -> Sweep:
        out["cut"] = {"sweep": name}
        try:
            return _sweep(run_one, offsets, trials, stop, out["cut"])
        except Stopped:
            setup(s, own_tie)
            raise
        finally:
            out["races"] = races[0]

    setup(s, 1)
    coarse = sweep("coarse", run, range(-range_us, range_us + 1, max(1, range_us // 8)), coarse_trials)
    out["coarse"] = {"offsets": coarse.offsets, "p_a": coarse.means}
    bracket = _bracket(coarse)
    if bracket is None:
        setup(s, own_tie)
        raise NotMeasured(f"the verdict does not flip between offsets -{range_us} and +{range_us} us "
                          f"(A's share {coarse.means[0]:.2f} .. {coarse.means[-1]:.2f}): give a larger --range")
    fine = _fine(lambda offsets: sweep("fine", run, offsets, 1), bracket, fine_points * fine_trials,
                 precision_us, max_races, rng)
    flip = fine["flip_us"]
    lo, hi = fine.pop("interval")
    setup(s, own_tie)
    out.update({"flip_us": flip, "skew_toward_a_us": 0.0 - flip, "interval_us": [-hi, -lo], "fine": fine})
    if tie:
        tie_grid = _grid(round(flip) - 2 * own_tie, round(flip) + 2 * own_tie, 2 * fine_points, 1)
        ties = sweep("tie", lambda d: "a" if run(d) == "tie" else "b", tie_grid, tie_trials)   # 1 = a tie
        step = tie_grid[1] - tie_grid[0]
        out.update(tie_window_us=step * sum(ties.means) / 2, tie_step_us=step)
    del out["cut"]
    out["races"] = races[0]
    return out


def measure_seats(s: RigSession, reference: str = "player_0", into: dict | None = None, progress=None,
                  **kw) -> dict:
    """Every seat of a Flash base against the reference seat: each seat's skew toward the reference (how much
    earlier it must press to be judged level) with its 95% interval; differs: the interval excludes 0.
    into: the dict the finished seats go in as each finishes ("cut": the seat in progress, when stopped);
    progress(seat, done, total): told as each seat finishes."""
    seats = seat_names()[:s.unit.identity.players]
    if len(seats) < 3:
        raise NotMeasured(f"a Flash base of {len(seats)} players has no race between two opponents (it needs 3)")
    if reference not in seats:
        raise NotMeasured(f"the reference seat {reference!r} is not one of this base's: {', '.join(seats)}")
    out = into if into is not None else {}
    out.update({"kind": s.kind, "reference": reference, "seats": [], "races": 0})
    for seat in (x for x in seats if x != reference):
        part: dict = {}
        out["cut"] = {"seat": seat, "so_far": part}
        r = measure(s, seats=(reference, seat), tie="tie_window_us" not in out, into=part, **kw)
        del out["cut"]
        lo, hi = r["interval_us"]
        out["seats"].append({"seat": seat, "skew_toward_reference_us": r["skew_toward_a_us"], "interval_us": [lo, hi],
                             "differs": lo > 0 or hi < 0, "races": r["races"]})
        out["races"] += r["races"]
        for key in ("tie_param", "tie_setting_us", "tie_window_us", "tie_step_us"):
            out.setdefault(key, r.get(key))
        if progress is not None:
            progress(seat, len(out["seats"]), len(seats) - 1)
    return out
