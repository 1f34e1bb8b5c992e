"""The judge's tolerance for a unit that stamps its timers late (SPEC 3.1, PR-1), per field, per anchor kind,
one way: on emu://showdown?timer_lag_us=2000 (every timer event stamped 2000 us after its scheduled time),
a time counted from an input-caused event (countdown_start) is exact, so 1 us off fails; a press counted from
a timer event (green) lands up to 2000 us late, and only that lateness, only that way, passes."""
from __future__ import annotations

import pytest

from unohil.harness import Driver
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads

from test_harness_scenarios import GOOD

LAG = 2000
# A 2 s countdown; A presses 180 ms after green, B 500 us after A: a tie, the line decides at A + 250 ms.
SCENARIO = GOOD.replace("seed: 5\n", "").replace("at: green + 180000", "at: ANCHOR + OFFSET_A\n  - press: paddle_b\n"
                                                     "    at: previous + 500").replace(
    "verdict: {loser: b, reason: first_press, reaction_a_us: 180000}", "verdict: {FIELD}")
EXACT = {"ANCHOR": "countdown_start", "OFFSET_A": "2180000"}
TIMER = {"ANCHOR": "green", "OFFSET_A": "180000"}


def run(anchoring: dict, field: str, lag: int = LAG):
    text = SCENARIO.replace("FIELD", field)
    for k, v in anchoring.items():
        text = text.replace(k, v)
    (sc,) = loads(text, "t.yaml")
    with Driver.open(f"emu://showdown?clock=virtual&timer_lag_us={lag}") as d:
        res = Runner(d).run(sc)
    return res.status, [f for r in res.races for f in r.failures]


# Each field's right value when the presses count from countdown_start: green at +2 s, A at +2.18 s, B 500 us
# later (the decisive press of a tie), the verdict knowable when the cards land (A + flight_us 250 ms).
RIGHT = {
    "green_us": "countdown_start + 2000000",
    "press_b_us": "countdown_start + 2180500",
    "decisive_us": "countdown_start + 2180500",
    "knowable_us": "countdown_start + 2430000",
}


def off(field: str, by: int) -> str:
    anchor, offset = RIGHT[field].split(" + ")
    return f"{field}: {anchor} + {int(offset) + by}"


@pytest.mark.parametrize("field", [*RIGHT, "reaction_a_us"])
@pytest.mark.parametrize("by", [-LAG, -1, 1, LAG])
def test_from_an_input_caused_anchor_every_field_is_exact_on_a_late_stamping_unit(field, by):
    wrong = f"reaction_a_us: {180000 + by}" if field == "reaction_a_us" else off(field, by)
    status, said = run(EXACT, wrong)
    assert status == "fail" and said and said[0].startswith(f"verdict[0].{field}: expected"), said
    assert "within" not in said[0], said       # no slack was given


@pytest.mark.parametrize("field", [*RIGHT, "reaction_a_us"])
def test_from_an_input_caused_anchor_the_right_value_passes_on_either_unit(field):
    right = "reaction_a_us: 180000" if field == "reaction_a_us" else f"{field}: {RIGHT[field]}"
    for lag in (0, LAG):
        assert run(EXACT, right, lag) == ("pass", [])


def test_a_reaction_to_a_press_from_a_timer_event_is_longer_by_the_lateness_never_shorter():
    """"the press lands L late and its reaction is L longer" (SPEC 3.1): 182000 us, judged within
    [expected, expected + L], on the verdict's field and on reaction:."""
    for key in ("verdict: {reaction_a_us: %d}", "reaction: {a: %d}"):
        field = key.replace("verdict: {", "").rstrip("}")

        def judged(want):
            text = SCENARIO.replace("  verdict: {FIELD}", "  " + key % want)
            for k, v in TIMER.items():
                text = text.replace(k, v)
            (sc,) = loads(text, "t.yaml")
            with Driver.open(f"emu://showdown?clock=virtual&timer_lag_us={LAG}") as d:
                return Runner(d).run(sc).status
        assert [judged(w) for w in (180000, 181000, 182000)] == ["pass"] * 3, field
        assert [judged(w) for w in (179999, 182001)] == ["fail"] * 2, field


@pytest.mark.parametrize("field", ["press_b_us", "decisive_us", "knowable_us"])
def test_a_time_the_press_from_a_timer_event_moved_may_be_later_by_the_lateness_never_earlier(field):
    """The field expected from an input-caused anchor: up to L after it (the press landed late), not before."""
    assert run(TIMER, off(field, 0))[0] == "pass"          # L late
    assert run(TIMER, off(field, LAG))[0] == "pass"        # on time
    status, said = run(TIMER, off(field, -1))             # L + 1 late
    assert status == "fail" and said[0].startswith(f"verdict[0].{field}: expected"), said
    assert "within 0 to +2000 us" in said[0], said
    assert run(TIMER, off(field, LAG + 1))[0] == "fail"    # 1 us early


@pytest.mark.parametrize("field", ["press_b_us", "decisive_us"])
def test_a_press_and_its_expectation_from_the_same_timer_event_are_exact(field):
    assert run(TIMER, f"{field}: green + 180500") == ("pass", [])
    for wrong in ("green + 180499", "green + 180501"):
        status, said = run(TIMER, f"{field}: {wrong}")
        assert status == "fail" and "within" not in said[0], said


def test_a_scheduled_time_expected_from_its_timer_event_may_be_earlier_by_the_lateness_never_later():
    """green_us carries the scheduled green (SPEC 3.1), the green anchor its header time, up to L after it."""
    assert run(TIMER, "green_us: green") == ("pass", [])
    status, said = run(TIMER, "green_us: green + 1")
    assert status == "fail" and "within -2000 to +0 us" in said[0], said
    assert run(TIMER, "green_us: green", lag=0) == ("pass", [])
    assert run(TIMER, "green_us: green + 1", lag=0)[0] == "fail"


def test_a_time_from_another_timer_event_than_the_press_may_be_off_by_the_lateness_either_way():
    """knowable_us (A's press + flight) from the landing's header time: the landing's own lateness and
    the press's, each up to L: within L either way, and no more."""
    assert run(TIMER, "knowable_us: landing") == ("pass", [])
    assert run(TIMER, "knowable_us: {min: landing, max: landing + 2000}") == ("pass", [])
    assert run(TIMER, "knowable_us: landing + 2001")[0] == "fail"
