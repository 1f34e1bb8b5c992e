"""Reporting: rich console tables, JSON and JUnit. Apart from running, as results come in."""
from __future__ import annotations

import json
import time
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .health import LinkHealth
from .outputs import write_atomic
from .runner import PASS, ScenarioResult

STATUS_STYLE = {"pass": "green", "fail": "red", "link-error": "magenta", "reset": "magenta", "error": "red",
                "skipped": "yellow"}
SCHEMA_VERSION = 1


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
            who = v.get("loser", v.get("slowest", v.get("fired", "")))
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
        passed = sum(1 for r in res.races if r.status == PASS)
        t.add_row(res.scenario.name, res.scenario.unit, Text(res.status, style=STATUS_STYLE.get(res.status, "")),
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


def print_failures(console: Console, results: list[ScenarioResult], max_races: int = 3) -> None:
    for res in results:
        if res.status == PASS:
            continue
        sc = res.scenario
        console.rule(f"[bold]{sc.name}[/] ({sc.file}:{sc.line}) on {res.device}: {res.status}")
        if res.error:
            console.print(f"  {res.error}")
        shown = 0
        for r in res.races:
            if r.status == PASS:
                continue
            shown += 1
            if shown > max_races:
                console.print(f"  ... {sum(1 for x in res.races if x.status != PASS) - max_races} more failed race(s)")
                break
            env = ", ".join(f"{k}={v}" for k, v in r.env.items() if k != "race")
            console.print(f"  race {r.index}{' (' + env + ')' if env else ''}: [bold]{r.status}[/]")
            if r.error:
                console.print(f"    {r.error}")
            for f in r.failures:
                console.print(Text(f"    - {f}", style="red"))
            if r.events:
                console.print("    trace (device us from race start):")
                for e in r.events[-24:]:
                    fields = " ".join(f"{k}={v}" for k, v in e["fields"].items())
                    console.print(Text(f"      {e['t_us']:>10}  {e['event']:<18} {fields}", style="dim"))


def results_json(results: list[ScenarioResult], health: LinkHealth, devices: list[dict], started: float) -> dict:
    return {
        "schema": SCHEMA_VERSION,
        "tool": "unohil",
        "started_unix": round(started, 3),
        "duration_s": round(time.time() - started, 3),
        "devices": devices,
        "summary": {
            "scenarios": len(results),
            "passed": sum(1 for r in results if r.status == PASS),
            "failed": sum(1 for r in results if r.status not in (PASS, "skipped")),
            "skipped": sum(1 for r in results if r.status == "skipped"),
            "races": sum(len(r.races) for r in results),
        },
        "health": health.as_dict(),
        "scenarios": [r.as_dict() for r in results],
    }


def write_json(path, doc: dict) -> None:
    write_atomic(path, json.dumps(doc, indent=1, default=str) + "\n")


def write_junit(path, results: list[ScenarioResult]) -> None:
    suite = ET.Element("testsuite", name="unohil", tests=str(len(results)),
                       failures=str(sum(1 for r in results if r.status == "fail")),
                       errors=str(sum(1 for r in results if r.status in ("link-error", "reset", "error"))),
                       skipped=str(sum(1 for r in results if r.status == "skipped")),
                       time=f"{sum(r.wall_s for r in results):.6f}")
    for res in results:
        sc = res.scenario
        case = ET.SubElement(suite, "testcase", classname=sc.file.replace("/", ".").rsplit(".", 1)[0],
                             name=sc.name, file=sc.file, line=str(sc.line), time=f"{res.wall_s:.6f}")
        lines = []
        for r in res.races:
            if r.status != PASS:
                lines.append(f"race {r.index} {r.status}: {r.error}")
                lines += [f"  {f}" for f in r.failures]
        if res.status == "fail":
            ET.SubElement(case, "failure", message=(lines[1].strip() if len(lines) > 1 else res.status)).text = \
                "\n".join(lines)
        elif res.status == "skipped":
            ET.SubElement(case, "skipped", message=res.error)
        elif res.status != PASS:
            ET.SubElement(case, "error", message=res.status).text = "\n".join(lines) or res.error
        lat = res.latency_summary()
        if lat:
            props = ET.SubElement(case, "properties")
            for k, v in lat.items():
                for stat in ("p50", "p99"):
                    if v.get(stat) is not None:
                        ET.SubElement(props, "property", name=f"{k}_{stat}", value=str(v[stat]))
    write_atomic(path, ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n")
