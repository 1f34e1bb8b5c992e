"""At least 100 complete games of each kind on the virtual clock, seeded, every prediction and invariant
holding: the Showdown with and without its landing sensor, with the game's variant rule and without,
every kind with the reference generator (every draw predicted) and with rng=python (invariants only).
Each game runs to 500 points on one unit without a reset between its rounds.

`pytest -s tests/test_games_slow.py` prints each configuration's figures.
"""
from __future__ import annotations

import re
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


def test_a_game_of_each_kind_on_a_real_clock_pty(tmp_path):
    """`unohil play KIND --compressed` against a served unit on a pty, its clock real: each kind completes a
    game that passes and prints its statistics with their tolerances. The three play at once, each on its own
    unit (about 2 minutes, the Flash's 500-1200 turns the longest)."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    runs = {}
    try:
        for kind in sorted(RUNS):
            emu = subprocess.Popen([sys.executable, "-m", "unohil.emulator", kind, "--pty", "--seed", "5"], cwd=root,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            path = emu.stdout.readline().strip()
            assert path.startswith("/dev/"), emu.stderr.read() if emu.poll() is not None else path
            play = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "play", kind, "--device", path,
                                     "--compressed", "--players", "3", "--format", "lines",
                                     "--json", str(tmp_path / f"{kind}.json")], cwd=root, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            runs[kind] = (emu, play)
        for kind, (emu, play) in runs.items():
            out, _ = play.communicate(timeout=1200)
            assert play.returncode == 0, out
            doc = json.loads((tmp_path / f"{kind}.json").read_text())
            (game,) = doc["games"]
            assert game["status"] == "pass" and max(game["scores"]) >= 500, game
            stats = [x for x in out.splitlines() if re.search(r": .+ \(expected .+ ± .+, n \d+\)", x)]
            assert stats, out
            print(f"\n{kind} on a real-clock pty: {game['rounds']} rounds, {game['turns']} turns in {doc['duration_s']:.0f} s\n"
                  + "\n".join(stats))
    finally:
        for emu, play in runs.values():
            for proc in (play, emu):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
