"""CPU instructions per virtual-clock Showdown race through codec, driver and emulator.

    python -m tools.race_instructions [--races N] [--through-runner] [--wire bytes]

Runs one_race (which tests/test_bench.py times too) under `valgrind --tool=callgrind` twice, with N and 2N
races, and reports the difference divided by N: start-up and imports cancel out, so the figure
is repeatable whatever else the machine is doing (the hash seed is fixed, and the cyclic garbage
collector is off while the races run: see races()).

--wire bytes counts it with the unit's frames encoded and decoded on the way (emu://showdown?wire=bytes), as on
a byte link; by default the in-process unit hands them over as objects.

--through-runner counts the same race run by `unohil run` instead: the scenario RUNNER_SCENARIO
repeated N and 2N times, so the scenario runner and the judge count too (the cyclic collector stays on there).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

FAST = {"countdown_min_us": 500_000, "countdown_max_us": 500_000, "beep_interval_us": 2_000_000}


def one_race(d) -> None:
    """One Showdown race on a connected driver: new game, countdown, a press 180 ms after green."""
    d.reset("new_game")
    d.input("load_cards", value=2)
    d.input("timer")
    green = d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 5_000_000, "green")
    d.inject(green.dev_us + 180_000, "paddle_a")
    v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 5_000_000, "verdict")
    assert v.msg.reaction_a_us == 180_000


# The race one_race runs, as a scenario: the same configuration, countdown and press.
RUNNER_SCENARIO = """\
- name: instructions per race
  unit: showdown
  seed: 1
  repeat: {n}
  config: {{countdown_min_us: 500000, countdown_max_us: 500000, beep_interval_us: 2000000}}
  steps:
    - load: 2
    - press: timer
    - press: paddle_a
      at: green + 180000
  expect:
    verdict: {{loser: b, reaction_a_us: 180000}}
"""


def races(n: int, wire: str = "frames") -> None:
    import gc

    from unohil.harness import Driver
    d = Driver.open(f"emu://showdown?clock=virtual&wire={wire}")
    d.apply_config(FAST)
    # No cyclic garbage collection while the races run: a race makes no cycles (its garbage goes
    # by reference counts), and when a collection happens depends on what the imports left on the
    # heap, which would make the count per race follow the import graph instead of the race's code.
    gc.disable()
    for _ in range(n):
        one_race(d)
    d.close()


def instructions(n: int, through_runner: bool = False, wire: str = "frames") -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0")   # the same dict and set layouts in every run
        if through_runner:
            scenario = os.path.join(tmp, "race.yaml")
            with open(scenario, "w") as fh:
                fh.write(RUNNER_SCENARIO.format(n=n))
            command = ["-m", "unohil.harness.cli", "run", "-q", "--format", "lines", "--store", "off",
                       "--device", f"emu://showdown?wire={wire}", scenario]
        else:
            command = ["-m", "tools.race_instructions", "--inner", str(n), "--wire", wire]
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *command],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        with open(out) as fh:
            text = fh.read()
    m = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--races", type=int, default=200)
    ap.add_argument("--through-runner", action="store_true",
                    help="count the race run by `unohil run` (scenario runner and judge included)")
    ap.add_argument("--wire", choices=("frames", "bytes"), default="frames",
                    help="bytes: the unit's frames encoded and decoded on the way, as on a byte link")
    ap.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner is not None:
        races(args.inner, args.wire)
        sys.stdout.flush()
        os._exit(0)     # no interpreter shutdown: its final collection walks every frame the races kept
    one, two = (instructions(n, args.through_runner, args.wire) for n in (args.races, 2 * args.races))
    print(f"{(two - one) / args.races / 1e6:.3f}M instructions per race "
          f"({args.races} vs {2 * args.races} races: {one} and {two} instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
