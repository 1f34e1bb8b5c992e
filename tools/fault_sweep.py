"""Correct emulated units behind faulty lines: how often a race is judged wrongly.

    python -m tools.fault_sweep [--seeds 0..39] [--levels 1e-2,3e-2] [--faults corrupt,drop,mixed]
                                [--libraries showdown,flash,launcher] [-j 2]

Runs each scenario library of fixtures/scenarios/ against its emulated unit (which is right by
construction) behind each fault kind at each level, once per fault seed, on the virtual clock, with
the driver and runner `unohil run` uses; then counts races by outcome. A right unit may see its races
pass, end as link errors or resets (the line's doing), never fail or err: every race that did is
printed with its reproduction, `unohil run fixtures/scenarios/LIB --device URL` (the whole library:
the faults fall on the frames in the order the run sends them, so a subset of it sees other faults).
Exit status 1 if any race failed or erred.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from unohil.protocol import catalogue as cat

LIBRARIES = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
KINDS = tuple(cat.UNITS)        # the libraries: one per unit kind, named as the kind
FAULTS = {
    "corrupt": "corrupt={p}",
    "drop": "drop={p}",
    "mixed": "corrupt={p},dropframe={p},dup={p},delay=50us..2ms,garbage={p}",
}
WRONG = ("fail", "error")       # what a right unit must never get


@dataclass(frozen=True)
class Job:
    library: str
    fault: str
    level: str
    seed: int

    @property
    def url(self) -> str:
        return f"emu://{self.library}?faults={FAULTS[self.fault].format(p=self.level)},seed={self.seed}"

    @property
    def command(self) -> str:
        return f"unohil run fixtures/scenarios/{self.library} --device '{self.url}'"


@dataclass
class Tally:
    races: Counter = field(default_factory=Counter)     # outcome -> races
    groups: Counter = field(default_factory=Counter)    # (fault, level, outcome) -> races
    wrong: list = field(default_factory=list)           # (command, scenario, race, status, why)
    unopened: list = field(default_factory=list)        # (command, why): the handshake itself failed

    def add(self, other: "Tally") -> None:
        self.races.update(other.races)
        self.groups.update(other.groups)
        self.wrong += other.wrong
        self.unopened += other.unopened


def run_job(job: Job) -> Tally:
    """One library on one faulty unit, as `unohil run` plays it."""
    from unohil.harness.errors import HarnessError
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.load import load_paths
    from unohil.harness.session.driver import Driver

    tally = Tally()
    scenarios = load_paths([str(LIBRARIES / job.library)])
    try:
        d = Driver.open(job.url)
    except HarnessError as exc:
        tally.unopened.append((job.command, str(exc)))
        return tally
    with d:
        runner = Runner(d)
        for sc in scenarios:
            try:
                res = runner.run(sc)
            except Exception as exc:        # a crash of the harness is an error, not a reason to stop the sweep
                tally.races["error"] += len(sc.races)
                tally.wrong.append((job.command, sc.name, "-", "error", f"{type(exc).__name__}: {exc}"))
                continue
            for race in res.races:
                status = str(race.status)
                tally.races[status] += 1
                tally.groups[job.fault, job.level, status] += 1
                if status in WRONG:
                    why = "; ".join(race.failures) or race.error or ""
                    tally.wrong.append((job.command, sc.name, race.index, status, why))
    return tally


def jobs(libraries, faults, levels, seeds) -> list[Job]:
    return [Job(lib, fault, level, seed) for seed in seeds for lib in libraries for fault in faults
            for level in levels]


def sweep(todo: list[Job], processes: int = 1, on_done=None) -> Tally:
    total = Tally()
    if processes <= 1:
        for job in todo:
            total.add(run_job(job))
            if on_done is not None:
                on_done(job, total)
        return total
    with ProcessPoolExecutor(processes) as pool:
        for job, t in zip(todo, pool.map(run_job, todo)):
            total.add(t)
            if on_done is not None:
                on_done(job, total)
    return total


def by_group(t: Tally) -> list[str]:
    """One line per fault kind and level: its races by outcome."""
    keys = sorted({(fault, level) for fault, level, _ in t.groups})
    return [f"{fault} {level}: " + ", ".join(f"{t.groups[fault, level, o]} {o}" for o in
                                              ("pass", "fail", "link-error", "reset", "error"))
            for fault, level in keys]


def summary(t: Tally) -> str:
    r = t.races
    n = sum(r.values())
    return (f"{n} races: {r['pass']} passed, {r['fail']} failed, {r['link-error']} link_error, {r['reset']} reset, "
            f"{r['error']} error; {len(t.unopened)} unit(s) not opened (handshake failed)")


def _seeds(text: str) -> list[int]:
    if ".." in text:
        a, b = text.split("..")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fault_sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0..9", type=_seeds, help="fault seeds: A..B or a,b,c (default 0..9)")
    ap.add_argument("--levels", default="1e-2,3e-2", help="fault probabilities, comma-separated")
    ap.add_argument("--faults", default=",".join(FAULTS), help=f"fault kinds among {', '.join(FAULTS)}")
    ap.add_argument("--libraries", default=",".join(KINDS), help=f"libraries among {', '.join(KINDS)}")
    ap.add_argument("-j", "--processes", type=int, default=2)
    args = ap.parse_args(argv)
    todo = jobs(args.libraries.split(","), args.faults.split(","), args.levels.split(","), args.seeds)
    done = [0]

    def progress(job: Job, total: Tally) -> None:
        for command, scenario, race, status, why in total.wrong[len(shown):]:
            shown.append(command)
            print(f"{status}: {command}  (scenario {scenario!r}, race {race}): {why}", flush=True)
        done[0] += 1
        if done[0] % 20 == 0 or done[0] == len(todo):
            print(f"{done[0]}/{len(todo)} runs: {summary(total)}", file=sys.stderr, flush=True)
    shown: list = []
    total = sweep(todo, args.processes, progress)
    by_cause = Counter(re.sub(r"\(seq \d+\)", "(seq N)", why.split(": ", 1)[-1]).split(" within ")[0]
                       for _, why in total.unopened)
    for why, n in by_cause.most_common():
        print(f"not opened x{n}: {why}")
    for line in by_group(total):
        print(line)
    print(summary(total))
    return 1 if total.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
