"""unohil export: a run's races and traces for the tools firmware engineers already use."""
from __future__ import annotations

import json
import re
from pathlib import Path

from unohil.harness.cli.exit import Exit
from unohil.harness.errors import UsageError
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.report.perfetto import perfetto_trace, read_trace
from unohil.harness.report.results_json import read_results
from unohil.harness.report.vcd import race_vcd


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="races as VCD (GTKWave, PulseView), traces as Perfetto/Chrome trace JSON",
                       description="--vcd DIR: one VCD file per race of a results file (unohil run --json); "
                                   "--perfetto FILE: the trace files of a run (unohil run --trace DIR) as one "
                                   "Chrome trace event file for Perfetto or chrome://tracing.")
    p.add_argument("inputs", nargs="+", metavar="FILE",
                   help="a results file (for --vcd) or trace files, DIR/*.jsonl (for --perfetto)")
    p.add_argument("--vcd", metavar="DIR", help="write DIR/<scenario>-race<N>.vcd for every race")
    p.add_argument("--perfetto", metavar="FILE", help="write the traces as one Chrome trace event JSON file")
    p.set_defaults(func=main)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60] or "scenario"


def main(args) -> int:
    if bool(args.vcd) == bool(args.perfetto):
        raise UsageError("export: give one of --vcd DIR (from a results file) or --perfetto FILE (from traces)")
    if args.vcd:
        if len(args.inputs) != 1:
            raise UsageError("export --vcd: give one results file (unohil run --json FILE)")
        out = check_writable(args.vcd, "--vcd", directory=True)
        doc = read_results(args.inputs[0])
        written = 0
        for i, s in enumerate(doc["scenarios"]):
            for race in s.get("results", []):
                if not race.get("events"):
                    continue        # a results file before schema 3 keeps the events of failed races only
                title = f"{s['name']} race {race['index']}"
                write_results(out / f"{i:03d}-{_slug(s['name'])}-race{race['index']}.vcd", race_vcd(race, s["unit"], title))
                written += 1
        print(f"{out}: {written} VCD file(s)")
        return Exit.OK
    check_writable(args.perfetto, "--perfetto")
    traces = [(Path(p).stem, read_trace(p)) for p in args.inputs]
    doc = perfetto_trace(traces)
    write_results(args.perfetto, json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{args.perfetto}: {len(doc['traceEvents'])} trace events from {len(traces)} unit(s)")
    return Exit.OK
