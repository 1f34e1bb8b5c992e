"""`unohil run -j N`: the units spread over worker processes give the one-process run's report (the whole
library, JSON, JUnit and console compared); units that are not virtual-clock emulators stay in one process,
saying why; a signal keeps the scenarios that finished."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree as ET

import pytest

from unohil.harness.run.processes import Stream, deal, streams_for, why_not_parallel

from test_outputs import scenario_file

CLI = [sys.executable, "-m", "unohil.harness.cli"]
TIMING = {"wall_s", "started_unix", "duration_s"}     # what differs from one run to the next however it ran
VIRTUAL = "emu://showdown?clock=virtual"


def _untimed(node):
    if isinstance(node, dict):
        return {k: _untimed(v) for k, v in node.items() if k not in TIMING}
    if isinstance(node, list):
        return [_untimed(v) for v in node]
    return node


def _run(tmp_path: Path, jobs: int, *extra: str) -> tuple[subprocess.CompletedProcess, dict, str]:
    out_json, out_xml = tmp_path / f"j{jobs}.json", tmp_path / f"j{jobs}.xml"
    proc = subprocess.run(CLI + ["run", "-j", str(jobs), "--format", "lines", "--json", str(out_json),
                                 "--junit", str(out_xml), *extra], capture_output=True, text=True, timeout=600)
    junit = re.sub(r' time="[^"]*"', "", out_xml.read_text())
    return proc, json.loads(out_json.read_text()), junit


def test_two_processes_give_the_one_process_report_on_the_whole_library(tmp_path):
    one, doc1, junit1 = _run(tmp_path, 1)
    two, doc2, junit2 = _run(tmp_path, 2)
    assert one.returncode == two.returncode == 0, one.stdout + one.stderr + two.stdout + two.stderr
    assert len(doc1["devices"]) == 3 and doc1["summary"]["races"] > 300    # every kind's part of the library
    assert _untimed(doc2) == _untimed(doc1)
    assert junit2 == junit1
    # the console: the same scenario lines (one process interleaves its units' lines; -j shows them in the
    # run's order) and the same totals, apart from how long it took
    lines1, lines2 = one.stdout.splitlines(), two.stdout.splitlines()
    assert sorted(lines1[:-1]) == sorted(lines2[:-1])
    assert re.sub(r" in [\d.]+ s$", "", lines1[-1]) == re.sub(r" in [\d.]+ s$", "", lines2[-1])
    assert "one process" not in two.stdout


def test_units_that_are_not_virtual_clock_emulators_stay_in_one_process():
    args = SimpleNamespace(rig=None, attended=False, firmware=None, lifecycle=None, console=None, trace=None)
    assert why_not_parallel([VIRTUAL, "emu://flash?clock=virtual"], args) is None
    assert "not an emulator on the virtual clock" in why_not_parallel(["emu://showdown?clock=real"], args)
    assert "not an emulator on the virtual clock" in why_not_parallel(["/dev/ttyACM0"], args)
    assert "not an emulator on the virtual clock" in why_not_parallel(["emu://showdown"], args)
    assert why_not_parallel([VIRTUAL], SimpleNamespace(**{**vars(args), "trace": "t"})).startswith("--trace")


def test_asking_for_processes_a_run_cannot_use_says_why_in_one_line(tmp_path):
    path = scenario_file(tmp_path, ("a", 500_000, 1))
    proc = subprocess.run(CLI + ["run", "-j", "2", "--format", "lines", "--trace", str(tmp_path / "t"),
                                 "--device", VIRTUAL, "--device", VIRTUAL, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = [line for line in proc.stdout.splitlines() if line.startswith("-j 2")]
    assert said == ["-j 2: one process: --trace drives its units from this process"]


def test_a_bad_job_count_is_a_usage_error(capsys):
    from unohil.harness.cli.app import main
    for bad in ("0", "-1", "two"):
        try:
            code = main(["run", "-j", bad])
        except SystemExit as exc:
            code = exc.code
        assert code == 2
        assert "give how many processes, 1 or more" in capsys.readouterr().err


def test_a_units_scenarios_stay_together_in_order_and_the_units_are_dealt_by_races():
    def sc(unit, races):
        return SimpleNamespace(unit=unit, races=[None] * races)
    scenarios = [sc("showdown", 5), sc("flash", 1), sc("showdown", 2), sc("launcher", 3), sc("rig", 1),
                 sc("showdown", 1)]
    streams, unserved = streams_for(scenarios, ["s0", "s1", "f"], ["showdown", "showdown", "flash"])
    assert unserved == [3, 4]
    assert [(s.url, [i for i, _ in s.scenarios]) for s in streams] == [("s0", [0, 5]), ("s1", [2]), ("f", [1])]
    groups = deal(streams, 2)
    assert [[s.url for s in g] for g in groups] == [["s0"], ["s1", "f"]]
    assert deal([Stream(0, "u", [(0, sc("showdown", 1))])], 8) == [[Stream(0, "u", [(0, sc("showdown", 1))])]]


def test_a_signal_stops_the_workers_and_keeps_the_finished_scenarios(tmp_path):
    path = scenario_file(tmp_path, *[(f"s{n}", 500_000, 400) for n in range(16)])
    out_json = tmp_path / "r.json"
    log = tmp_path / "out.txt"
    with open(log, "w") as fh:
        proc = subprocess.Popen(CLI + ["run", "-j", "2", "--format", "lines", "--progress-every", "1000",
                                       "--json", str(out_json), "--junit", str(tmp_path / "r.xml"),
                                       "--device", VIRTUAL, "--device", VIRTUAL, str(path)],
                                stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300           # a bound for a loaded host, never asserted on
        while log.read_text().count("[showdown,") < 2:
            assert proc.poll() is None, "the run ended before the signal: " + log.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=300) == 130, log.read_text()
    doc = json.loads(out_json.read_text())
    assert doc["interrupted"]["signal"] == "SIGINT" and doc["interrupted"]["not_run"] > 0
    names = [s["name"] for s in doc["scenarios"]]
    assert len(names) >= 2 and len(names) + doc["interrupted"]["not_run"] == 16
    finished = [s for s in doc["scenarios"] if len(s["results"]) == 400]
    assert len(finished) >= 2 and all(r["status"] == "pass" for s in finished for r in s["results"])
    assert int(ET.parse(tmp_path / "r.xml").getroot().get("tests")) == len(names)


@pytest.mark.slow
def test_five_hundred_served_units_pass_in_one_run(tmp_path):
    """Past select()'s 1024 descriptors (the run's units, their claims and locks): every unit opens, in
    parallel, and the scenarios pass. (2,000: docs/performance.md, "Many units in one run".)"""
    units = 500
    server = subprocess.Popen([sys.executable, "-m", "unohil.emulator", "showdown", "--pty", "--count", str(units),
                               "--clock", "virtual"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        paths = [server.stdout.readline().strip() for _ in range(units)]
        assert all(p.startswith("/dev/") for p in paths)
        path = scenario_file(tmp_path, *[(f"s{n}", 500_000, 1) for n in range(units)])
        proc = subprocess.run(CLI + ["run", "-q", "--format", "lines", "--json", str(tmp_path / "r.json"),
                                     *[a for p in paths for a in ("--device", p)], str(path)],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        doc = json.loads((tmp_path / "r.json").read_text())
        assert len(doc["devices"]) == units and not any(d.get("error") for d in doc["devices"])
        assert doc["summary"]["passed"] == units
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
