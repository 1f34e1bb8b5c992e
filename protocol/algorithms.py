"""The normative integer algorithms of SPEC 6: bursts, fire chance, the line model, picks and countdowns.

Written once in Python; the emulator runs them and tools/vectors.py tabulates them for other
implementations.

U(n) is a uniform integer in [0, n) from the unit's generator: rng.randrange(n) for a Python
random.Random. Only the distributions are normative; the generator is the implementation's.
"""
from __future__ import annotations


def burst_weights(lo: int, mode: int, hi: int) -> list[int]:
    """Integer weights of burst sizes lo..hi: a triangle with zeros at lo - 1 and hi + 1 and its
    peak at mode. w(k) = (k - lo + 1) * (hi - mode + 1) for k <= mode,
                 w(k) = (hi - k + 1) * (mode - lo + 1) for k > mode."""
    if not 1 <= lo <= mode <= hi:
        raise ValueError(f"burst needs 1 <= lo <= mode <= hi, not {lo}, {mode}, {hi}")
    a, b = mode - lo + 1, hi - mode + 1
    return [(k - lo + 1) * b if k <= mode else (hi - k + 1) * a for k in range(lo, hi + 1)]


def burst_total(lo: int, mode: int, hi: int) -> int:
    """Sum of burst_weights: (mode - lo + 1) * (hi - mode + 1) * (hi - lo + 2) / 2, exactly."""
    a, b = mode - lo + 1, hi - mode + 1
    return a * b * (a + b) // 2


def burst_from_draw(lo: int, mode: int, hi: int, r: int) -> int:
    """The burst size for r in [0, burst_total): the first k whose cumulative weight exceeds r."""
    if not 0 <= r < burst_total(lo, mode, hi):
        raise ValueError(f"r must be in [0, {burst_total(lo, mode, hi)}), not {r}")
    for k, w in zip(range(lo, hi + 1), burst_weights(lo, mode, hi)):
        if r < w:
            return k
        r -= w
    raise AssertionError("unreachable")


def sample_burst(rng, lo: int, mode: int, hi: int) -> int:
    """One burst size: exactly one draw U(burst_total)."""
    return burst_from_draw(lo, mode, hi, rng.randrange(burst_total(lo, mode, hi)))


def fire_chance(base_permille: int, step_permille: int, empty_streak: int) -> int:
    """Chance per mille that a press fires: min(1000, base + streak * step)."""
    return min(1000, base_permille + empty_streak * step_permille)


def fires(rng, chance_permille: int) -> bool:
    """One draw U(1000), always made: the press fires iff it is below the chance."""
    return rng.randrange(1000) < chance_permille


def lands_on_b_from_draw(r: int, d: int, window: int) -> bool:
    """One card of a tie, r = U(2W): on B's side iff r < W + 2d, d = t_b - t_a."""
    return r < window + 2 * d


def lands_on_b(rng, d: int, window: int) -> bool:
    """One card of a tie: exactly one draw U(2W), made even when the outcome is certain.
    P(B) = clamp(1/2 + d/W, 0, 1)."""
    return lands_on_b_from_draw(rng.randrange(2 * window), d, window)


def cards_on_b(window: int, d: int) -> int:
    """How many of the 2W equally likely draws put a card on B's side: clamp(W + 2d, 0, 2W)."""
    return max(0, min(2 * window, window + 2 * d))


def pick(rng, candidates: list[int]) -> int:
    """A uniform choice from candidates in ascending order: candidates[U(len)]."""
    cs = sorted(candidates)
    return cs[rng.randrange(len(cs))]


def countdown(rng, lo: int, hi: int) -> int:
    """Countdown length: lo + U(hi - lo + 1)."""
    return lo + rng.randrange(hi - lo + 1)
