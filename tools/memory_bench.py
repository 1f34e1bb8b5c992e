"""How much memory a long run costs per race: `unohil run --json --junit` on the virtual clock.

    python -m tools.memory_bench [--races 20000] [--base 5000] [--per-scenario 1000] [--python .venv/bin/python]

Runs the same command twice, each a process of its own: once with --base races and once with
--races, split into scenarios of --per-scenario races each (sweeps of a clean win for A). Each process
reports its own peak RSS (ru_maxrss, which includes writing the results files at the end); the figure
is the growth per race between the two, in KB (the driver's bounded history of recent frames fills in
the first ~4,500 races: give a --base past that). It then loads the larger run's JSON as `unohil report`
does and checks the JUnit parses. Exits 1 when the growth is over the issue 31 target (--limit-kb, 1).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree as ET

# a clean win for A, swept: one line of YAML in flow style
SCENARIO = ('- {{name: "clean win {i}", unit: showdown, seed: 5, sweep: {{n: {races}}}, '
            'config: {{countdown_min_us: 500000, countdown_max_us: 500000}}, '
            'steps: [{{load: 2}}, {{press: timer, at: start + 1000}}, {{press: paddle_a, at: green + 180000}}], '
            'expect: {{verdict: {{loser: b, reason: first_press}}}}}}\n')

CHILD = """
import resource, sys
from unohil.harness.cli.app import main
status = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, status, file=sys.stderr)
"""


def scenario_file(folder: Path, races: int, per: int) -> Path:
    path = folder / f"races-{races}.yaml"
    counts = [per] * (races // per) + ([races % per] if races % per else [])
    path.write_text("".join(SCENARIO.format(i=i, races=list(range(n))) for i, n in enumerate(counts)))
    return path


def peak_kb(python: str, folder: Path, races: int, per: int) -> tuple[int, float, Path, Path]:
    out_json, out_xml = folder / f"r-{races}.json", folder / f"r-{races}.xml"
    t0 = time.perf_counter()
    r = subprocess.run([python, "-c", CHILD, "run", str(scenario_file(folder, races, per)), "-q",
                        "--json", str(out_json), "--junit", str(out_xml)], capture_output=True, text=True)
    rss, status = r.stderr.split()[-2:]
    if status != "0":
        sys.exit(f"the run of {races} races ended {status}: {r.stderr[-2000:]}")
    return int(rss), time.perf_counter() - t0, out_json, out_xml


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--races", type=int, default=20_000)
    ap.add_argument("--base", type=int, default=5_000)
    ap.add_argument("--per-scenario", type=int, default=1_000)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--limit-kb", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base, base_s, _, _ = peak_kb(args.python, folder, args.base, args.per_scenario)
        big, big_s, out_json, out_xml = peak_kb(args.python, folder, args.races, args.per_scenario)
        from unohil.harness.report.results_json import read_results
        doc = read_results(out_json)
        races = sum(len(s["results"]) for s in doc["scenarios"])
        tests = int(ET.parse(out_xml).getroot().get("tests"))
        per_race = (big - base) / (args.races - args.base)
        print(f"peak RSS {base / 1024:.0f} MB at {args.base} races ({base_s:.1f} s), "
              f"{big / 1024:.0f} MB at {args.races} races ({big_s:.1f} s)")
        print(f"growth per race: {per_race:.2f} KB (target {args.limit_kb:g} KB)")
        print(f"the JSON loads as a report's input: {races} races in {len(doc['scenarios'])} scenarios, "
              f"{out_json.stat().st_size / 2**20:.1f} MiB; the JUnit parses: {tests} test cases")
        json.dumps(doc["summary"])
    return 0 if per_race <= args.limit_kb else 1


if __name__ == "__main__":
    sys.exit(main())
