"""unohil run: scenarios against devices (the built-in emulator by default), with reports."""
from __future__ import annotations

import os
import sys
import threading
import time

from rich.console import Console

from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, StopRequest, exit_for, signal_name
from unohil.harness.errors import HarnessError, UsageError
from unohil.harness.outcome import Outcome, tally
from unohil.harness.report.console import FORMATS, PROGRESS_EVERY_S, LiveReport, choose_format, print_summary
from unohil.harness.report.files import check_outputs, write_outputs
from unohil.harness.report.junit import run_junit
from unohil.harness.report.metrics import metrics_text
from unohil.harness.report.results_json import results_json_chunks, scenario_json, stored_document
from unohil.harness.report.run_record import RunRecord
from unohil.harness.cli import plan
from unohil.harness.cli.firmware import add_firmware_argument, attach_consoles, unit_opener
from unohil.harness.run.parallel import Rack, Workers
from unohil.harness.run.pool import unserved_reason
from unohil.harness.run.result_store import ResultStore
from unohil.harness.run.results import ScenarioResult
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths, print_warnings
from unohil.harness.scenarios.selection import matcher
from unohil.harness.session.driver import Driver
from unohil.harness.session.outage import DEFAULT_BUDGET_US, Outage, parse_budget
from unohil.harness.store.config import add_store_argument, configured, record_into

def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run scenarios")
    p.add_argument("paths", nargs="*",
                   help="scenario files or directories (default: the scenario library that ships with uno-hil, the "
                        "part of it for the given devices' kinds; `unohil library` says where it is)")
    p.add_argument("--device", action="append", metavar="URL",
                   help="device URL (repeatable); default: the built-in emulator on the virtual clock")
    p.add_argument("--json", metavar="FILE", help="write machine-readable results")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--metrics", metavar="FILE",
                   help="write the run's figures as OpenMetrics text (node_exporter's textfile collector, Pushgateway)")
    p.add_argument("--trace", metavar="DIR", help="write a JSON Lines trace per device")
    add_firmware_argument(p, many=True)
    p.add_argument("-k", metavar="EXPR", help="only scenarios whose name/file/tags match (and, or, not)")
    p.add_argument("--host-timed", action="store_true",
                   help="press with host timing (INPUT) even if the device has test mode")
    p.add_argument("--outage-budget", metavar="TIME", type=_budget, default=DEFAULT_BUDGET_US,
                   help="how long a lost link is waited for (tried again with growing waits) before the races "
                        f"after it become link errors, e.g. 30s, 500ms, 2min (default {DEFAULT_BUDGET_US // 10**6}s)")
    p.add_argument("--rig", metavar="URL",
                   help="rig mode: the presses go through this rig wired to the one --device, at rig times "
                        "(SPEC 13); emurig://?OPTIONS wires an emulated rig to an emulated unit (rig.md in the uno-hil "
                        "docs)")
    p.add_argument("--attended", action="store_true",
                   help="a person is at the unit: run the scenarios that wait for one (a wait_for with a prompt, "
                        "shown here); without it they are skipped")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no results table or per-scenario lines: only the link health, the failures and the totals")
    p.add_argument("--rerun-failed", type=int, default=0, metavar="N",
                   help="run a failed race again up to N times: one that then passes is reported flaky (it still "
                        "fails the run, unless --flaky-passes) and never turned into a pass")
    p.add_argument("--flaky-passes", action="store_true",
                   help="with --rerun-failed: a run whose only failures are flaky exits 0")
    p.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                   help="run the scenarios in N processes, one merged report (default: the number of cores for a run of "
                        f"{AUTO_JOBS_RACES} races or more, else 1); only "
                        "for emulators on the virtual clock (emu://KIND?clock=virtual, the default), other units "
                        "run in this process")
    add_store_argument(p)
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


def _jobs(text: str) -> int:
    import argparse
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give how many processes, 1 or more")
    return int(text)


