"""The one record of a run (harness/report/run_record.py): every writer takes a RunRecord, and the record
read back from a run's results file makes each of them write what the live run's record makes them write.

The run is the library's showdown scenarios on a unit whose verdict comes 300 ms late (so some fail, with
their trace excerpts and failure stories), kept as `unohil run` keeps a long run: the passing races in the
run's result store, only the failures in memory."""
from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import pytest
from rich.console import Console

from unohil.harness.outcome import Outcome
from unohil.harness.report.console import print_summary
from unohil.harness.report.html import report_html
from unohil.harness.report.junit import run_junit
from unohil.harness.report.metrics import metrics_text
from unohil.harness.report.perfetto import run_perfetto
from unohil.harness.report.results_json import json_text, results_json, results_json_chunks, scenario_json
from unohil.harness.report.run_record import RunRecord, load_run
from unohil.harness.report.vcd import run_vcds
from unohil.harness.report.verdicts import outcome_text
from unohil.harness.run.parallel import Rack
from unohil.harness.run.result_store import ResultStore
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths

LATE_UNIT = "emu://showdown?clock=virtual&verdict_delay_us=300000"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(the live run's record, the record read back from its results file)."""
    tmp = tmp_path_factory.mktemp("run")
    (tmp / "traces").mkdir()
    scenarios = [sc for sc in load_paths(library_paths()) if sc.unit == "showdown"
                 and sc.file.endswith(("first_press.yaml", "false_start.yaml", "ties.yaml"))]
    rack = Rack.open([LATE_UNIT], {"showdown"}, trace_dir=tmp / "traces")
    store = ResultStore(tmp / "r.json", outcome_text, scenario_json)
    try:
        runner = Runner(rack.drivers[0])
        results = [store.put(runner.run(sc)) for sc in scenarios]
        live = RunRecord(results, rack.describe(), rack.health(), started=1_700_000_000.25, store=store).ended()
    finally:
        rack.close()
    (tmp / "r.json").write_text("".join(results_json_chunks(live)), encoding="utf-8")
    yield live, load_run(tmp / "r.json")
    store.close()


def test_the_run_has_what_every_writer_draws(runs):
    live, _ = runs
    statuses = {r.status for r in live.scenarios}
    assert Outcome.FAIL in statuses and Outcome.PASS in statuses
    # kept as a long run keeps it: a passing race is in the store, not in memory
    assert sum(len(r.races) for r in live.scenarios) < sum(r.race_count() for r in live.scenarios)
    assert live.devices[0]["trace"] and live.devices[0]["kind"] == "showdown"


def test_the_json_file_read_back_writes_itself_again(runs):
    live, loaded = runs
    text = "".join(results_json_chunks(live))
    assert "".join(results_json_chunks(loaded)) == text
    assert json_text(results_json(loaded)) == json_text(json.loads(text))


def _console(run: RunRecord, fmt: str) -> str:
    out = io.StringIO()
    print_summary(Console(file=out, width=160, force_terminal=False, color_system=None), fmt, run, quiet=False)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["lines", "rich"])
def test_the_console_summary_is_the_same_from_the_file(runs, fmt):
    live, loaded = runs
    text = _console(live, fmt)
    assert "failed" in text and "trace (device us from race start)" in text
    assert _console(loaded, fmt) == text


def test_junit_metrics_and_html_are_the_same_from_the_file(runs):
    live, loaded = runs
    assert run_junit(loaded) == run_junit(live) and "<failure" in run_junit(live)
    assert metrics_text(loaded) == metrics_text(live)
    assert report_html(loaded, source="r.json") == report_html(live, source="r.json")


def test_vcd_and_perfetto_are_the_same_from_the_file(runs):
    live, loaded = runs
    when = datetime(2026, 1, 2, tzinfo=timezone.utc)
    vcds = list(run_vcds(live, when))
    assert len(vcds) == sum(r.race_count() for r in live.scenarios)
    assert list(run_vcds(loaded, when)) == vcds
    trace = run_perfetto(live)
    assert trace["traceEvents"] and run_perfetto(loaded) == trace


def test_what_only_some_runs_have_comes_back_from_the_file(runs, tmp_path):
    """A race's console lines, the reasons it was run again, a rig's view, and the signal that stopped the
    run: read back from a file that has them, the record writes them again, and JUnit shows the console."""
    _, loaded = runs
    doc = json.loads("".join(results_json_chunks(loaded)))
    race = doc["scenarios"][0]["results"][0]
    race |= {"reruns": ["the link was lost"], "rig": {"worst": {"timestamp_error_us": -12}},
             "console": [{"dev_us": 5, "host_us": 9, "text": "boot ok"}]}
    doc["scenarios"][0]["rig"] = {"timestamp_error_us": -12}
    doc["interrupted"] = {"signal": "SIGTERM", "not_run": 3}
    (tmp_path / "r.json").write_text(json.dumps(doc), encoding="utf-8")
    back = load_run(tmp_path / "r.json")
    assert json.loads(json_text(results_json(back))) == doc
    assert "console, race 0, +5 us: boot ok" in run_junit(back)
