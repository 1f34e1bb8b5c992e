"""The console report of a run: the results table, the link health line, the failures."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.session.health import LinkHealth
from harness.outcome import Outcome, tally
from harness.run.results import ScenarioResult, failure_lines
from harness.scenarios.units import UNITS

STATUS_STYLE = {Outcome.PASS: "green", Outcome.FAIL: "red", Outcome.LINK_ERROR: "magenta", Outcome.RESET: "magenta",
                Outcome.ERROR: "red", Outcome.SKIP: "yellow", Outcome.INTERRUPTED: "yellow"}


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.0f}"
    return str(v)


def _verdict_text(res: ScenarioResult) -> str:
    counts: dict[str, int] = {}
    for r in res.races:
        for v in r.verdicts[-1:]:
            key = v.get("reason", "")
            who = v.get(UNITS[res.scenario.unit].outcome_field, "")
            k = f"{key} {who}".strip()
            counts[k] = counts.get(k, 0) + 1
    if not counts:
        return "-"
    if len(res.races) == 1:
        return next(iter(counts))
    return ", ".join(f"{k} x{n}" for k, n in sorted(counts.items(), key=lambda x: -x[1])[:3])


def _reactions(res: ScenarioResult) -> str:
    if len(res.races) != 1 or not res.races[0].verdicts:
        return "-"
    v = res.races[0].verdicts[-1]
    parts = []
    for side in ("a", "b"):
        x = v.get(f"reaction_{side}_us")
        if x is not None:
            parts.append(f"{side}:{x}")
    if "reaction_us" in v:
        parts += [f"{i}:{x}" for i, x in enumerate(v["reaction_us"]) if x is not None]
    return " ".join(parts) or "-"


def scenario_table(results: list[ScenarioResult]) -> Table:
    t = Table(title="Scenarios", show_lines=False, header_style="bold", caption=(
        "latency in us, p50/p99: dev = verdict - decisive input, proc = verdict - earliest possible, "
        "host = arrival - decisive input"))
    t.add_column("scenario", overflow="fold", ratio=4)
    t.add_column("unit")
    t.add_column("status")
    t.add_column("races", justify="right")
    t.add_column("verdict", overflow="fold", ratio=2)
    for col in ("dev", "proc", "host"):
        t.add_column(col, justify="right", overflow="fold")
    t.add_column("reaction us", overflow="fold")
    for res in results:
        lat = res.latency_summary()

        def pair(key):
            x = lat.get(key)
            return f"{_fmt(x['p50'])}/{_fmt(x['p99'])}" if x else "-"
        passed = sum(1 for r in res.races if r.status is Outcome.PASS)
        t.add_row(res.scenario.name, res.scenario.unit, Text(str(res.status), style=STATUS_STYLE[res.status]),
                  f"{passed}/{len(res.races)}", _verdict_text(res), pair("device_us"), pair("processing_us"),
                  pair("host_us"), _reactions(res))
    return t


HEALTH_FIELDS = ("frames_rx", "frames_tx", "bytes_dropped", "crc_errors", "bad_frames", "frames_missed",
                 "gaps_detected", "events_recovered", "events_lost", "duplicates", "resets", "retries")


def health_line(health: LinkHealth) -> Text:
    d = health.as_dict()
    bad = any(d[k] for k in ("events_lost", "resets"))
    text = ", ".join(f"{k.replace('_', ' ')} {d[k]}" for k in HEALTH_FIELDS)
    return Text(f"link health: {text}", style="magenta" if bad else "")


def print_failures(console: Console, results: list[ScenarioResult]) -> None:
    for res in results:
        if res.status is Outcome.PASS:
            continue
        head, *rest = failure_lines(res)
        console.rule(f"[bold]{res.scenario.name}[/] ({res.scenario.file}:{res.scenario.line}) on {res.device}: "
                     f"{res.status}")
        for line in rest:
            text = line.strip()
            style = "red" if text.startswith("- ") else "dim" if line.startswith("      ") else ""
            console.print(Text(line, style=style))


def conform_table(report) -> Table:
    """A conformance report by SPEC section."""
    t = Table(title=f"conformance of {report.device}")
    for col in ("section", "checks", "passed", "failed", "skipped", "result"):
        t.add_column(col, justify="left" if col in ("section", "result") else "right", no_wrap=True)
    for key, checks in report.sections():
        n = tally(c.status for c in checks)
        t.add_row(checks[0].title, str(len(checks)), str(n["passed"]), str(n["failed"]), str(n["skipped"]),
                  "[red]FAIL[/]" if n["failed"] else "[green]pass[/]")
    return t


def coverage_table(report) -> Table:
    """What the run proved, by SPEC section and by decision id (harness/conform/coverage.py)."""
    from harness.conform import coverage
    style = {coverage.PASSED: "green", coverage.FAILED: "red", coverage.UNCHECKED: "yellow",
             coverage.NOT_COVERED: "bold yellow", coverage.NA: "dim"}
    t = Table(title="coverage by SPEC section and decision", header_style="bold")
    t.add_column("SPEC", no_wrap=True, max_width=34, overflow="ellipsis")
    t.add_column("checks", justify="right")
    t.add_column("scenarios", justify="right")
    t.add_column("result", overflow="fold", min_width=20, ratio=1)
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
                console.print(Text(f"timing budget {name} {b['limit']} us missed in {b['races'] - b['met']} of "
                                   f"{b['races']} race(s) of {res.scenario.name!r} (worst {b['worst']} us)",
                                   style="yellow"))
    if total:
        console.print(f"timing budgets met in {met} of {total} measurements (apart from the verdicts)")
