"""The judge on the protocol decisions that concern it (SPEC 12, PR-1 and PR-2): a timer event
stamped late by a correct unit, and a device time that equals NONE_U32."""
from __future__ import annotations

import pytest

from unohil.harness import Driver
from unohil.harness.run import judge
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.harness.scenarios.model import Matcher
from unohil.harness.scenarios.units import UNITS
from unohil.protocol import NONE_I32, NONE_U32
from unohil.emulator import showdown
from test_harness_scenarios import GOOD

# the library's clean win, with the expected reaction left open
RACE = GOOD.replace("reaction_a_us: 180000}", "reaction_a_us: REACTION}\n  reaction: {a: REACTION}")


def run(reaction: int):
    (sc,) = loads(RACE.replace("REACTION", str(reaction)), "t.yaml")
    with Driver.open("emu://showdown?clock=virtual") as d:
        return Runner(d).run(sc)


@pytest.fixture
def green_stamped(monkeypatch):
    """A unit that stamps SD_GREEN (and what comes with it) by `by` us off its scheduled time."""
    original = showdown.Showdown._green

    def stamp(by: int):
        def green(self, t):
            core = self.core
            saved, core._stamp = core._stamp, t + by
            try:
                original(self, t)
            finally:
                core._stamp = saved
        monkeypatch.setattr(showdown.Showdown, "_green", green)
    return stamp


def test_a_unit_that_stamps_green_late_passes_within_exactly_its_lateness(green_stamped):
    green_stamped(7)
    res = run(180_000)
    assert res.status == "pass", res.races[0].failures
    v = res.races[0].verdicts[0]
    assert v["reaction_a_us"] == 180_007                       # counted from the scheduled green
    failed = run(180_000 - 1)                                  # 8 us off: more than the lateness
    assert failed.status == "fail"
    assert any("reaction_a_us" in f for f in failed.races[0].failures)


def test_a_timer_event_stamped_early_fails(green_stamped):
    green_stamped(-3)
    res = run(180_000 - 3)
    assert res.status == "fail"
    assert any("SD_GREEN stamped 3 us before its scheduled time" in f for f in res.races[0].failures)


def test_a_punctual_unit_gets_no_tolerance():
    assert run(180_000).status == "pass"
    assert run(180_001).status == "fail"


def test_a_press_at_device_time_0xffffffff_is_a_time_not_none():
    """PR-2: press_a_us = 0xFFFFFFFF with reaction_a_us set is a press; press_b_us is none."""
    boot = NONE_U32 - 5_000_000
    with Driver.open(f"emu://showdown?clock=virtual&boot_time_us={boot}") as d:
        for name in ("countdown_min_us", "countdown_max_us"):
            d.config_set(name, 3_000_000)
        d.input("load_cards", value=1)
        green = NONE_U32 - 200_000
        d.inject(green - 3_000_000, "timer")
        d.inject(NONE_U32, "paddle_a")
        v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 10_000_000, "verdict")
    m = v.msg
    assert (m.press_a_us, m.reaction_a_us, m.press_b_us, m.reaction_b_us) == (NONE_U32, 200_000, NONE_U32, NONE_I32)
    named = judge.named_fields(v, UNITS["showdown"], start=0)
    assert named["press_a_us"] == NONE_U32 and named["press_b_us"] is None
    assert named["decisive_us"] == NONE_U32                       # always a time
    assert judge.latency(v, None)["device_us"] == 1000            # the tie window, across the wrap
    none = Matcher("eq", (NONE_U32,), label="none")               # a "none" expectation must not match it
    assert judge._match_fields(v, {"press_a_us": none}, 0, UNITS["showdown"])
    assert not judge._match_fields(v, {"press_b_us": none}, 0, UNITS["showdown"])
