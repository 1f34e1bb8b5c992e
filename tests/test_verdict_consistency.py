"""A verdict that contradicts itself fails `run` whatever the scenario names (SPEC PR-2, 7.3): press_x_us
is none exactly when reaction_x_us is, and a reaction that is set is press_x_us - green_us."""
from __future__ import annotations

from unohil.emulator.device import Device
from unohil.harness import Driver
from unohil.harness.run import judge
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.protocol import Frame, catalogue as cat, msg

from test_conform import _virtual
from test_harness_scenarios import GOOD

# B wins alone; the scenario names neither press_a_us nor reaction_a_us.
B_ALONE = GOOD.replace("seed: 5\n", "").replace("paddle_a\n    at: green + 180000", "paddle_b\n    at: countdown_start + 2200000") \
    .replace("verdict: {loser: b, reason: first_press, reaction_a_us: 180000}",
             "verdict: {loser: a, reason: first_press, reaction_b_us: 200000}")


class ReactionWithoutPress(Device):
    """Fills a side's reaction with 0 when that side never pressed (the field initialised, never set to none)."""

    def emit(self, cls, at=None, **fields):
        if cls.NAME == "SD_VERDICT":
            for side in "ab":
                if fields[f"press_{side}_us"] == cat.NONE_U32:
                    fields[f"reaction_{side}_us"] = 0
        super().emit(cls, at, **fields)


class PressWithoutReaction(Device):
    """Reports a side's press time but leaves its reaction none."""

    def emit(self, cls, at=None, **fields):
        if cls.NAME == "SD_VERDICT":
            fields["reaction_b_us"] = cat.NONE_I32
        super().emit(cls, at, **fields)


def run_on(device_cls, text: str = B_ALONE):
    (sc,) = loads(text, "t.yaml")
    d = Driver(_virtual(device_cls))
    try:
        d.handshake()
        return Runner(d).run(sc)
    finally:
        d.close()


def failures(res):
    return [f for r in res.races for f in r.failures]


def test_a_correct_unit_passes():
    res = run_on(Device)
    assert res.status == "pass", failures(res)


def test_a_reaction_without_its_press_fails_though_the_scenario_names_neither():
    res = run_on(ReactionWithoutPress)
    assert res.status == "fail"
    (said,) = failures(res)
    assert said.startswith("SD_VERDICT[0]: reaction_a_us 0, but press_a_us - green_us = ")
    assert "press_a_us 0xffffffff with its reaction_a_us set is a press at that device time, SPEC PR-2" in said


def test_a_press_without_its_reaction_fails():
    res = run_on(PressWithoutReaction, B_ALONE.replace(", reaction_b_us: 200000", ""))
    assert res.status == "fail"
    (said,) = failures(res)
    assert said.startswith("SD_VERDICT[0]: press_b_us ") and "is a time but reaction_b_us is none" in said


def verdict(**kw) -> Frame:
    fields = dict(loser=0, reason=1, cards=2, landed_a=255, landed_b=255, press_a_us=cat.NONE_U32,
                  press_b_us=1_200_000, reaction_a_us=cat.NONE_I32, reaction_b_us=200_000, green_us=1_000_000,
                  decisive_us=1_200_000, knowable_us=1_201_000) | kw
    f = Frame(1, 0, 1_201_000, msg.SD_VERDICT(0, **fields))
    f.dev_us = 1_201_000
    return f


def test_a_press_at_the_last_microsecond_of_the_clock_is_a_time_with_its_reaction():
    """PR-2: 0xFFFFFFFF with a reaction is the device time 0xFFFFFFFF, consistent when the reaction says so."""
    unit = cat.UNITS["showdown"]
    green = 0xFFFFFFFF - 200_000
    assert judge.inconsistent_verdicts([verdict(press_b_us=0xFFFFFFFF, green_us=green)], unit) == []
    assert judge.inconsistent_verdicts([verdict(press_b_us=0xFFFFFFFF, green_us=green, reaction_b_us=200_001)], unit)
    assert judge.inconsistent_verdicts([verdict()], unit) == []
