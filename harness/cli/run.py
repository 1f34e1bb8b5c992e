"""unohil run: scenarios against devices (the built-in emulator by default), with reports."""
from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.cli.exit import Exit
from harness.errors import UsageError
from harness.outcome import Outcome, tally
from harness.report.console import health_line, print_budgets, print_failures, scenario_table
from harness.report.files import check_writable, write_atomic
from harness.report.junit import junit_xml
from harness.report.results_json import results_json, write_json
from harness.run.parallel import Rack, Workers
from harness.run.results import ScenarioResult
from harness.run.runner import Runner
from harness.scenarios.library import library_paths
from harness.scenarios.load import load_paths
from harness.scenarios.selection import matcher
from harness.session.outage import DEFAULT_BUDGET_US, Outage, parse_budget

def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run scenarios")
    p.add_argument("paths", nargs="*", help="scenario files or directories (default: the scenario library, fixtures/scenarios)")
    p.add_argument("--device", action="append", metavar="URL",
                   help="device URL (repeatable); default: the built-in emulator on the virtual clock")
    p.add_argument("--json", metavar="FILE", help="write machine-readable results")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--trace", metavar="DIR", help="write a JSON Lines trace per device")
    p.add_argument("-k", metavar="EXPR", help="only scenarios whose name/file/tags match (and, or, not)")
    p.add_argument("--host-timed", action="store_true",
                   help="press with host timing (INPUT) even if the device has test mode")
    p.add_argument("--outage-budget", metavar="TIME", type=_budget, default=DEFAULT_BUDGET_US,
                   help="how long a lost link is waited for (tried again with growing waits) before the races "
                        f"after it become link errors, e.g. 30s, 500ms, 2min (default {DEFAULT_BUDGET_US // 10**6}s)")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=main)


def _budget(text: str) -> int:
    import argparse
    try:
        return parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(args) -> int:
    console = Console(highlight=False)
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
        results = _run(console, args, scenarios, by_kind)
    finally:
        health, devices = rack.health(), rack.describe()
        rack.close()
    if not args.quiet:
        console.print(scenario_table(results))
    console.print(health_line(health))          # every run says what the link did, -q or not
    print_failures(console, results)
    print_budgets(console, results)
    counts = tally(r.status for r in results)
    console.print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped; "
                  f"{sum(len(r.races) for r in results)} races in {time.time() - started:.2f} s")
    if args.json:
        write_json(args.json, results_json(results, health, devices, started))
    if args.junit:
        write_atomic(args.junit, junit_xml("unohil", [r.record() for r in results]))
    if any(r.status is Outcome.ERROR for r in results):
        return Exit.USAGE       # a scenario that cannot run as written: the user's to fix, like a bad file
    return Exit.FAILED if counts["failed"] else Exit.OK


def _run(console: Console, args, scenarios, by_kind) -> list[ScenarioResult]:
    total_races = sum(len(s.races) for s in scenarios)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True, disable=args.quiet or not console.is_terminal) as progress:
        task = progress.add_task("races", total=total_races)
        outage = Outage(args.outage_budget, say=lambda text: console.print(text, markup=False, highlight=False))
        runners = {kind: [Runner(d, host_timed=args.host_timed, progress=lambda _sc, _i: progress.advance(task),
                                 outage=outage) for d in ds] for kind, ds in by_kind.items()}

        def work(runner: Runner, sc) -> ScenarioResult:
            progress.update(task, description=sc.name[:40])
            return runner.run(sc)

        results: list[ScenarioResult] = Workers(runners, lambda sc: sc.unit, lambda r: r.d.url).run(
            scenarios, work,
            lambda sc: ScenarioResult(sc, "-", status=Outcome.SKIP, error=f"no {sc.unit} device given"),
            lambda sc, exc: ScenarioResult(sc, "-", status=Outcome.ERROR, error=f"{type(exc).__name__}: {exc}"))
        return results
