"""The three libraries against right emulated units behind faulty lines (tools/fault_sweep.py): a
bounded sample of the sweep, and the reproductions of issue 29, each a race that failed a right unit
before recovery came before judgement. Virtual clock: the faults fall the same way on every run."""
import re

import pytest

from tools.fault_sweep import Job, jobs, main, run_job, sweep

REPRODUCTIONS = [
    (Job("showdown", "drop", "1e-2", 8), "sweep across the tie window, -2000 to +2000 us in 50 us steps"),
    (Job("showdown", "corrupt", "1e-2", 23), "three cards can never split evenly"),
    (Job("launcher", "corrupt", "1e-2", 0), "Wild Hit 4, four presses"),
    (Job("showdown", "mixed", "1e-2", 3), "sweep across the tie window, -2000 to +2000 us in 50 us steps"),
]


@pytest.mark.parametrize("job, failed_before", REPRODUCTIONS, ids=lambda x: x.url if isinstance(x, Job) else "")
def test_the_issue_reproductions_fail_no_race_of_a_right_unit(job, failed_before):
    t = run_job(job)
    assert t.wrong == [], f"{failed_before!r} and others: {t.wrong}"
    assert t.races["pass"] >= 25 and t.races["link-error"] > 0       # judged races, and faults that bit


def test_a_bounded_sweep_of_the_three_libraries_never_fails_or_errs_a_right_unit():
    todo = jobs(["showdown", "flash", "launcher"], ["corrupt", "drop", "mixed"], ["1e-2", "3e-2"], [101, 102])
    t = sweep(todo)
    assert t.wrong == [], t.wrong
    assert sum(t.races.values()) > 2000
    assert t.races["pass"] > 500 and t.races["link-error"] > 0       # the faults did bite


def test_the_tool_prints_the_counts_and_exits_0_when_nothing_was_judged_wrongly(capsys):
    assert main(["--seeds", "3", "--levels", "1e-2", "--faults", "mixed", "--libraries", "showdown", "-j", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    races = re.match(r"(\d+) races: ", last)                     # the Showdown library's races, as it grows
    assert races and int(races[1]) >= 190 and " 0 failed, " in last and last.endswith("(handshake failed)"), last
