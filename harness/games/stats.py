"""Game statistics: counts, and quantities with the expectation SPEC 6's distributions give.

Two kinds of expected quantity, both summed over every game of a run:

- an event with a known chance at each opportunity (a launcher press fires with its chance, a
  Flash selection picks a seat with 1/n): observed count against the sum of the chances, tolerance
  Z standard deviations of that sum (sqrt of the sum of p(1 - p));
- a mean with a known expectation and spread (burst size, countdown length): the sample mean against
  the expectation, tolerance Z standard errors (sigma / sqrt(n)).

Z = 4: a unit that follows the SPEC is flagged by chance about once in 16,000 quantities, and a unit
whose distribution is off by a few standard errors is flagged once the sample is large enough. A
flag is a finding to look at, not a failed game: one game's sample is small, and exact per-draw
predictions (reference_rng) are what fail a game.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict

Z = 4.0


class GameStats:
    def __init__(self, kind: str, players: int):
        self.kind = kind
        self.players = players
        self.games = 0
        self.counts: Counter = Counter()
        self.per_seat: dict[str, Counter] = defaultdict(Counter)
        self.maxima: dict[str, int] = {}
        # name -> [observed, sum of chances, sum of p(1 - p), opportunities]
        self.events: dict[str, list[float]] = {}
        # name -> [sum, count, expected mean, expected sd]
        self.means: dict[str, list[float]] = {}

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def seat(self, name: str, seat: int, n: int = 1) -> None:
        self.per_seat[name][seat] += n

    def most(self, name: str, value: int) -> None:
        self.maxima[name] = max(self.maxima.get(name, 0), value)

    def chance(self, name: str, p: float, happened: bool) -> None:
        e = self.events.setdefault(name, [0, 0.0, 0.0, 0])
        e[0] += int(happened)
        e[1] += p
        e[2] += p * (1 - p)
        e[3] += 1

    def mean(self, name: str, value: float, expected: float, sd: float) -> None:
        m = self.means.setdefault(name, [0.0, 0, expected, sd])
        m[0] += value
        m[1] += 1

    def merge(self, other: "GameStats") -> None:
        self.games += other.games
        self.counts.update(other.counts)
        for k, c in other.per_seat.items():
            self.per_seat[k].update(c)
        for k, v in other.maxima.items():
            self.most(k, v)
        for k, (o, s, v, n) in other.events.items():
            e = self.events.setdefault(k, [0, 0.0, 0.0, 0])
            e[0] += o; e[1] += s; e[2] += v; e[3] += n
        for k, (s, n, mu, sd) in other.means.items():
            m = self.means.setdefault(k, [0.0, 0, mu, sd])
            m[0] += s; m[1] += n

    def expectations(self) -> list[dict]:
        """Each expected quantity: observed, expected, tolerance, n, flagged."""
        out = []
        for name, (obs, exp, var, n) in sorted(self.events.items()):
            tol = Z * math.sqrt(var)
            out.append({"name": name, "observed": obs / n if n else 0.0, "expected": exp / n if n else 0.0,
                        "tolerance": tol / n if n else 0.0, "n": n,
                        "flagged": bool(n) and abs(obs - exp) > max(tol, 1e-9)})
        for name, (s, n, mu, sd) in sorted(self.means.items()):
            tol = Z * sd / math.sqrt(n) if n else 0.0
            mean = s / n if n else 0.0
            out.append({"name": name, "observed": mean, "expected": mu, "tolerance": tol, "n": n,
                        "flagged": bool(n) and abs(mean - mu) > tol})
        return out

    def as_dict(self) -> dict:
        return {"games": self.games, "counts": dict(sorted(self.counts.items())),
                "per_seat": {k: {str(s): n for s, n in sorted(c.items())} for k, c in sorted(self.per_seat.items())},
                "maxima": dict(sorted(self.maxima.items())), "expectations": self.expectations()}


def triangle_moments(lo: int, mode: int, hi: int) -> tuple[float, float]:
    """Mean and standard deviation of SPEC 6.5's integer triangle (exact, from its weights)."""
    from unohil.protocol.algorithms import burst_weights
    w = burst_weights(lo, mode, hi)
    total = sum(w)
    mean = sum(k * x for k, x in zip(range(lo, hi + 1), w)) / total
    var = sum((k - mean) ** 2 * x for k, x in zip(range(lo, hi + 1), w)) / total
    return mean, math.sqrt(var)


def uniform_moments(lo: int, hi: int) -> tuple[float, float]:
    """Mean and standard deviation of a uniform integer on [lo, hi]."""
    n = hi - lo + 1
    return (lo + hi) / 2, math.sqrt((n * n - 1) / 12)


def majority_chance(cards: int, p_b: float) -> tuple[float, float]:
    """Of `cards` each landing on B's side with p_b: P(more on A's side), P(more on B's side)."""
    pa = pb = 0.0
    for k in range(cards + 1):
        p = math.comb(cards, k) * p_b ** k * (1 - p_b) ** (cards - k)
        if 2 * k < cards:
            pa += p
        elif 2 * k > cards:
            pb += p
    return pa, pb
