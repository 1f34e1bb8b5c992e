"""unohil conform: the firmware acceptance run on one device, with its reports."""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.text import Text

from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, StopRequest, exit_for
from unohil.harness.conform import CheckResult, Conformance, coverage
from unohil.harness.conform.rig import rig_checks
from unohil.harness.errors import ConformError, ScenarioError
from unohil.harness.cli.firmware import add_firmware_argument, attach_consoles, unit_opener
from unohil.harness.links import open_link
from unohil.harness.outcome import Outcome, counts_text, tally
from unohil.harness.report.console import output_console, conform_table, coverage_table, print_table
from unohil.harness.report.files import check_outputs, write_outputs
from unohil.harness.report.junit import device_from_identity, junit_xml
from unohil.harness.report.results_json import plain
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths
from unohil.harness.scenarios.selection import matcher
from unohil.harness.store.config import add_store_argument, configured, record_into
from unohil.harness.text import printable

MARK = {Outcome.PASS: ("pass", "green"), Outcome.FAIL: ("FAIL", "red"), Outcome.SKIP: ("skip", "dim"),
        Outcome.ERROR: ("ERROR", "red"), Outcome.LINK_ERROR: ("LINK", "yellow"), Outcome.RESET: ("RESET", "yellow"),
        Outcome.INTERRUPTED: ("INTERRUPTED", "yellow")}


def add_parser(sub) -> None:
    p = sub.add_parser("conform", help="firmware acceptance: protocol conformance by SPEC section, then the "
                                       "scenario library of the unit's kind",
                       description="Firmware acceptance: protocol conformance by SPEC section, then the scenario "
                                   "library of the unit's kind. Verdict: CONFORMS (exit 0), PARTIAL (exit 0: nothing "
                                   "failed, some went unchecked), DOES NOT CONFORM (exit 1), NOT JUDGED (exit 3: the "
                                   "link cut checks short, each listed; neither a pass nor a fail of the unit). Exit 2: "
                                   "usage, connection errors, the link lost during the run, a results file not "
                                   "written.")
    p.add_argument("--device", required=True, metavar="URL",
                   help="the one unit to judge: a serial port, socket://HOST:PORT, rfc2217://..., usb://..., emu://KIND")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (one test suite per SPEC section)")
    p.add_argument("--scenarios", nargs="+", metavar="PATH",
                   help="scenario files or directories (default: the unit kind's part of the scenario library that "
                        "ships with uno-hil; `unohil library` says where it is)")
    p.add_argument("-k", metavar="EXPR", help="only scenarios whose name/file/tags match")
    p.add_argument("--no-scenarios", action="store_true", help="protocol checks only")
    p.add_argument("--quick", action="store_true",
                   help="the protocol checks and the shortest scenario for each SPEC decision (about a minute on "
                        "a real-clock emulator); never CONFORMS: the scenarios left out are reported as not run")
    p.add_argument("--rig", metavar="URL",
                   help="then measure the unit's fairness through this rig wired to it (SPEC 13.6): a check per "
                        "pair of seats (the Showdown's paddles; each Flash seat against player 0), passed when "
                        "the skew's interval lies within fairness_bound_us (emurig://?OPTIONS with an emulated "
                        "--device: rig.md in the uno-hil docs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-check lines")
    add_firmware_argument(p, many=False)
    add_store_argument(p, "record the checks, the coverage and the unit in")
    p.set_defaults(func=main)


def main(args) -> int:
    console = output_console()
    check_outputs({"--json": args.json, "--junit": args.junit})
    pick = matcher(args.k) if args.k else None
    if not args.scenarios and not args.no_scenarios:
        library_paths()         # no library at all: say so before the unit is touched
    try:
        preloaded = load_paths(args.scenarios) if args.scenarios and not args.no_scenarios else None
    except ScenarioError as exc:
        exc.print(" in the scenarios; nothing was run")
        return Exit.USAGE
    opener = unit_opener(args, 1)
    link = (opener or open_link)(args.device)
    try:
        consoles = attach_consoles([link], [args.console] if args.console else [])
    except BaseException:
        link.close()
        raise

    def progress(c: CheckResult) -> None:
        if not args.quiet:
            why = f": {c.detail}" if c.status is Outcome.SKIP and c.detail else ""      # a skip says why
            console.print(Text.assemble(MARK[c.status], printable(f"  {c.title}: {c.name}{why}")), soft_wrap=True)

    def scenarios(kind: str):
        if args.no_scenarios:
            return None
        chosen = preloaded if preloaded is not None else load_paths(library_paths(kind))
        return [s for s in chosen if pick is None or pick(s)]

    with StopRequest("stopping after the check in progress; again to stop at once") as stop:
        conf = Conformance(link, scenarios=scenarios, progress=progress, quick=args.quick, stop=stop.reason)
        try:
            report = conf.run()
        except Interrupted:
            report = conf.report        # a second signal: the check in progress is kept as interrupted
        except ScenarioError as exc:
            raise ConformError(f"the scenario library does not load: {exc.problems[0]}") from None
        finally:
            stop.finishing()
            link.close()
            for reader in consoles:
                reader.close()
    try:
        status = _tell(console, args, report, progress, stop)
    finally:
        # whatever the console did (a closed pipe, an exception while printing), the files hold every check
        failures = _write(args, report)
        for line in failures:
            print(f"error: {line}", file=sys.stderr)
        record_into(configured(args.store), lambda: plain(report.as_dict()),
                    "conform", args.json)
    return Exit.USAGE if failures and stop.signum is None else status