def _budget(text: str) -> int:
    import argparse
    try:
        return parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(args) -> int:
    if args.rerun_failed < 0:
        raise UsageError(f"--rerun-failed {args.rerun_failed}: give how many times to run a failed race again (0 or more)")
    console = Console(highlight=False)
    fmt = choose_format(args.format, console)
    started = time.time()
    check_outputs({"--json": args.json, "--junit": args.junit, "--metrics": args.metrics}, {"--trace": args.trace})
    scenarios = load_paths(args.paths or library_paths())
    print_warnings(scenarios)
    if args.k:
        pick = matcher(args.k)
        scenarios = [s for s in scenarios if pick(s)]
    if not scenarios:
        raise UsageError("no scenarios selected")
    if (args.firmware or args.lifecycle) and not args.device:
        raise UsageError("--firmware and --lifecycle need a --device (e.g. qemu:unit.elf)")
    from unohil.harness.links.fd import raise_fd_limit
    too_few = raise_fd_limit(len(args.device or []))
    if too_few:
        console.print(too_few, markup=False, highlight=False, soft_wrap=True)
    rack = _rig_rack(args) if args.rig else Rack.open(args.device or [], {s.unit for s in scenarios}, args.trace,
                                                      opener=unit_opener(args, len(args.device or [])))
    try:
        consoles = attach_consoles([d.link for d in rack.drivers], args.console)
    except BaseException:
        rack.close()
        raise
    by_kind = rack.by_kind()
    for u in rack.unopened:
        console.print(f"{u.url}: not opened: {u.error}; its scenarios are link errors, the other units run",
                      markup=False, highlight=False, soft_wrap=True)
    if args.device and not any(sc.unit in rack.kinds() or rack.unopened_for(sc.unit) for sc in scenarios):
        have = "; ".join(f"{d.url} is a {d.kind} unit" for d in rack.drivers)
        rack.close()
        raise UsageError(f"{have}: none of the selected scenarios runs on it (they need "
                         f"{' or '.join(sorted({s.unit for s in scenarios}))})")
    if args.device and not args.paths:         # the library against given units: their kinds' part of it
        # (a unit not opened whose URL does not say its kind may have been any: nothing is left out for it)
        scenarios, why = plan.left_out(scenarios, {s.unit for s in scenarios if rack.unopened_for(s.unit)}
                                       | rack.kinds())
        if why:
            console.print(why, markup=False, highlight=False, soft_wrap=True)
    try:
        how_long = plan.estimate_line(scenarios, rack.drivers, attended=args.attended)
    except BaseException:       # Ctrl-C during the dry run: the units are given back all the same
        rack.close()
        raise
    if how_long:
        console.print(how_long, markup=False, highlight=False, soft_wrap=True)
        console.file.flush()
    with StopRequest() as stop, _store(args) as store:
        try:
            run = _Run(console, fmt, args, stop, store)
            jobs = _how_many_jobs(console, args, scenarios, rack)
            if jobs > 1:
                results = run.in_processes(scenarios, rack, jobs)
            else:
                results = run.all(scenarios, by_kind, rack)
            stop.finishing()            # from here a signal changes nothing: the units are settled and
            if stop.signum is not None:     # what was found is written
                _settle(rack, run.busy)
        finally:
            stop.finishing()
            health, devices = rack.health(), rack.describe()
            if run.processes is not None:       # the workers' units ran the races, not the parent's
                health, devices = run.processes.health(), run.processes.devices(devices)
            rack.close()
            for reader in consoles:
                reader.close()
        return _report(console, fmt, args, started, scenarios, results, rack, health, devices, stop, store)


AUTO_JOBS_RACES = 5000      # races from which a run without -j spreads its units over the cores


def _how_many_jobs(console: Console, args, scenarios, rack: Rack) -> int:
    """-j as given (when not: the number of cores for a run long enough to pay for starting workers, else 1),
    1 when the units cannot be spread over processes (saying why when -j was asked for), never more than
    there are units with scenarios to run."""
    from unohil.harness.run.processes import why_not_parallel
    if args.jobs is not None:
        jobs = args.jobs
    else:       # a worker costs about 1 s to start: the library's 324 races took 2.7 s with -j 2, 1.0-3.0 s with -j 1
        jobs = (os.cpu_count() or 1) if sum(len(sc.races) for sc in scenarios) >= AUTO_JOBS_RACES else 1
    if jobs > 1 and not rack.unopened:
        why = why_not_parallel([d.url for d in rack.drivers], args)
        if why is None:     # never more processes than units with work: a unit's scenarios stay together
            return min(jobs, len([d for d in rack.drivers if d.kind in {sc.unit for sc in scenarios}]))
        if args.jobs is not None:
            console.print(f"-j {jobs}: one process: {why}", markup=False, highlight=False, soft_wrap=True)
    return 1


