"""The console report of a run: what it shows while it runs, the results, the link health line, the failures.

Two formats. `rich` (a terminal's default): a progress bar while the run lasts, then the results
table. `lines` (anything else: a pipe, a file, a CI log): one line per scenario as it finishes, a
progress line at a steady pace, then the same summary. Either way no number is ever split across
lines (a table is printed at least as wide as its widest number needs), durations read in human
units (harness/text.py: exact to the microsecond unless rounded on purpose), and every name or
device string is printed escaped (harness/text.py printable), never as raw control characters.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from unohil.harness.session.health import LinkHealth
from unohil.harness.outcome import Outcome, counts_text, tally
from unohil.harness.run.prompts import Answer, Prompt, answer_line, prompt_line
from unohil.harness.report.verdicts import outcome_text, reaction_text
from unohil.harness.run.results import ScenarioResult, failure_lines
from unohil.harness.text import duration, printable

STATUS_STYLE = {Outcome.PASS: "green", Outcome.FAIL: "red", Outcome.LINK_ERROR: "magenta", Outcome.RESET: "magenta",
                Outcome.ERROR: "red", Outcome.SKIP: "yellow", Outcome.INTERRUPTED: "yellow"}

FORMATS = ("auto", "rich", "lines")
PROGRESS_EVERY_S = 30.0         # a progress line at least this often in the lines format


def choose_format(fmt: str, console: Console) -> str:
    """auto is rich on a terminal, lines anywhere else."""
    if fmt == "auto":
        return "rich" if console.is_terminal else "lines"
    return fmt


def _verdict_text(res: ScenarioResult, sep: str = ", ") -> str:
    counts = res.verdict_counts(lambda v: outcome_text(res.scenario.unit, v))
    if not counts:
        return "-"
    if res.race_count() == 1:
        return next(iter(counts)) or "-"
    return sep.join(f"{k} x{n}" for k, n in sorted(counts.items(), key=lambda x: -x[1])[:3])


def _reactions(res: ScenarioResult, sep: str = ", ") -> str:
    """A single race's reaction times."""
    only = res.only_race()
    if only is None or not only.verdicts:
        return "-"
    return reaction_text(only.verdicts[-1], sep) or "-"


def _pair(lat: dict, key: str, sep: str = " / ") -> str:
    x = lat.get(key)
    if not x:
        return "-"
    if x["n"] == 1:
        return duration(x["p50"], exact=False)
    return f"{duration(x['p50'], exact=False)}{sep}{duration(x['p99'], exact=False)}"


