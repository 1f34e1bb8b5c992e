"""The harness logs through `logging` under one tree ("unohil"), so pytest's log options, caplog and
per-test log files show what a unit was told and said and how each race ended."""
from __future__ import annotations

import logging

from unohil.harness import Driver
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from test_harness_scenarios import GOOD

SCENARIO = GOOD.replace("verdict: {loser: b,", "verdict: {loser: a,")     # a claim the unit will not bear out


def test_races_frames_and_failures_are_logged_under_unohil(caplog):
    (sc,) = loads(SCENARIO, "log.yaml")
    with caplog.at_level(logging.DEBUG, logger="unohil"):
        with Driver.open("emu://showdown?clock=virtual", name="unit-a") as d:
            res = Runner(d).run(sc)
    assert res.status == "fail"
    records = [r for r in caplog.records if r.name.startswith("unohil.")]
    text = [r.getMessage() for r in records]
    assert any(r.name == "unohil.session" and r.levelno == logging.DEBUG and "unit-a tx #" in r.getMessage()
               and "HELLO" in r.getMessage() for r in records)
    assert any("unit-a rx #" in t and "SD_VERDICT" in t for t in text)
    assert "unit-a: scenario 'clean win' (log.yaml:2), 1 race(s)" in text
    (ended,) = [r for r in records if r.name == "unohil.run" and "race 0" in r.getMessage()]
    assert ended.levelno == logging.INFO       # a result, not a fault of the harness
    assert "'clean win' race 0: fail" in ended.getMessage() and "verdict[0].loser" in ended.getMessage()


def test_nothing_is_formatted_when_debug_is_off(caplog):
    with caplog.at_level(logging.INFO, logger="unohil"):
        with Driver.open("emu://showdown?clock=virtual") as d:
            d.status()
    assert not [r for r in caplog.records if r.levelno == logging.DEBUG]
