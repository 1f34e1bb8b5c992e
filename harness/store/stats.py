"""The Brunner-Munzel test, for telling whether a latency distribution moved between two runs.

Why this test: latency samples are skewed, heavy-tailed, full of ties (a unit's timer ticks; a virtual clock
gives the same value every time) and a slower build changes their spread as well as their centre. A t-test
assumes normal samples; Mann-Whitney assumes both have the same shape under the null hypothesis, so a change
of spread alone makes it flag. Brunner-Munzel tests whether a value from one run tends to be larger than one
from the other (P(X < Y) + P(X = Y)/2 = 1/2), with mid-ranks for ties and no assumption of equal variances.
Its statistic is referred to Student's t with Satterthwaite's degrees of freedom; the t distribution is
computed here (a regularised incomplete beta function), so no scipy is needed.
"""
from __future__ import annotations

import math

MIN_SAMPLES = 5     # below this on either side nothing is said: the test has no power and its t is unreliable


def midranks(values: list[float]) -> list[float]:
    """Each value's rank among values (1-based), ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def brunner_munzel(x: list[float], y: list[float]) -> tuple[float, float]:
    """(p_hat, p_value): p_hat = P(X < Y) + P(X = Y)/2 (0.5: neither tends larger; above: y tends larger),
    and the two-sided p-value of the hypothesis p_hat = 1/2."""
    n1, n2 = len(x), len(y)
    if n1 < 2 or n2 < 2:
        raise ValueError("Brunner-Munzel needs two samples or more on each side")
    both = midranks(list(x) + list(y))
    r1, r2 = both[:n1], both[n1:]
    own1, own2 = midranks(list(x)), midranks(list(y))
    m1, m2 = sum(r1) / n1, sum(r2) / n2
    p_hat = (m2 - (n2 + 1) / 2) / n1
    v1 = sum((r - o - m1 + (n1 + 1) / 2) ** 2 for r, o in zip(r1, own1)) / (n1 - 1)
    v2 = sum((r - o - m2 + (n2 + 1) / 2) ** 2 for r, o in zip(r2, own2)) / (n2 - 1)
    if v1 == 0 and v2 == 0:
        # no overlap to estimate a variance from: either the two are the same constant (p_hat 1/2: nothing
        # moved) or every value of one side is beyond every value of the other (certain, for these sizes)
        return p_hat, 1.0 if p_hat == 0.5 else 0.0
    se = math.sqrt(n1 * v1 + n2 * v2)
    stat = n1 * n2 * (m2 - m1) / ((n1 + n2) * se)
    df = (n1 * v1 + n2 * v2) ** 2 / ((n1 * v1) ** 2 / (n1 - 1) + (n2 * v2) ** 2 / (n2 - 1))
    return p_hat, 2 * t_sf(abs(stat), df)


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom (t >= 0)."""
    return 0.5 * _betai(df / 2, 0.5, df / (df + t * t))


def _betai(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction, Lentz's method)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-14:
            break
    return h
