"""unohil report: the HTML report of a run, from its results file."""
from __future__ import annotations

import json

from unohil.harness.cli.exit import Exit
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.report.html import bench_html, report_html
from unohil.harness.report.results_json import read_results


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="an HTML report (one self-contained file) from a results file",
                       description="Draw a run's results file (unohil run --json) as one HTML page that opens "
                                   "offline: the summary and units, latency histograms, each scenario's outcome "
                                   "and diff, and a device-time timeline of its races.")
    p.add_argument("results", help="the results file, from unohil run --json FILE (or unohil bench --json FILE: "
                                   "its histograms)")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="the HTML file to write")
    p.set_defaults(func=main)


def _bench(path: str) -> dict | None:
    """The file as a `unohil bench --json` result, or None when it is something else (a run's results)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None             # read_results says what is wrong with it
    return doc if isinstance(doc, dict) and doc.get("bench") and isinstance(doc.get("units"), dict) else None


def main(args) -> int:
    check_writable(args.output, "--output")
    bench = _bench(args.results)
    if bench is not None:
        write_results(args.output, bench_html(bench, source=args.results))
        print(f"{args.output}: bench of {', '.join(bench.get('units', {}))}")
        return Exit.OK
    doc = read_results(args.results)
    write_results(args.output, report_html(doc, source=args.results))
    print(f"{args.output}: {len(doc['scenarios'])} scenario(s), {doc.get('summary', {}).get('races', 0)} race(s)")
    return Exit.OK