def _write(args, report) -> list[str]:
    return write_outputs([
        ("--json", args.json, lambda: json.dumps(report.as_dict(), indent=2, default=str) + "\n"),
        ("--junit", args.junit, lambda: junit_xml("unohil conform", report.records(),
                                                   [device_from_identity(report.device, report.identity)])),
    ])


def _tell(console, args, report, progress, stop: StopRequest) -> int:
    if args.rig and not report.aborted and not report.interrupted:
        for c in rig_checks(args.device, args.rig):
            report.checks.append(c)
            progress(c)
    print_table(console, conform_table(report))
    print_table(console, coverage_table(report))
    failed = [c for c in report.checks if not c.status.ok]
    for c in failed:
        console.print(Text.assemble((str(c.status).upper(), "red"), printable(f" {c.title}: {c.name}"), "\n    ",
                                    "\n    ".join(printable(x) for x in c.detail.split("\n"))), soft_wrap=True)
    listed = _print_unchecked(console, report) if report.passed and (report.unchecked or report.gaps) else []
    _print_skips(console, [c for c in report.checks if c.status is Outcome.SKIP and c not in listed])
    budgets = report.stats.get("timing_budgets")
    if budgets and budgets["measured"]:
        for line in budgets["missed"]:
            console.print(f"[yellow]timing budget[/] {line}", soft_wrap=True)
        console.print(f"timing budgets met in {budgets['met']} of {budgets['measured']} measurements "
                      f"(a timing report: the verdict below does not depend on it)")
    rng = report.stats.get("reference_rng")
    if rng and rng["depend"]:
        console.print(f"{rng['depend']} of {rng['scenarios']} scenarios depend on the reference generator (SPEC 6); "
                      + ("the unit has it, so they ran" if rng["unit_has_it"] else
                         "the unit lacks it (capability reference_rng), so they were skipped"), soft_wrap=True)
    counts = tally(c.status for c in report.checks)
    style = {"CONFORMS": "green", "PARTIAL": "yellow", "NOT JUDGED": "yellow"}.get(report.verdict, "red")
    console.print(f"{counts_text(counts)} in {report.wall_s:.1f} s: [{style}]{report.verdict_line}[/]"
                  + "".join(f" ({x})" for x in (report.quick, report.interrupted) if x))
    if report.aborted:
        print(f"error: the link failed during the run: {report.aborted}", file=sys.stderr)
    if stop.signum is not None:
        return exit_for(stop.signum)
    if report.aborted:
        return Exit.USAGE
    if report.cut:
        return Exit.NOT_JUDGED
    return Exit.OK if report.passed else Exit.FAILED


def _print_unchecked(console: Console, report) -> list[CheckResult]:
    """Why a run where nothing failed is PARTIAL: what it skipped that the SPEC asks, what nothing covered."""
    gaps = report.gaps
    console.print(f"[yellow]not checked[/] ({len(report.unchecked)} items, {len(gaps)} sections or decisions):")
    for c in report.unchecked:
        console.print(Text(printable(f"  {c.title}: {c.name}: {c.detail}")), soft_wrap=True)
    for g in gaps:
        console.print(Text.assemble("  ", (g.status, "yellow"), printable(f" {coverage.label(g)}: {g.reason}")),
                      soft_wrap=True)
    return report.unchecked


def _print_skips(console: Console, skipped: list[CheckResult]) -> None:
    """Every other skip with its reason, so the console says what JUnit's <skipped> says."""
    if not skipped:
        return
    console.print(Text(f"skipped ({len(skipped)}):", style="dim"))
    for c in skipped:
        console.print(Text(printable(f"  {c.title}: {c.name}: {c.detail or 'no reason given'}")), soft_wrap=True)