def _store(args) -> ResultStore:
    """Where each finished scenario's races go (run/result_store.py): a long run's memory stays flat."""
    from unohil.harness.report.verdicts import outcome_text
    # a results store (--store) records every race, so the races go to disk for it as for --json
    keep_races = args.json or configured(args.store)
    return ResultStore(args.json, outcome_text, scenario_json if keep_races else None)


def _rig_rack(args) -> Rack:
    from unohil.harness.rig.links import open_rig_unit
    if not args.device or len(args.device) != 1:
        raise UsageError("--rig needs one --device: the unit the rig is wired to")
    if args.host_timed:
        raise UsageError("--rig and --host-timed: in rig mode the rig presses the unit's buttons at rig times, the "
                         "host sends no INPUT; give one of them")
    return Rack([open_rig_unit(args.device[0], args.rig)])


def _report(console: Console, fmt: str, args, started: float, scenarios, results: list[ScenarioResult], rack: Rack,
            health, devices, stop: StopRequest, store: ResultStore) -> int:
    """The console's account, then every output on its own (whatever the console did); the exit status."""
    counts = tally(r.status for r in results)
    interrupted = None
    if stop.signum is not None:
        interrupted = {"signal": signal_name(stop.signum), "not_run": len(scenarios) - len(results)}
    # the one record every output below is written from
    run = RunRecord(results, devices, health, started, interrupted=interrupted, store=store).ended()
    try:
        print_summary(console, fmt, run, quiet=args.quiet)
        if interrupted:
            console.print(f"{stop.reason()}: {interrupted['not_run']} scenario(s) not run")
    finally:
        failures = write_outputs([
            ("--json", args.json, lambda: results_json_chunks(run)),
            ("--junit", args.junit, lambda: run_junit(run)),
            ("--metrics", args.metrics, lambda: metrics_text(run)),
        ])
    failures += [f"--trace {d.trace.failure}" for d in rack.drivers if d.trace is not None and d.trace.failure]
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    record_into(configured(args.store), lambda: stored_document(run), "run", args.json)
    if stop.signum is not None:
        return exit_for(stop.signum)
    if failures or any(r.status is Outcome.ERROR for r in results):
        # a results file that could not be written, or a scenario that cannot run as written: the
        # user's to fix, like a bad file
        return Exit.USAGE
    failed = counts["failed"] - (sum(r.flaky for r in results) if args.flaky_passes else 0)
    return Exit.FAILED if failed or counts["link_error"] or counts["reset"] else Exit.OK


