"""At least 100 complete games of each kind on the virtual clock, seeded, every prediction and invariant
holding: the Showdown with and without its landing sensor, with the game's variant rule and without,
every kind with the reference generator (every draw predicted) and with rng=python (invariants only).
Each game runs to 500 points on one unit without a reset between its rounds.

`pytest -s tests/test_games_slow.py` prints each configuration's figures.
"""
from __future__ import annotations

import time

import pytest

from unohil.harness import Driver
from unohil.harness.games.play import play_games

pytestmark = pytest.mark.slow

#: kind -> [(url, games, players, variant rule)]: 100 games of each kind
RUNS = {
    "showdown": [("emu://showdown", 25, 3, False), ("emu://showdown?landing_sensor=0", 25, 4, True),
                 ("emu://showdown?rng=python", 25, 2, True),
                 ("emu://showdown?rng=python&landing_sensor=0", 25, 5, False)],
    "flash": [("emu://flash", 50, 2, False), ("emu://flash?rng=python", 50, 5, False)],
    "launcher": [("emu://launcher", 50, 4, False), ("emu://launcher?rng=python", 50, 2, False)],
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_hundred_games(kind):
    games = 0
    for i, (url, n, players, variant) in enumerate(RUNS[kind]):
        t0 = time.perf_counter()
        with Driver.open(url) as d:
            kw = {"variant": variant} if kind == "showdown" else {}
            results, totals = play_games(kind, d, n, players, seed=100 + i, **kw)
        wall = time.perf_counter() - t0
        failures = [r.failure for r in results if not r.passed]
        assert failures == [], failures[:3]
        assert all(max(r.summary["scores"]) >= 500 for r in results)
        flagged = [e for e in totals.expectations() if e["flagged"]]
        assert flagged == [], flagged
        games += len(results)
        turns = sum(r.summary["turns"] for r in results)
        device_h = sum(r.device_us for r in results) / 3.6e9
        print(f"\n{url} x{players} players{' variant' if variant else ''}: {len(results)} games, {turns} turns, "
              f"{device_h:.1f} device hours in {wall:.1f} s; {dict(totals.counts)}")
    assert games >= 100
