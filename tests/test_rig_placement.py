"""Stimuli that cannot land on their exact microsecond, judged as what they are: a repetition heard on a
link with transit time is still sent in time, and a rig's edge, mapped through two clocks, is matched within
its placement, its landing error is allowed for like a host-timed press's, and a scenario that needs exact
microseconds is skipped through it (harness/run/runner.py, harness/run/judge.py, harness/rig/unit.py).

Both on the virtual clock: the link is told to be heard as a real one (wait until the mapped time plus the
transit margin), and the rig's placement is set as a bench's two clock syncs would give it."""
from __future__ import annotations

from pathlib import Path

from unohil.harness import Driver
from unohil.harness.outcome import Outcome
from unohil.harness.rig.links import open_rig_unit
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_file

LIBRARY = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


def _scenario(path: str, name: str):
    return next(s for s in load_file(str(LIBRARY / path)) if s.name.startswith(name))


def test_a_repetition_until_an_event_is_sent_in_time_on_a_link_with_transit_time():
    # "press until cards come out": each repetition is decided after hearing the unit up to its lead; on a
    # real link that hearing lasts the transit margin longer, which once made every second press too late
    sc = _scenario("launcher/hits.yaml", "Wild Hit-Fire")
    with Driver.open("emu://launcher?clock=virtual&faults=delay=300us..300us") as d:
        d.link.virtual = False              # heard as a real link is: the mapped time plus the transit margin
        result = Runner(d).run(sc)
    assert [r.status for r in result.races] == [Outcome.PASS] * len(sc.races), \
        [(r.status, r.error) for r in result.races]


def test_the_emulated_rig_on_the_virtual_clock_places_edges_exactly():
    d = open_rig_unit("emu://showdown", "emurig://")
    try:
        assert d.stimulus_placement_us() == 0
    finally:
        d.close()


def _through(path: str, placement_us: int, sc):
    d = open_rig_unit("emu://showdown", f"emurig://?{path}")
    try:
        if placement_us:
            d.stimulus_placement_us = lambda: placement_us      # as a bench's two syncs would bound it
        return Runner(d).run(sc)
    finally:
        d.close()


def test_an_edge_landing_within_the_placement_is_matched_and_its_error_allowed_for():
    sc = _scenario("showdown/first_press.yaml", "clean win for A")       # reaction_a_us: 180000 exactly
    exact = _through("skew_paddle_a=3us", 0, sc)
    assert exact.status is Outcome.FAIL, "a 3 us late paddle must fail where edges land exactly"
    placed = _through("skew_paddle_a=3us", 5, sc)
    race = placed.races[0]
    assert placed.status is Outcome.PASS, race.failures
    assert 3 in race.timing_errors_us and max(map(abs, race.timing_errors_us)) == 3
    beyond = _through("skew_paddle_a=9us", 5, sc)
    assert beyond.status is Outcome.FAIL
    assert any("paddle_a" in f or "reaction_a_us" in f for f in beyond.races[0].failures), beyond.races[0].failures


def test_a_scenario_needing_exact_microseconds_is_skipped_through_an_inexact_rig():
    sc = next(s for s in load_file(str(LIBRARY / "showdown/ties.yaml")) if s.timing == "exact")
    result = _through("", 5, sc)
    assert result.status is Outcome.SKIP
    assert "land within 5 us of their time" in result.error
    assert _through("", 0, sc).status is Outcome.PASS


def test_waiting_for_a_time_already_past_still_reads_what_has_arrived():
    # the runner hears the unit to a race's end, then the rig to the same instant: by then the rig's time is
    # past, and its captures of that race sit in the link unread unless the wait reads what has arrived
    d = open_rig_unit("emu://flash", "emurig://")
    try:
        s = d.session
        s.rig.link.virtual = False          # heard as a real link is: the mapped time plus the transit margin
        at = s.rig_now() + 20_000
        s.edge(at, "player_0", "press")
        d.wait_until(round(s.rig_to_unit(at)) + 100_000)      # the shared clock moves on, the rig unread
        got: list = []
        s.rig.wait_until(at, collect=got)
        assert [(f.msg.NAME, f.dev_us) for f in got if f.msg.NAME == "RIG_CAPTURE"] == [("RIG_CAPTURE", at)]
    finally:
        d.close()
