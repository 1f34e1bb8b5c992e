"""The result store of a long run (harness/run/result_store.py): a scenario's races go to disk as it
ends and the run keeps its kept() form; every report drawn from that form says what the full result says."""
from __future__ import annotations

import json

import pytest

from unohil.harness.report.console import scenario_line, scenario_table
from unohil.harness.report.junit import junit_xml
from unohil.harness.report.results_json import results_json_chunks, scenario_json
from unohil.harness.report.run_record import RunRecord
from unohil.harness.report.verdicts import outcome_text
from unohil.harness.run.result_store import ResultStore
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.harness.session.driver import Driver

# four races, two of which fail (a reaction other than the one expected), and a one-race scenario
MIXED = """
- name: mixed
  unit: showdown
  seed: 5
  config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
  sweep: {r: [180000, 150000, 180000, 170000]}
  steps:
    - load: 2
    - press: timer
      at: start + 1000
    - press: paddle_a
      at: green + r
  expect:
    verdict: {loser: b, reason: first_press, reaction_a_us: 180000}
- name: one
  unit: showdown
  seed: 5
  config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
  steps:
    - load: 2
    - press: timer
      at: start + 1000
    - press: paddle_b
      at: green + 90000
  expect:
    verdict: {loser: a, reason: first_press}
"""


@pytest.fixture(scope="module")
def results():
    with Driver.open("emu://showdown?clock=virtual") as d:
        runner = Runner(d)
        return [runner.run(sc) for sc in loads(MIXED, "mixed.yaml")]


def _table_rows(results) -> list[list[str]]:
    table = scenario_table(results)
    return [[str(cell) for cell in col.cells] for col in table.columns]


def test_a_kept_result_reports_what_the_full_one_does(tmp_path, results):
    assert [r.status for r in results[0].races] == ["pass", "fail", "pass", "fail"]
    with ResultStore(tmp_path / "r.json", outcome_text, scenario_json) as store:
        kept = [store.put(r) for r in results]
        assert [len(k.races) for k in kept] == [2, 0]           # only the races that did not pass are held
        assert [k.race_count() for k in kept] == [4, 1] and [k.passed_count() for k in kept] == [2, 1]
        assert [str(scenario_line(k)) for k in kept] == [str(scenario_line(r)) for r in results]
        assert _table_rows(kept) == _table_rows(results)
        assert junit_xml("u", [k.record() for k in kept]) == junit_xml("u", [r.record() for r in results])
        for k, r in zip(kept, results):
            assert "".join(store.text(k)) == scenario_json(r)
            assert (k.latency_summary(), k.budget_summary()) == (r.latency_summary(), r.budget_summary())
        full = "".join(results_json_chunks(RunRecord(results)))
        from_store = "".join(results_json_chunks(RunRecord(kept, store=store)))
    assert json.loads(from_store)["summary"]["races"] == 5
    assert _no_duration(from_store) == _no_duration(full)
    assert list(tmp_path.iterdir()) == []           # the store's file never had a name


def _no_duration(text: str) -> dict:
    doc = json.loads(text)
    del doc["duration_s"]
    return doc


def test_a_store_that_cannot_be_written_keeps_the_results_whole(tmp_path, results, monkeypatch):
    """A full disk under the store: what was stored stays readable, the rest is kept in memory whole."""
    import os
    import unohil.harness.run.result_store as store_module
    with ResultStore(tmp_path / "r.json", outcome_text, scenario_json) as store:
        first = store.put(results[1])

        def full(*_a):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(store_module.os, "pwrite", full)
        second = store.put(results[0])
        monkeypatch.setattr(store_module.os, "pwrite", os.pwrite)
        assert store.failure == "No space left on device"
        assert second is results[0] and len(second.races) == 4
        text = "".join(results_json_chunks(RunRecord([first, second], store=store)))
    doc = json.loads(text)
    assert [len(s["results"]) for s in doc["scenarios"]] == [1, 4]
