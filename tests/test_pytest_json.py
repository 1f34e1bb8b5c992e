"""The pytest plugin's --hil-json: the same results JSON as `unohil run --json` (the report, compare and the
store read it alike), one file from every xdist worker."""
from __future__ import annotations

import json

from unohil.harness.cli import main
from unohil.harness.report.results_json import SCHEMA_VERSION, read_results
from tests.test_pytest_plugin import SCENARIOS, make

WRONG = SCENARIOS.replace("verdict: {loser: b, reason: false_start}", "verdict: {loser: a, reason: false_start}")


def _shape(doc: dict) -> list:
    """What a run's document says of each scenario, whoever wrote it (sorted: workers finish in any order)."""
    return sorted((s["name"], s["status"], s["unit"], len(s["results"]),
                   [(r["index"], r["status"], r["verdicts"], r["latency"], len(r["events"])) for r in s["results"]])
                  for s in doc["scenarios"])


def test_pytest_writes_the_json_unohil_run_writes(pytester, tmp_path):
    path = make(pytester, WRONG)
    result = pytester.runpytest("--hil-json", "out.json")
    result.assert_outcomes(passed=4, failed=1)
    doc = read_results(pytester.path / "out.json")
    assert main(["run", str(path), "--json", str(tmp_path / "run.json"), "-q", "--store", "off"]) == 1
    run = json.loads((tmp_path / "run.json").read_text())
    assert doc["schema"] == SCHEMA_VERSION and doc["tool"] == "unohil"
    # pytest makes a sweep's points items of their own: a scenario result each
    assert [s["name"] for s in doc["scenarios"]].count("small sweep") == 3
    merged = {s["name"]: s for s in run["scenarios"]}
    assert [x for x in _shape(doc) if x[0] != "small sweep"] == \
           [x for x in _shape(run) if x[0] != "small sweep"]
    assert doc["summary"]["failed"] == run["summary"]["failed"] == 1 and doc["summary"]["races"] == 5
    assert [d["kind"] for d in doc["devices"]] == ["showdown"] and doc["devices"][0]["boot_id"]
    assert merged["small sweep"]["races"] == 3
    # the report and compare read it as they read run's
    assert main(["report", str(pytester.path / "out.json"), "-o", str(tmp_path / "r.html")]) == 0
    assert "false start by B" in (tmp_path / "r.html").read_text()
    assert main(["compare", str(tmp_path / "run.json"), str(pytester.path / "out.json")]) == 0


def test_xdist_workers_write_one_file(pytester):
    make(pytester)
    result = pytester.runpytest_subprocess("-n", "2", "--hil-json", "out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)
    doc = read_results(pytester.path / "out.json")
    assert doc["summary"]["passed"] == 5 and doc["summary"]["races"] == 5
    assert sorted(s["name"] for s in doc["scenarios"]) == ["A wins", "false start by B"] + ["small sweep"] * 3
    assert len(doc["devices"]) == 2          # each worker's own emulator
    assert doc["health"]["frames_rx"] == sum(d["health"]["frames_rx"] for d in doc["devices"])


def test_a_pytest_session_is_recorded_in_the_store(pytester, store_url):
    make(pytester, WRONG)
    pytester.runpytest("--hil-store", store_url).assert_outcomes(passed=4, failed=1)
    from unohil.harness.store.backend import Store
    with Store.open(store_url) as store:
        assert store.rows("SELECT command, scenarios, passed, failed, races FROM runs") == [("pytest", 5, 4, 1, 5)]
        assert store.rows("SELECT kind FROM units") == [("showdown",)]