def scenario_table(results: list[ScenarioResult]) -> Table:
    t = Table(title="Scenarios", show_lines=False, header_style="bold", caption=(
        "latency p50 over p99 (one figure for one race): dev = verdict - decisive input, "
        "proc = verdict - earliest possible, host = arrival - decisive input"))
    # Only the name wraps; every other cell keeps its words whole, one item a line, so a narrow
    # console widens the table (print_table) rather than splitting a number.
    t.add_column("scenario", overflow="fold", min_width=NAME_MIN)
    t.add_column("unit", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("races", justify="right", no_wrap=True)
    t.add_column("verdict", no_wrap=True)
    for col in ("dev", "proc", "host"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("reaction", no_wrap=True)
    for res in results:
        lat = res.latency_summary()
        t.add_row(printable(res.scenario.name), res.scenario.unit, Text(res.shown_status, style=STATUS_STYLE[res.status]),
                  f"{res.passed_count()}/{res.race_count()}", _verdict_text(res, "\n"), *(_pair(lat, k, "\n") for k in
                                                                          ("device_us", "processing_us", "host_us")),
                  _reactions(res, "\n"))
    return t


NAME_MIN = 16       # the one column that wraps (scenario names) narrows down to this much


#: The width of a console that is not a terminal: more than any line holds, so nothing is cut or wrapped (a CI
#: log or a file reader wraps long lines itself, if at all) and a table is as wide as its content.
UNBOUNDED = 100_000


def output_console() -> Console:
    """The console of a command's report: on a terminal, the terminal's width; anywhere else as wide as what is
    printed (rich would otherwise lay tables out in 80 columns, cutting names and wrapping lines)."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=UNBOUNDED)
    return console


def print_table(console: Console, table: Table) -> None:
    """The table at the console's width, or wider when that would cut a cell: numbers are never
    broken across lines. Where the console is not a terminal (a file, a pipe, a CI log: rich gives it
    80 columns) the table is as wide as its content, nothing wrapped. On a terminal the tables here let
    one column wrap (at words) and keep every other cell whole (no_wrap), so the width they need is
    their minimum with each no_wrap column as wide as its widest cell (rich's own minimum counts the
    longest word, and would then cut the cell with an ellipsis)."""
    wide = console.options.update_width(UNBOUNDED)
    for col in table.columns:
        if col.no_wrap:
            widest = max(Measurement.get(console, wide, cell).maximum for cell in (col.header, *col.cells))
            col.min_width = max(col.min_width or 0, widest)
    measured = Measurement.get(console, wide, table)
    need = measured.minimum if console.is_terminal else measured.maximum
    if need <= console.width:
        console.print(table)
        return
    width = console.width
    console.width = need            # print(width=) cannot go beyond the console's own width
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


def scenario_line(res: ScenarioResult) -> Text:
    """One scenario as one line: status, name, unit and races, verdict, key latency; what went wrong."""
    sc = res.scenario
    line = Text.assemble((f"{res.shown_status:<10}", STATUS_STYLE[res.status]), printable(sc.name),
                         f"  [{sc.unit}, {res.passed_count()}/{res.race_count()} races]")
    verdict = _verdict_text(res)
    if verdict != "-":
        line.append(f"  {verdict}")
    lat = res.latency_summary()
    if "processing_us" in lat:
        line.append(f"  proc {_pair(lat, 'processing_us')}")
    reactions = _reactions(res)
    if reactions != "-":
        line.append(f"  reaction {reactions}")
    if res.status is not Outcome.PASS:
        why = res.error or next((f for r in res.races for f in (r.failures or [r.error]) if f), "")
        if why:
            line.append(f"  - {printable(why)}")
    return line


def elapsed_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{seconds:.1f} s"


class LiveReport:
    """What a run shows while it runs, safe to call from the worker threads.

    rich: a transient progress bar. lines: a line per scenario as it finishes and, at least every
    `every_s` seconds of run time (0: after every race), a progress line, so a long run on real
    units is never silent in a CI log. `clock` is the run's time source (seconds)."""

    def __init__(self, console: Console, fmt: str, *, races: int, scenarios: int, quiet: bool = False,
                 every_s: float = PROGRESS_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.console, self.fmt, self.quiet = console, fmt, quiet
        self.total_races, self.total_scenarios = races, scenarios
        self.every_s, self.clock = every_s, clock
        self.races = self.scenarios = self.failed = 0
        self._lock = threading.Lock()
        self._started = self._last = clock()
        self._bar = None
        self._prompts: dict[int, Text] = {}     # the prompts waiting for a person (rich: above the bar)
        if fmt == "rich" and not quiet and console.is_terminal:
            self._bar = _PromptedProgress(self._prompts, TextColumn("{task.description}"), BarColumn(),
                                          MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
            self._task = self._bar.add_task("races", total=races)

    def __enter__(self) -> "LiveReport":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()

    def scenario_started(self, sc) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=printable(sc.name)[:40])

    def race_done(self, _sc=None, _index=None) -> None:
        with self._lock:
            self.races += 1
            if self._bar is not None:
                self._bar.advance(self._task)
            elif self.fmt == "lines" and self.clock() - self._last >= self.every_s:
                self._progress_line()

    def scenario_done(self, res: ScenarioResult) -> None:
        with self._lock:
            self.scenarios += 1
            self.failed += not res.status.ok
            if self.fmt == "lines" and not self.quiet:
                self.console.print(scenario_line(res), soft_wrap=True)

    # A wait for a person (harness/run/prompts.py): shown where the person sees it, even with -q. On the
    # rich display a highlighted line above the bar until the wait ends; elsewhere one line each way,
    # flushed at once (the person, or a program standing in for one, reads it as it comes).

    def shown(self, prompt: Prompt) -> None:
        with self._lock:
            if self._bar is not None:
                self._prompts[id(prompt)] = Text(f" {prompt_line(prompt)} ", style="bold black on yellow")
                self._bar.refresh()
            else:
                self._say(prompt_line(prompt))

    def answered(self, answer: Answer) -> None:
        with self._lock:
            line = answer_line(answer)
            if self._bar is not None:
                self._prompts.pop(id(answer.prompt), None)
                word, rest = line.split(" ", 1)
                self.console.print(Text.assemble((word, "green" if answer.frame is not None else "red"), f" {rest}",
                                                 f" ({printable(answer.prompt.text)})"), soft_wrap=True)
                self._bar.refresh()
            else:
                self._say(line)

    def _say(self, line: str) -> None:
        self.console.print(line, soft_wrap=True, markup=False, highlight=False)
        self.console.file.flush()

    def _progress_line(self) -> None:
        now = self.clock()
        self._last = now
        self.console.print(f"progress: {self.races}/{self.total_races} races, {self.scenarios}/"
                           f"{self.total_scenarios} scenarios done, {self.failed} not passed, "
                           f"{elapsed_text(now - self._started)} elapsed", soft_wrap=True, highlight=False)


class _PromptedProgress(Progress):
    """The progress bar, with the prompts waiting for a person above it."""

    def __init__(self, prompts: dict[int, Text], *columns, **kw):
        self.prompts = prompts          # before Progress's own __init__, which renders once
        super().__init__(*columns, **kw)

    def get_renderables(self):
        yield from list(self.prompts.values())
        yield from super().get_renderables()


def print_summary(console: Console, fmt: str, run, *, quiet: bool) -> None:
    """After the run (report/run_record.py RunRecord): the table (rich), the link health, the failures, the
    budgets, the totals."""
    results = run.scenarios
    if fmt == "rich" and not quiet:
        print_table(console, scenario_table(results))
    console.print(health_line(run.health), soft_wrap=True)      # every run says what the link did, -q or not
    print_failures(console, results, rule=fmt == "rich")
    print_budgets(console, results)
    print_rig(console, results)
    flaky = sum(r.flaky for r in results)
    console.print(f"{counts_text(tally(r.status for r in results))}{f' ({flaky} flaky)' if flaky else ''}; "
                  f"{sum(r.race_count() for r in results)} races in {elapsed_text(run.seconds())}", soft_wrap=True)


HEALTH_FIELDS = ("frames_rx", "frames_tx", "bytes_dropped", "crc_errors", "bad_frames", "frames_missed",
                 "gaps_detected", "events_recovered", "events_lost", "duplicates", "resets", "retries")


def health_line(health: LinkHealth) -> Text:
    d = health.as_dict()
    bad = any(d[k] for k in ("events_lost", "resets"))
    text = ", ".join(f"{k.replace('_', ' ')} {d[k]}" for k in HEALTH_FIELDS)
    return Text(f"link health: {text}", style="magenta" if bad else "")


def print_failures(console: Console, results: list[ScenarioResult], rule: bool = True) -> None:
    for res in results:
        if res.status is Outcome.PASS:
            continue
        head, *rest = failure_lines(res)
        title = printable(f"{res.scenario.name} ({res.scenario.file}:{res.scenario.line}) on {res.device}: {res.shown_status}")
        if rule:
            console.rule(Text(title, style="bold"))
        else:
            console.print(Text(f"--- {title}", style="bold"), soft_wrap=True)
        for line in rest:
            text = line.strip()
            style = "red" if text.startswith("- ") else "dim" if line.startswith("      ") else ""
            console.print(Text(printable(line), style=style), soft_wrap=True)


def conform_table(report) -> Table:
    """A conformance report by SPEC section."""
    t = Table(title=f"conformance of {report.device}")
    for col in ("section", "checks", "passed", "failed", "cut", "skipped", "result"):
        t.add_column(col, justify="left" if col in ("section", "result") else "right", no_wrap=True)
    for key, checks in report.sections():
        n = tally(c.status for c in checks)
        failed, cut = n["failed"] + n["error"], n["link_error"] + n["reset"]     # cut: by the link, no verdict
        t.add_row(checks[0].title, str(len(checks)), str(n["passed"]), str(failed), str(cut), str(n["skipped"]),
                  "[red]FAIL[/]" if failed else "[yellow]cut[/]" if cut else "[green]pass[/]")
    return t


def coverage_table(report) -> Table:
    """What the run proved, by SPEC section and by decision id (harness/conform/coverage.py)."""
    from unohil.harness.conform import coverage
    style = {coverage.PASSED: "green", coverage.FAILED: "red", coverage.UNCHECKED: "yellow",
             coverage.NOT_COVERED: "bold yellow", coverage.NA: "dim", coverage.CUT: "yellow"}
    t = Table(title="coverage by SPEC section and decision", header_style="bold")
    t.add_column("SPEC", overflow="fold", min_width=NAME_MIN)     # a label: its id and its words, whole
    t.add_column("checks", justify="right", no_wrap=True)
    t.add_column("scenarios", justify="right", no_wrap=True)
    t.add_column("result", min_width=20)
    for c in coverage.sections(report, report.kind) + coverage.decisions(report, report.kind):
        text = Text(c.status, style=style[c.status])
        if c.reason and c.status != coverage.PASSED:
            text.append(f": {c.reason}", style="")
        t.add_row(Text(coverage.label(c)), str(len(c.checks)), str(len(c.scenarios)), text)
    return t


def print_budgets(console: Console, results: list[ScenarioResult]) -> None:
    """Timing budgets, apart from the verdicts: how often each was met, the worst figure when not."""
    met = total = 0
    for res in results:
        for name, b in res.budget_summary().items():
            met, total = met + b["met"], total + b["races"]
            if b["met"] < b["races"]:
                console.print(Text(f"timing budget {name} {b['limit']} us missed in {b['races'] - b['met']} "
                                   f"of {b['races']} race(s) of {printable(repr(res.scenario.name))} (worst "
                                   f"{duration(b['worst'])})", style="yellow"), soft_wrap=True)
    if total:
        console.print(f"timing budgets met in {met} of {total} measurements (apart from the verdicts)", soft_wrap=True)


def print_rig(console: Console, results: list[ScenarioResult]) -> None:
    """Rig mode: the worst of each figure of the physical view over the run, on one line."""
    from unohil.harness.run.results import worst_figure as worst
    values: dict[str, list[int]] = {}
    for res in results:
        for name, v in res.rig_summary().items():
            values.setdefault(name, []).append(v)
    if not values:
        return
    order = ["timestamp_error_us", "reaction_error_us"] + sorted(k for k in values if k.startswith("decision_to_"))
    parts = [f"{k.removesuffix('_us').replace('_', ' ')} {duration(worst(values[k]))}" for k in order if k in values]
    console.print("rig, the worst over the run: " + ", ".join(parts), soft_wrap=True, highlight=False)
