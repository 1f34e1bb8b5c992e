"""unohil export: a run's races and traces for the tools firmware engineers already use."""
from __future__ import annotations

import json
from pathlib import Path

from unohil.harness.cli.exit import Exit
from unohil.harness.errors import UsageError
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.report.perfetto import perfetto_trace, read_trace, run_perfetto
from unohil.harness.report.run_record import load_run
from unohil.harness.report.vcd import run_vcds


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="races as VCD (GTKWave, PulseView), traces as Perfetto/Chrome trace JSON",
                       description="--vcd DIR: one VCD file per race of a results file (unohil run --json); "
                                   "--perfetto FILE: the trace files of a run (unohil run --trace DIR), or those "
                                   "its results file names, as one "
                                   "Chrome trace event file for Perfetto or chrome://tracing.")
    p.add_argument("inputs", nargs="+", metavar="FILE",
                   help="a results file (for --vcd) or trace files, DIR/*.jsonl (for --perfetto; or the results file of a "
                        "run with --trace: the trace files it names)")
    p.add_argument("--vcd", metavar="DIR", help="write DIR/<scenario>-race<N>.vcd for every race")
    p.add_argument("--perfetto", metavar="FILE", help="write the traces as one Chrome trace event JSON file")
    p.set_defaults(func=main)


def main(args) -> int:
    if bool(args.vcd) == bool(args.perfetto):
        raise UsageError("export: give one of --vcd DIR (from a results file) or --perfetto FILE (from traces)")
    if args.vcd:
        if len(args.inputs) != 1:
            raise UsageError("export --vcd: give one results file (unohil run --json FILE)")
        out = check_writable(args.vcd, "--vcd", directory=True)
        written = 0
        for name, text in run_vcds(load_run(args.inputs[0])):
            write_results(out / name, text)
            written += 1
        print(f"{out}: {written} VCD file(s)")
        return Exit.OK
    check_writable(args.perfetto, "--perfetto")
    if len(args.inputs) == 1 and args.inputs[0].endswith(".json"):     # a results file: the traces it names
        doc = run_perfetto(load_run(args.inputs[0]))
    else:
        doc = perfetto_trace([(Path(p).stem, read_trace(p)) for p in args.inputs])
    units = sum(1 for e in doc["traceEvents"] if e.get("name") == "process_name")
    write_results(args.perfetto, json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{args.perfetto}: {len(doc['traceEvents'])} trace events from {units} unit(s)")
    return Exit.OK
