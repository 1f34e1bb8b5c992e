"""What `unohil run` prints where no terminal is: a line per scenario, steady progress lines, a summary;
no number split, durations in human units (exact where it matters), names escaped."""
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from unohil.harness.report.console import LiveReport, choose_format, print_table, scenario_table
from unohil.harness.run.results import RaceResult, ScenarioResult
from unohil.harness.scenarios.load import loads
from unohil.harness.text import duration, printable

ROOT = Path(__file__).resolve().parent.parent
TIES = ROOT / "fixtures" / "scenarios" / "showdown" / "ties.yaml"


def unohil(*args, env=None):
    """The CLI as CI runs it: stdout a pipe, no COLUMNS, no tty."""
    e = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "unohil.harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env=e, timeout=300)


@pytest.mark.parametrize("us, text", [
    (0, "0 us"), (37, "37 us"), (999, "999 us"), (1000, "1 ms"), (1500, "1.5 ms"), (250000, "250 ms"),
    (200001, "200.001 ms"), (1000000, "1 s"), (1500000, "1.5 s"), (1234567, "1234.567 ms"), (-2000, "-2 ms"),
    (None, "-")])
def test_durations_read_in_human_units_and_never_lose_a_microsecond(us, text):
    assert duration(us) == text


@pytest.mark.parametrize("us, text", [(24.6, "24.6 us"), (1234.5, "1.23 ms"), (999.9, "1 ms"),
                                      (1234567.8, "1.23 s"), (float("nan"), "-")])
def test_statistics_round_to_three_significant_digits(us, text):
    assert duration(us, exact=False) == text


def test_control_characters_are_written_visibly():
    assert printable("plain name") == "plain name"
    assert printable("a\x1b[31mb\x07\n\u202ec\x9b") == "a\\x1b[31mb\\x07\\n\\u202ec\\x9b"
    assert printable("caf\u00e9 \u00a0ok") == "caf\u00e9 \u00a0ok"


def test_without_a_tty_each_scenario_is_one_line_as_it_finishes_then_a_summary(tmp_path):
    out = tmp_path / "r.json"
    run = unohil("run", str(TIES), "--json", str(out))
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    lines = run.stdout.splitlines()
    assert "┃" not in run.stdout and "━" not in run.stdout          # no table in a log
    per_scenario = [ln for ln in lines if re.match(r"^(pass|fail|skip|error|link-error|reset) ", ln)]
    assert len(per_scenario) == len(doc["scenarios"])
    for sc, ln in zip(doc["scenarios"], per_scenario):
        assert ln.startswith(f"{sc['status']:<10}{sc['name']}  [showdown, ")
    one = next(ln for ln in per_scenario if ln.startswith("pass      B half a window late"))
    assert "line_tiebreak: loser b" in one and "proc 0 us" in one
    assert "reaction a 170 ms, b 170.5 ms" in one
    assert re.search(r"^\d+ passed, 0 failed, \d+ skipped; \d+ races in ", lines[-1])


def test_progress_lines_come_at_the_asked_pace(tmp_path):
    run = unohil("run", str(TIES), "--progress-every", "0")
    races = int(re.search(r"; (\d+) races in", run.stdout).group(1))
    progress = [ln for ln in run.stdout.splitlines() if ln.startswith("progress: ")]
    assert len(progress) == races            # 0: a line after every race
    assert progress[-1].startswith(f"progress: {races}/")
    quiet = unohil("run", str(TIES))          # the default 30 s: none in a run this short
    assert not [ln for ln in quiet.stdout.splitlines() if ln.startswith("progress: ")]


def test_progress_lines_are_paced_by_the_run_clock():
    clock = {"t": 100.0}
    out = io.StringIO()
    live = LiveReport(Console(file=out, width=80), "lines", races=10, scenarios=1, every_s=30,
                      clock=lambda: clock["t"])
    for _ in range(10):
        clock["t"] += 10                     # each race takes 10 s of run time
        live.race_done()
    progress = [ln for ln in out.getvalue().splitlines() if ln.startswith("progress: ")]
    assert progress == [f"progress: {n}/10 races, 0/1 scenarios done, 0 not passed, {s} elapsed"
                        for n, s in ((3, "30.0 s"), (6, "1 min 00 s"), (9, "1 min 30 s"))]


def _result(name: str, reaction_b: int) -> ScenarioResult:
    sc = dataclasses.replace(loads(TIES.read_text(), str(TIES))[0], name=name)
    race = RaceResult(index=0, env={}, verdicts=[{"reason": "line_tiebreak", "loser": "b", "reaction_a_us": 200000,
                                                  "reaction_b_us": reaction_b}],
                      latency={"device_us": 250000, "processing_us": 0, "host_us": 250000})
    return ScenarioResult(sc, "emu://showdown", races=[race])


def test_the_rich_table_in_80_columns_splits_no_number_and_no_name_escape():
    out = io.StringIO()
    console = Console(file=out, width=80)
    results = [_result("long name " * 8 + "\x1b[2J", 200000 + i) for i in range(3)]
    print_table(console, scenario_table(results))
    text = out.getvalue()
    assert "\x1b" not in text and "\\x1b" in text
    assert "b 200 ms" in text and "b 200.001 ms" in text and "b 200.002 ms" in text
    assert "250 ms" in text and "…" not in text


def test_auto_is_rich_on_a_terminal_only():
    assert choose_format("auto", Console(file=io.StringIO())) == "lines"
    assert choose_format("auto", Console(file=io.StringIO(), force_terminal=True)) == "rich"
    assert choose_format("lines", Console(file=io.StringIO(), force_terminal=True)) == "lines"


def test_rich_without_a_tty_keeps_numbers_whole(tmp_path):
    out = tmp_path / "r.json"
    run = unohil("run", str(TIES), "--format", "rich", "--json", str(out))
    assert run.returncode == 0, run.stderr
    assert "┃ scenario" in run.stdout
    for sc in json.loads(out.read_text())["scenarios"]:
        for r in sc["results"][:1]:
            for v in r["verdicts"][-1:]:
                for side in "ab":
                    if len(sc["results"]) == 1 and f"reaction_{side}_us" in v:
                        assert f"{side} {duration(v[f'reaction_{side}_us'])}" in run.stdout


def test_control_characters_in_a_name_never_reach_the_terminal_raw(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(TIES.read_text().replace("name: exact tie, the line puts both cards on A's side",
                                             'name: "\\e[2J\\e]0;pwned\\aexact tie"', 1))
    run = unohil("run", str(path))
    assert "\x1b" not in run.stdout + run.stderr and "\x07" not in run.stdout + run.stderr
    assert "\\x1b[2J" in run.stdout + run.stderr
