"""Card launcher (SPEC.md 6.4, 6.5, 9): the streak and the fire chance (LA-2), burst sizes, and every press
replaying the reference draws exactly, with their statistics."""
from __future__ import annotations

from collections import Counter

import pytest

from unohil.protocol.algorithms import burst_total, burst_weights

from launcher_unit import BUTTON, DOOR, POWER, RELEASE, Unit, press_run, reference_draws


def test_the_chance_rises_with_each_empty_press_and_the_sixth_always_fires():
    u = Unit(seed=13, fire_base_permille=250, fire_step_permille=150, card_capacity=254)
    u.load(254)
    got = press_run(u, 100)                        # the magazine lasts: every press is a trial
    streaks = [s for s, _c, _p, _f in got]
    chances = [c for _s, c, _p, _f in got]
    assert all(c == min(1000, 250 + 150 * s) for s, c in zip(streaks, chances))
    assert max(streaks) <= 5 and all(f > 0 for s, _c, _p, f in got if s == 5)
    for (s0, _, _, f0), (s1, _, _, _) in zip(got, got[1:]):
        assert s1 == (0 if f0 else s0 + 1)
    assert got == reference_draws(13, [254], 100) and got[-1][3] > 0


def test_streak_restarts_when_the_door_closes_and_at_power_on():
    u = Unit(seed=10, fire_base_permille=0, fire_step_permille=0)
    u.load(5)
    for _ in range(3):
        u.input(BUTTON)
    u.input(DOOR)
    u.input(DOOR, RELEASE)
    u.input(BUTTON)
    u.input(BUTTON)
    u.input(POWER, RELEASE)
    u.input(POWER)
    u.input(BUTTON)
    assert [f.msg.empty_streak for f in u.p.events("LA_DING")] == [0, 1, 2, 0, 1, 0]


def test_streak_saturates_at_255_and_nothing_ever_fires_at_chance_zero():
    u = Unit(seed=11, fire_base_permille=0, fire_step_permille=0)
    u.load(5)
    for _ in range(260):
        u.input(BUTTON)
    dings = u.p.events("LA_DING")
    assert [f.msg.empty_streak for f in dings][-6:] == [254, 255, 255, 255, 255, 255]
    assert not u.p.events("LA_CARD") and all(f.msg.chance_permille == 0 for f in dings)


def test_an_empty_magazine_leaves_the_streak_alone():
    """LA-3: no draw, no trial: with the magazine empty the streak (0 after the burst that emptied
    it) stays where it was, and the chance reported is the chance of that streak."""
    u = Unit(seed=12, fire_base_permille=1000, fire_step_permille=100, burst_min=2, burst_mode=2, burst_max=2)
    u.load(2)
    got = press_run(u, 4)
    assert got == [(0, 1000, 2, 2), (0, 1000, 0, 0), (0, 1000, 0, 0), (0, 1000, 0, 0)]
    assert u.status().cards == 0


def test_fire_chance_statistics():
    """The fraction of presses that fire at each streak matches the configured chance
    (binomial bound, 4 sd; deterministic with the fixed seed)."""
    u = Unit(seed=13, fire_base_permille=100, fire_step_permille=200, burst_min=1, burst_mode=1, burst_max=1,
             motor_us=0, card_interval_us=1000, card_capacity=254)
    tried: Counter = Counter()
    fired: Counter = Counter()
    got = []
    while len(got) < 6000:
        u.load(254 - u.status().cards)
        got += press_run(u, 200)
    for s, c, _p, f in got:
        tried[s] += 1
        fired[s] += f > 0
    rates = []
    for s in sorted(tried):
        n, p = tried[s], min(1000, 100 + 200 * s) / 1000
        rates.append(fired[s] / n)
        assert abs(fired[s] - n * p) <= 4 * (n * p * (1 - p)) ** 0.5 + 1e-9, (s, n, fired[s], p)
    assert rates == sorted(rates) and rates[-1] == 1.0 and len(rates) == 6


# ---- burst sizes (6.5) ----

@pytest.mark.parametrize("lo,mode,hi", [(1, 4, 12), (3, 3, 8), (2, 9, 10)])
def test_burst_sizes_follow_the_triangular_weights(lo, mode, hi):
    u = Unit(seed=100 + lo, fire_base_permille=1000, burst_min=lo, burst_mode=mode, burst_max=hi,
             motor_us=0, card_interval_us=1000, card_capacity=254)
    sizes: list[int] = []
    while len(sizes) < 3000:
        u.load(254 - u.status().cards)
        sizes += [p for _s, _c, p, _f in press_run(u, (254 - 12) // hi)]
    counts = Counter(sizes)
    weights = burst_weights(lo, mode, hi)
    total = burst_total(lo, mode, hi)
    n = len(sizes)
    chi2 = sum((counts[k] - n * w / total) ** 2 / (n * w / total) for k, w in zip(range(lo, hi + 1), weights))
    critical = {11: 31.26, 5: 20.52, 8: 26.12}[hi - lo]          # p = 0.001
    assert chi2 < critical, (counts, chi2)
    assert set(counts) <= set(range(lo, hi + 1))
    mean = sum(k * w for k, w in zip(range(lo, hi + 1), weights)) / total
    assert abs(sum(sizes) / n - mean) < 0.1


def test_default_burst_shape():
    w = burst_weights(1, 4, 12)
    assert w == [9, 18, 27, 36, 32, 28, 24, 20, 16, 12, 8, 4] and burst_total(1, 4, 12) == 234


# ---- the draws replay the reference exactly ----


def test_every_press_replays_the_reference_draws():
    u = Unit(seed=2024, motor_us=0, card_interval_us=1000)
    u.load(60)
    assert press_run(u, 200) == reference_draws(2024, [60], 200)
