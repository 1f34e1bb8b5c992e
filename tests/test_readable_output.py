"""Words that cannot be misread: a verdict names the side or player it is about (`first_press: loser b`,
`player 1: 150 ms`), and tables printed where no terminal is (a pipe, a CI log) are as wide as their
content, never cutting a name or wrapping a line."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from unohil.harness.measure.latency import LINK_LABELS, UNIT_LABELS
from unohil.harness.report.verdicts import outcome_text, reaction_text

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "fixtures" / "scenarios"


def piped(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI as CI runs it: stdout a pipe, no COLUMNS, no tty."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    return subprocess.run([sys.executable, "-m", "unohil.harness.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("kind, verdict, text", [
    ("showdown", {"reason": "first_press", "loser": "b"}, "first_press: loser b"),
    ("showdown", {"reason": "line_tiebreak", "loser": "none"}, "line_tiebreak: loser none"),
    ("flash", {"reason": "slowest", "slowest": 1}, "slowest player 1"),
    ("flash", {"reason": "slowest_tie", "slowest": 2}, "slowest_tie: slowest player 2"),
    ("launcher", {"fired": 6}, "fired 6"),
    ("launcher", {}, ""),
])
def test_an_outcome_names_its_field(kind, verdict, text):
    assert outcome_text(kind, verdict) == text


def test_reactions_name_their_side_or_player():
    assert reaction_text({"reaction_a_us": 200000, "reaction_b_us": 170500}) == "a 200 ms, b 170.5 ms"
    assert reaction_text({"reaction_us": [None, 150000, 240001]}, " / ") == "player 1: 150 ms / player 2: 240.001 ms"
    assert reaction_text({"reaction_a_us": None}) == ""


def test_the_lines_of_a_run_never_show_a_bare_side_or_player_number():
    """The Showdown's `first_press b` read as "b won"; the Flash's `reaction 1 150 ms` as 1150 ms."""
    run = piped("run", str(LIBRARY / "showdown" / "ties.yaml"), str(LIBRARY / "flash" / "buzzer.yaml"))
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("pass ")]
    showdown = [ln for ln in lines if "[showdown, 1/1 races]" in ln]
    flash = [ln for ln in lines if "[flash, 1/1 races]" in ln]
    assert showdown and flash
    for ln in showdown:
        assert re.search(r"\]  [a-z_]+: loser (a|b|none)  ", ln), ln
        assert not re.search(r"\]  [a-z_]+ [ab]\b", ln), ln
    assert any("reaction " in ln for ln in flash)
    for ln in flash:
        assert not re.search(r"reaction \d [\d.]+ ms", ln), ln
        if "reaction " in ln:
            assert re.search(r"  reaction player \d: [\d.]+ ms(, player \d: [\d.]+ ms)*(  |$)", ln), ln


def decision_titles(key: str) -> dict[str, str]:
    """A kind's decisions (or the protocol's) as the coverage table labels them (id -> id and text), read from
    protocol/decisions.yaml."""
    doc = yaml.safe_load((ROOT / "protocol" / "decisions.yaml").read_text())
    return {d["id"]: f"{d['id']} {d['text']}" for d in doc[key]}


def test_conform_in_a_pipe_cuts_no_decision_name_and_ends_on_one_line():
    run = piped("conform", "--device", "emu://showdown", "--quick", "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    mine, protocol = decision_titles("showdown"), decision_titles("protocol")
    shown = {i: t for i, t in protocol.items() if f"│ {i} " in out}
    assert shown and any(len(t) > 80 for t in [*mine.values(), *shown.values()])   # what 80 columns used to cut
    for title in [*mine.values(), *shown.values()]:
        assert title in out, title
    assert "…" not in out
    last = out.splitlines()[-1]
    assert re.fullmatch(r"\d+ passed, 0 failed, \d+ skipped in [\d.]+ s: PARTIAL \(quick run: \d+ scenarios not run\)",
                        last), last


def test_bench_in_a_pipe_cuts_no_figure_name():
    run = piped("bench", "--races", "4", "--kind", "showdown")
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    labels = [f"showdown: {label}" for label in UNIT_LABELS.values()] + list(LINK_LABELS.values())
    for label in labels:
        assert re.search(rf"│ {re.escape(label)} +│", out), label
    assert "…" not in out
    rows = [ln for ln in out.splitlines() if ln.startswith(("┃", "│"))]
    assert len({len(ln) for ln in rows}) == 1      # every row of the table one line, of one width
