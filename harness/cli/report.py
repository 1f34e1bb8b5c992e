"""unohil report: the HTML report of a run, from its results file."""
from __future__ import annotations

import json

from unohil.harness.cli.exit import Exit
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.report.html import bench_html, report_html
from unohil.harness.report.results_json import read_results
from unohil.harness.report.run_record import load_run


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="an HTML report (one self-contained file) from a results file",
                       description="Draw a run's results file (unohil run --json) as one HTML page that opens "
                                   "offline: the summary and units, latency histograms, each scenario's outcome "
                                   "and diff, and a device-time timeline of its races.")
    p.add_argument("results", nargs="*",
                   help="the results file, from unohil run --json FILE (or unohil bench --json FILE: its histograms); "
                        "several: one page of them all, oldest first: what changed from each to the next (unohil "
                        "compare) and each figure's trend")
    p.add_argument("--store", metavar="WHERE", help="with --since: the runs of this results store")
    p.add_argument("--since", metavar="DATE", help="the stored runs from this date on (YYYY-MM-DD, UTC), on one page")
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
    if args.since or len(args.results) != 1:
        return _many(args)
    args.results = args.results[0]
    bench = _bench(args.results)
    if bench is not None:
        write_results(args.output, bench_html(bench, source=args.results))
        print(f"{args.output}: bench of {', '.join(bench.get('units', {}))}")
        return Exit.OK
    run = load_run(args.results)
    write_results(args.output, report_html(run, source=args.results))
    print(f"{args.output}: {len(run.scenarios)} scenario(s), {sum(r.race_count() for r in run.scenarios)} race(s)")
    return Exit.OK


def _many(args) -> int:
    from unohil.harness.errors import UsageError
    from unohil.harness.report.multi import multi_html
    if args.since:
        runs = _stored(args)
    else:
        runs = [(path, read_results(path)) for path in args.results]
    if len(runs) < 2:
        raise UsageError("report: give one results file, or two or more (or --store and --since) for a page of "
                         f"several runs; {len(runs)} found")
    write_results(args.output, multi_html(runs))
    print(f"{args.output}: {len(runs)} runs")
    return Exit.OK


def _stored(args) -> list[tuple[str, dict]]:
    from unohil.harness.cli.history import _date, open_configured
    from unohil.harness.store import history
    from unohil.harness.store.record import stored_run
    import argparse
    from unohil.harness.errors import UsageError
    try:
        since = _date(args.since)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--since: {exc}") from None
    with open_configured(args.store) as store:
        found = history.runs(store, history.Filter(since=since), limit=1000)
        return [(f"run {r['run']}", stored_run(store, r["run"])) for r in reversed(found)]
