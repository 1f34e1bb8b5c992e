"""What uno-hil costs at start-up: the pytest plugin in a session that does not use it, and `unohil --version`
and `unohil --help`.

    python -m tools.startup_bench [--runs 10] [--python .venv/bin/python] [--as-is]

Each round runs, in turn: an unrelated one-test pytest session in a temporary folder with the plugin and
with `-p no:unohil`, `unohil --version` and `unohil --help` (the venv's console script), each a process of
its own, timed from spawn to exit. It prints each command's median, min and max over the rounds, the
plugin's cost (the difference of the two sessions' medians, and the median of the rounds' differences), and
exits 1 when a goal is missed: the plugin at most 20 ms, --version and --help at most 0.15 s each.

A warm-up round comes first and is not counted. The children run without PYTHONDONTWRITEBYTECODE (a user's
Python writes bytecode, and uno-hil keeps the catalogue's checked data beside it): --as-is keeps the
environment as it is, to see the cost where nothing is written.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS_S = {"plugin": 0.020, "--version": 0.15, "--help": 0.15}


def commands(python: Path, folder: Path) -> dict[str, list[str]]:
    script = python.parent / "unohil"
    unohil = [str(script)] if script.exists() else [str(python), "-m", "unohil.harness.cli"]
    session = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)]
    return {
        "pytest, plugin loaded": session,
        "pytest -p no:unohil": [*session, "-p", "no:unohil"],
        "--version": [*unohil, "--version"],
        "--help": [*unohil, "--help"],
    }


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """The command's wall-clock time and its CPU time (user + system), in seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}")
    return took, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed rounds (default 10)")
    ap.add_argument("--python", type=Path, default=Path(sys.executable),
                    help="the venv's python, uno-hil installed in it (default: this one)")
    ap.add_argument("--as-is", action="store_true", help="keep PYTHONDONTWRITEBYTECODE if it is set")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if not args.as_is:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        folder = Path(tmp)
        (folder / "test_one.py").write_text("def test_one():\n    assert True\n")
        cmds = commands(args.python, folder)
        wall: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        for round_ in range(args.runs + 1):
            # every other round in reverse order, so a machine that slows or speeds up within a round
            # favours no command
            for name, command in (list if round_ % 2 else reversed)(list(cmds.items())):
                took, used = timed(command, env, folder)
                if round_:              # round 0 warms up: bytecode and the catalogue's data written
                    wall[name].append(took)
                    cpu[name].append(used)
    return report(wall, cpu)


def report(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> int:
    med = {name: statistics.median(ts) for name, ts in wall.items()}
    for name, ts in wall.items():
        print(f"{name:22} median {med[name] * 1000:6.1f} ms  min {min(ts) * 1000:6.1f}  max {max(ts) * 1000:6.1f}"
              f"  CPU median {statistics.median(cpu[name]) * 1000:6.1f} ms  ({len(ts)} runs)")
    on, off = "pytest, plugin loaded", "pytest -p no:unohil"
    plugin = med[on] - med[off]
    paired = statistics.median(a - b for a, b in zip(wall[on], wall[off]))
    cpu_cost = statistics.median(cpu[on]) - statistics.median(cpu[off])
    print(f"plugin's cost: {plugin * 1000:+.1f} ms (difference of the medians; median of the rounds' "
          f"differences {paired * 1000:+.1f} ms; CPU time {cpu_cost * 1000:+.1f} ms)")
    figures = {"plugin": plugin, "--version": med["--version"], "--help": med["--help"]}
    missed = [f"{name} {figures[name] * 1000:.1f} ms > {goal * 1000:.0f} ms" for name, goal in GOALS_S.items()
              if figures[name] > goal]
    print("goals met" if not missed else "goals missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