class _Run:
    """The scenarios on the rack's runners, shown as they go (LiveReport); on a signal, what finished
    plus what was cut short."""

    def __init__(self, console: Console, fmt: str, args, stop: StopRequest, store: ResultStore):
        self.console = console
        self.store = store
        self.fmt = fmt
        self.args = args
        self.stop = stop
        self.done: dict[int, ScenarioResult] = {}       # by the scenario's place in the run
        self.busy: dict[int, tuple[Driver, threading.Thread]] = {}   # the scenarios in progress: unit, thread
        self.processes = None       # -j: the worker processes that ran the scenarios (run/processes.py)

    def all(self, scenarios, by_kind, rack: Rack) -> list[ScenarioResult]:
        place = {id(sc): i for i, sc in enumerate(scenarios)}
        live = LiveReport(self.console, self.fmt, races=sum(len(s.races) for s in scenarios), scenarios=len(scenarios),
                          quiet=self.args.quiet, every_s=self.args.progress_every)
        self.live = live
        with live:
            outage = Outage(self.args.outage_budget,
                            say=lambda text: self.console.print(text, markup=False, highlight=False))
            runners = {kind: [Runner(d, host_timed=self.args.host_timed, stop=self.stop.reason, outage=outage,
                                     progress=live.race_done, attended=self.args.attended, prompts=live,
                                     rerun_failed=self.args.rerun_failed)
                           for d in ds]
                       for kind, ds in by_kind.items()}

            def work(runner: Runner, sc) -> ScenarioResult | None:
                if self.stop.signum is not None:
                    return None                 # not started: a signal came first
                i = place[id(sc)]
                self.busy[i] = runner.d, threading.current_thread()
                live.scenario_started(sc)
                res = self.store.put(runner.run(sc))
                self._finished(i, res)
                return res

            def failed(sc, exc: Exception) -> ScenarioResult:
                res = ScenarioResult(sc, "-", status=Outcome.ERROR, error=f"{type(exc).__name__}: {exc}")
                self._finished(place[id(sc)], res)
                return res

            def unserved(sc) -> ScenarioResult:
                gone = rack.unopened_for(sc.unit)
                if gone:    # a unit that could have run it did not open: the link's doing, not a skip
                    res = ScenarioResult(sc, gone[0].url, status=Outcome.LINK_ERROR,
                                         error="not run: " + "; ".join(f"could not open the unit: {u.error}"
                                                                       for u in gone))
                else:
                    res = ScenarioResult(sc, "-", status=Outcome.SKIP, error=unserved_reason(sc.unit))
                live.scenario_done(res)
                return res

            try:
                results = Workers(runners, lambda sc: sc.unit, lambda r: r.d.url,
                                  retired=lambda r: r.d.replaced is not None).run(scenarios, work, unserved, failed)
            except Interrupted:
                # a second signal: the scenarios in progress were abandoned mid-race
                results = [self.done.get(i) or (ScenarioResult(sc, self.busy[i][0].url, status=Outcome.INTERRUPTED,
                                                               error=f"{self.stop.reason()} (twice: its race in "
                                                                     f"progress was abandoned)")
                                                if i in self.busy else None)
                           for i, sc in enumerate(scenarios)]
        return [r for r in results if r is not None]

    def in_processes(self, scenarios, rack: Rack, jobs: int) -> list[ScenarioResult]:
        """all(), the rack's units spread over worker processes (run/processes.py); the per-scenario lines
        are shown in the scenarios' order."""
        from unohil.harness.run.processes import ProcessRun, WorkerSetup, merged, streams_for
        from unohil.harness.report.verdicts import outcome_text
        self.processes = ProcessRun(jobs, WorkerSetup(self.args.host_timed, self.args.rerun_failed,
                                                      self.args.outage_budget,
                                                      scenario_json if self.store.keeps_text else None, outcome_text))
        results: list[ScenarioResult | None] = [None] * len(scenarios)
        streams, unserved = streams_for(scenarios, [d.url for d in rack.drivers], [d.kind for d in rack.drivers])
        for i in unserved:
            results[i] = ScenarioResult(scenarios[i], "-", status=Outcome.SKIP, error=unserved_reason(scenarios[i].unit))
        shown = 0
        live = self.live = LiveReport(self.console, self.fmt, races=sum(len(s.races) for s in scenarios),
                                      scenarios=len(scenarios), quiet=self.args.quiet, every_s=self.args.progress_every)

        def show() -> None:
            nonlocal shown
            while shown < len(results) and results[shown] is not None:
                live.scenario_done(results[shown])
                shown += 1
            self.console.file.flush()

        def done(got) -> None:
            res = merged(got.kept, scenarios[got.index])
            results[got.index] = (self.store.put_text(res, got.json_text) if got.json_text is not None
                                  else self.store.put(res))
            for _ in range(res.race_count()):
                live.race_done()
            show()

        with live:
            show()
            try:
                self.processes.run(streams, done, stop=lambda: self.stop.signum)
            except Interrupted:
                pass        # a second signal: the scenarios in progress were abandoned; the finished ones stay
            if self.stop.signum is None:    # a worker that failed: its scenarios not run, each saying why
                why = "; ".join(self.processes.errors) or "its worker process ended without its result"
                for i, res in enumerate(results):
                    if res is None:
                        results[i] = ScenarioResult(scenarios[i], "-", status=Outcome.LINK_ERROR, error=f"not run: {why}")
            for res in results[shown:]:     # after a stop, those that finished after one that did not
                if res is not None:
                    live.scenario_done(res)
        for error in self.processes.errors:
            self.console.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        return [r for r in results if r is not None]

    def _finished(self, i: int, res: ScenarioResult) -> None:
        self.done[i] = res
        self.busy.pop(i, None)
        self.live.scenario_done(res)
        self.console.file.flush()


def _settle(rack: Rack, busy: dict[int, tuple[Driver, threading.Thread]]) -> None:
    """After a signal: cancel the stimuli each idle unit may still hold, so it is left in a known state.
    (A unit whose race a second signal abandoned in another thread is still in use there: the next
    session's start brings it back.)"""
    in_use = {id(d) for d, thread in busy.values() if thread is not threading.main_thread()}
    for d in rack.drivers:
        if id(d) in in_use or not d.has_cap("test_mode"):
            continue
        d.dirty = True
        try:
            d.cancel_injections()
        except (HarnessError, OSError):
            pass            # a unit that cannot be reached now is brought back when a session next starts
