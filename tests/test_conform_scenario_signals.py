"""conform stopped in its scenario phase (issue 31): SIGINT, SIGTERM or SIGHUP at a random moment
after the first scenario's check was announced, and SIGINT to a conform started in the background
(`cmd &` in a non-interactive shell: SIGINT inherited ignored), leave JSON and JUnit that hold every
check that finished; a scenario the signal cut short is kept, marked interrupted."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from test_outputs import scenario_file
from test_results_kept import CLI, ROOT, _check_lines, _kept

SCENARIOS = 60              # of 20 virtual-clock races each: a scenario phase of a second or two
SECTION = "7 Showdown unit"


def _conform(tmp_path: Path) -> list[str]:
    path = scenario_file(tmp_path, *((f"win {i}", 500_000, 20) for i in range(SCENARIOS)))
    return CLI + ["conform", "--device", "emu://showdown?clock=virtual", "--scenarios", str(path),
                  "--json", str(tmp_path / "c.json"), "--junit", str(tmp_path / "c.xml")]


def _in_scenarios(out: Path, proc, delay_s: float) -> list[tuple[str, str]]:
    """Waits for the first scenario's check, then delay_s more; the checks announced by then."""
    deadline = time.monotonic() + 120          # a generous bound for a loaded host, never asserted on
    while not any(name.startswith(SECTION) for _, name in _check_lines(out.read_text() if out.exists() else "")):
        assert proc.poll() is None, "conform ended before its scenario phase"
        assert time.monotonic() < deadline, "no scenario check announced"
        time.sleep(0.005)
    time.sleep(delay_s)
    assert proc.poll() is None, "conform ended before the signal: a shorter delay"
    return _check_lines(out.read_text())


def _scenario_checks_kept(doc: dict, name: str) -> None:
    """Every scenario check is a finished one (pass) or the one the signal cut short (interrupted, last);
    the scenarios not started are not reported as checks run."""
    ran = [c for c in doc["checks"] if c["section"] == SECTION]
    assert ran, "the signal came before any scenario finished"
    assert len(ran) < SCENARIOS, "conform ran every scenario: the signal changed nothing"
    assert {c["status"] for c in ran[:-1]} == {"pass"}
    assert ran[-1]["status"] in ("pass", "interrupted")
    assert doc["interrupted"] == f"interrupted by {name}" and doc["verdict"] != "CONFORMS"


@pytest.mark.parametrize("sig, status, seed", [(signal.SIGINT, 130, 1), (signal.SIGTERM, 143, 2),
                                               (signal.SIGHUP, 129, 3), (signal.SIGINT, 130, 4)])
def test_conform_stopped_in_its_scenarios_keeps_every_finished_check(tmp_path, sig, status, seed):
    delay_s = random.Random(seed).uniform(0, 0.4)
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        proc = subprocess.Popen(_conform(tmp_path), cwd=ROOT, stdout=fh, stderr=subprocess.PIPE, text=True)
        try:
            announced = _in_scenarios(out, proc, delay_s)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    name = signal.Signals(sig).name
    assert proc.returncode == status, err
    assert err.startswith(f"{name}: stopping after the check in progress")
    doc = _kept(tmp_path, announced)
    _scenario_checks_kept(doc, name)
    interrupted = [c.get("name") for c in ET.parse(tmp_path / "c.xml").getroot().iter("testcase")
                   if c.find("error") is not None and "interrupted" in (c.find("error").get("message") or "")]
    assert interrupted == [c["name"] for c in doc["checks"] if c["status"] == "interrupted"]


def test_conform_in_the_background_stopped_in_its_scenarios_keeps_every_finished_check(tmp_path):
    """`cmd &` in a non-interactive shell: SIGINT inherited ignored; conform installs its own handler."""
    seen = subprocess.run(["sh", "-c", "grep SigIgn: /proc/self/status & wait"], capture_output=True, text=True)
    assert int(seen.stdout.split()[1], 16) & (1 << (signal.SIGINT - 1)), "this sh starts `&` jobs as they are"
    out = tmp_path / "out.txt"
    script = '"$@" > "$OUT" 2> "$OUT.err" & echo $!; wait $!'
    shell = subprocess.Popen(["sh", "-c", script, "sh", *_conform(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "OUT": str(out)})
    try:
        pid = int(shell.stdout.readline())
        announced = _in_scenarios(out, shell, random.Random(5).uniform(0, 0.4))
        os.kill(pid, signal.SIGINT)
        shell.communicate(timeout=60)
    finally:
        shell.kill()
    assert shell.returncode == 130, Path(f"{out}.err").read_text()
    doc = _kept(tmp_path, announced)
    _scenario_checks_kept(doc, "SIGINT")
    assert json.loads((tmp_path / "c.json").read_text()) == doc
