"""unohil run --metrics: the run's figures as OpenMetrics text, named and labelled by the conventions, the
numbers the results file holds (in seconds)."""
from __future__ import annotations

import json
import re

from unohil.harness.cli import main

LIB = "fixtures/scenarios/showdown"
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABELS = r'\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\}'
SAMPLE = re.compile(rf"^({NAME})({LABELS})? (-?[0-9.e+-]+)$")
META = re.compile(rf"^# (TYPE|UNIT|HELP) ({NAME}) (.+)$")


def parse(text: str) -> tuple[dict, list]:
    """The families (name -> type, unit) and samples (name, labels, value), refusing any line out of grammar."""
    lines = text.split("\n")
    assert lines[-2:] == ["# EOF", ""]
    families, samples = {}, []
    for line in lines[:-2]:
        meta = META.match(line)
        if meta:
            families.setdefault(meta[2], {})[meta[1]] = meta[3]
            continue
        m = SAMPLE.match(line)
        assert m, f"not OpenMetrics: {line!r}"
        labels = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m[2] or ""))
        samples.append((m[1], labels, float(m[3])))
    for name, meta in families.items():
        assert meta["TYPE"] in ("gauge", "summary"), name
        if meta.get("UNIT"):
            assert name.endswith("_" + meta["UNIT"]), name      # the unit is the name's suffix
    for name, _, _ in samples:
        family = re.sub(r"_(sum|count)$", "", name)
        assert family in families, f"{name} has no TYPE"
    return families, samples


def test_metrics_of_a_run_on_a_unit_1_ms_slow_at_its_verdicts(tmp_path):
    out, js = tmp_path / "m.prom", tmp_path / "r.json"
    assert main(["run", f"{LIB}/first_press.yaml", f"{LIB}/ties.yaml", "--device",
                 "emu://showdown?verdict_delay_us=1000&firmware=1.4.2", "--metrics", str(out), "--json", str(js),
                 "-q", "--store", "off"]) == 0
    families, samples = parse(out.read_text())
    doc = json.loads(js.read_text())
    value = {(n, tuple(sorted(lb.items()))): v for n, lb, v in samples}
    assert families["unohil_verdict_processing_seconds"] == {
        "TYPE": "summary", "UNIT": "seconds", "HELP": families["unohil_verdict_processing_seconds"]["HELP"]}
    proc = [r["latency"]["processing_us"] for s in doc["scenarios"] for r in s["results"]
            if r["latency"].get("processing_us") is not None]
    key = lambda **lb: tuple(sorted(lb.items()))
    assert value["unohil_verdict_processing_seconds", key(kind="showdown", quantile="0.99")] == 0.001
    assert value["unohil_verdict_processing_seconds_count", key(kind="showdown")] == len(proc)
    assert value["unohil_verdict_processing_seconds_sum", key(kind="showdown")] == sum(proc) / 1e6
    assert value["unohil_scenarios", key(status="passed")] == doc["summary"]["passed"]
    assert value["unohil_races", ()] == doc["summary"]["races"]
    (info,) = [lb for n, lb, v in samples if n == "unohil_unit_info" and v == 1]
    assert info["firmware"] == "1.4.2" and info["kind"] == "showdown" and info["url"].startswith("emu://")


def test_label_values_are_escaped():
    from unohil.harness.report.metrics import metrics_text
    from unohil.harness.report.run_record import RunRecord
    text = metrics_text(RunRecord([], devices=[{"url": 'socket://a"b\\c\nd', "kind": "showdown"}]))
    _, samples = parse(text)
    assert [lb["url"] for n, lb, _ in samples if n == "unohil_unit_info"] == ['socket://a\\"b\\\\c\\nd']
