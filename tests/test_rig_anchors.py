"""Steps anchored on what the rig saw (seen_X, rig mode): a press counted from the green lamp as it lit, not from
the unit's SD_GREEN; refused where it cannot mean anything, skipped without a rig, a clear failure when the
capture never comes (harness/scenarios/units.py rig_anchors, harness/run/runner.py, harness/rig/unit.py)."""
from __future__ import annotations

import pytest

from unohil.harness.errors import ScenarioError
from unohil.harness.outcome import Outcome
from unohil.harness.rig.links import open_rig_unit
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.harness.scenarios.units import RIG_ANCHORS
from unohil.harness.session.driver import Driver
from test_harness_scenarios import GOOD

# the library's simplest race (a clean win for A), its press at AT, its verdict not tied to that time
RACE = GOOD.replace("at: green + 180000", "at: AT").replace(", reaction_a_us: 180000", "")


def _run(text: str, rig: str | None):
    (sc,) = loads(text, "seen.yaml")
    if rig is None:
        with Driver.open("emu://showdown") as d:
            return Runner(d).run(sc)
    d = open_rig_unit("emu://showdown", rig)
    try:
        return Runner(d).run(sc)
    finally:
        d.close()


def _reaction(result) -> int:
    return result.races[0].verdicts[0]["reaction_a_us"]


def test_the_anchors_are_the_watched_lines_of_the_reference_wiring():
    assert RIG_ANCHORS["showdown"] == {"seen_green": 16, "seen_red_a": 17, "seen_red_b": 18, "seen_launch": 19,
                                       "seen_go": 20}
    assert RIG_ANCHORS["launcher"] == {"seen_top": 16, "seen_card": 17, "seen_ding": 18}
    assert set(RIG_ANCHORS["flash"]) == {f"seen_player_{i}" for i in range(8)} | {"seen_buzzer"}


@pytest.mark.parametrize("path, reaction", [("", 180_000), ("delay_green=2ms", 182_000), ("delay=700us", 180_700)])
def test_a_press_from_the_lamp_as_seen_lands_after_the_lamps_own_delay(path, reaction):
    # the player reacts 180 ms after the lamp lights; a lamp 2 ms slow makes the unit count 182 ms
    result = _run(RACE.replace("AT", "seen_green + 180000"), f"emurig://?{path}")
    assert result.status is Outcome.PASS, result.races[0].failures
    assert _reaction(result) == reaction
    anchored_on_the_event = _run(RACE.replace("AT", "green + 180000"), f"emurig://?{path}")
    assert _reaction(anchored_on_the_event) == 180_000          # SD_GREEN knows nothing of the lamp


def test_without_a_rig_such_a_scenario_is_skipped_saying_why():
    result = _run(RACE.replace("AT", "seen_green + 180000"), None)
    assert result.status is Outcome.SKIP and not result.applicable
    assert result.error == "needs a rig (--rig URL): a step counts from what the rig sees (seen_green)"


def test_a_capture_that_never_comes_fails_the_race_naming_it():
    text = RACE.replace("AT", "seen_launch + 1000").replace("steps:", "timeout_us: 300000\nsteps:")
    result = _run(text, "emurig://")
    assert result.status is Outcome.FAIL
    assert "no seen_launch (the rig's capture of line 19, anchor of step at line 11" in result.races[0].failures[0]
    assert "within 300 ms (the scenario's timeout_us)" in result.races[0].failures[0]


@pytest.mark.parametrize("change, problem", [
    (("AT", "seen_lamp + 1000"), "unknown anchor 'seen_lamp'; the showdown has: beep, countdown_start, green, "
                                 "landing, launch, previous, seen_go, seen_green, seen_launch, seen_red_a"),
    (("AT", "seen_green + 1000\nexpect:\n  verdict: {press_a_us: seen_green + 1000}\n  x"),
     "an expected time counts from the unit's own events, not from what the rig saw (seen_green)"),
])
def test_a_rig_anchor_where_it_means_nothing_is_one_error_at_its_place(change, problem):
    text = RACE.replace(*change)
    if "\n  x" in text:
        text = text.split("\n  x")[0] + "\n"
    with pytest.raises(ScenarioError) as exc:
        loads(text, "seen.yaml")
    assert problem in str(exc.value) and "seen.yaml:" in str(exc.value)
