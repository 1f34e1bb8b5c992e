"""unohil run: scenarios against devices (the built-in emulator by default), with reports."""
from __future__ import annotations

import time

from rich.console import Console

from harness.cli.exit import Exit
from harness.errors import UsageError
from harness.outcome import Outcome, tally
from harness.report.console import FORMATS, PROGRESS_EVERY_S, LiveReport, choose_format, print_summary
from harness.report.files import check_writable, write_atomic
from harness.report.junit import junit_xml
from harness.report.results_json import results_json, write_json
from harness.run.parallel import Rack, Workers
from harness.run.results import ScenarioResult
from harness.run.runner import Runner
from harness.scenarios.library import library_paths
from harness.scenarios.load import load_paths
from harness.scenarios.selection import matcher

def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run scenarios")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="scenario files or directories (default: the scenario library, fixtures/scenarios)")
    p.add_argument("--device", action="append", metavar="URL",
                   help="device URL (repeatable); default: the built-in emulator on the virtual clock")
    p.add_argument("--json", metavar="FILE", help="write machine-readable results")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--trace", metavar="DIR", help="write a JSON Lines trace per device")
    p.add_argument("-k", metavar="EXPR", help="only scenarios whose name/file/tags match (and, or, not)")
    p.add_argument("--host-timed", action="store_true",
                   help="press with host timing (INPUT) even if the device has test mode")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no results table or per-scenario lines: only the link health, the failures and the totals")
    _add_format_arguments(p)
    p.set_defaults(func=main)


def _add_format_arguments(p) -> None:
    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="rich: a progress bar, then a results table; lines: one line per scenario as it finishes "
                        "and a progress line at a steady pace (for CI logs and pipes); auto (default): rich on a "
                        "terminal, lines anywhere else")
    p.add_argument("--progress-every", type=float, default=PROGRESS_EVERY_S, metavar="SECONDS",
                   help=f"lines format: a progress line at least this often (default {PROGRESS_EVERY_S:g}; "
                        "0: after every race)")


def main(args) -> int:
    console = Console(highlight=False)
    fmt = choose_format(args.format, console)
    started = time.time()
    if args.json:
        check_writable(args.json, "--json")
    if args.junit:
        check_writable(args.junit, "--junit")
    if args.trace:
        check_writable(args.trace, "--trace", directory=True)
    scenarios = load_paths(args.paths or library_paths())
    if args.k:
        pick = matcher(args.k)
        scenarios = [s for s in scenarios if pick(s)]
    if not scenarios:
        raise UsageError("no scenarios selected")
    rack = Rack.open(args.device or [], {s.unit for s in scenarios}, args.trace)
    by_kind = rack.by_kind()
    if args.device and not any(sc.unit in by_kind for sc in scenarios):
        have = "; ".join(f"{d.url} is a {d.kind} unit" for d in rack.drivers)
        rack.close()
        raise UsageError(f"{have}: none of the selected scenarios runs on it (they need "
                         f"{' or '.join(sorted({s.unit for s in scenarios}))})")
    try:
        results = _run(console, fmt, args, scenarios, by_kind)
    finally:
        health, devices = rack.health(), rack.describe()
        rack.close()
    print_summary(console, fmt, results, health, quiet=args.quiet, seconds=time.time() - started)
    counts = tally(r.status for r in results)
    if args.json:
        write_json(args.json, results_json(results, health, devices, started))
    if args.junit:
        write_atomic(args.junit, junit_xml("unohil", [r.record() for r in results]))
    if any(r.status is Outcome.ERROR for r in results):
        return Exit.USAGE       # a scenario that cannot run as written: the user's to fix, like a bad file
    return Exit.FAILED if counts["failed"] else Exit.OK


def _run(console: Console, fmt: str, args, scenarios, by_kind) -> list[ScenarioResult]:
    live = LiveReport(console, fmt, races=sum(len(s.races) for s in scenarios), scenarios=len(scenarios),
                      quiet=args.quiet, every_s=args.progress_every)
    with live:
        runners = {kind: [Runner(d, host_timed=args.host_timed, progress=live.race_done) for d in ds]
                   for kind, ds in by_kind.items()}

        def shown(res: ScenarioResult) -> ScenarioResult:
            live.scenario_done(res)
            return res

        def work(runner: Runner, sc) -> ScenarioResult:
            live.scenario_started(sc)
            return shown(runner.run(sc))

        results: list[ScenarioResult] = Workers(runners, lambda sc: sc.unit, lambda r: r.d.url).run(
            scenarios, work,
            lambda sc: shown(ScenarioResult(sc, "-", status=Outcome.SKIP, error=f"no {sc.unit} device given")),
            lambda sc, exc: shown(ScenarioResult(sc, "-", status=Outcome.ERROR, error=f"{type(exc).__name__}: {exc}")))
        return results
