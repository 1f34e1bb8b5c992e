"""The normative integer algorithms of SPEC 6: the reference generator, bursts, fire chance, the
line model, picks and countdowns.

Written once in Python; the emulator runs them and tools/vectors.py tabulates them for other
implementations.

U(n) is a uniform integer in [0, n) from the unit's generator, called as rng.randrange(n): the
reference generator (Pcg32) or, for a unit without the reference_rng capability, any other, such
as a Python random.Random.
"""
from __future__ import annotations

from .catalogue import RNG_STREAM

_M64 = (1 << 64) - 1
_PCG_MULT = 6364136223846793005


class Pcg32:
    """The reference generator of SPEC 6: PCG32 (64-bit LCG state, XSH RR output), seeded from
    rng_seed as pcg32_srandom(rng_seed, RNG_STREAM); U(n) by rejection, exactly as SPEC 6 writes it."""

    __slots__ = ("state", "inc")

    def __init__(self, seed: int = 0, stream: int = RNG_STREAM):
        self.seed(seed, stream)

    def seed(self, seed: int, stream: int = RNG_STREAM) -> None:
        self.inc = ((stream << 1) | 1) & _M64
        self.state = 0
        self.next32()
        self.state = (self.state + seed) & _M64
        self.next32()

    def next32(self) -> int:
        old = self.state
        self.state = (old * _PCG_MULT + self.inc) & _M64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << (-rot & 31))) & 0xFFFFFFFF

    def getstate(self) -> tuple[int, int]:
        return self.state, self.inc

    def setstate(self, state: tuple[int, int]) -> None:
        self.state, self.inc = state

    def randrange(self, n: int) -> int:
        """U(n): one uniform integer in [0, n), n in [1, 2^32], without modulo bias."""
        if not 1 <= n <= 1 << 32:
            raise ValueError(f"U(n) needs 1 <= n <= 2^32, not {n}")
        threshold = (1 << 32) % n
        while True:
            x = self.next32()
            if x >= threshold:
                return x % n


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
