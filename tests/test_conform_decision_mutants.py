"""Units that break a decision only at its edge, or only on a variant of the unit, and that conform used to
call CONFORMS (issue 30, item 4): each is an emulator mutant conform must now catch."""
from __future__ import annotations

import pytest

from unohil.emulator.device import Device
from unohil.emulator.flash import INPUT as FL_INPUT, PRESS, Flash
from unohil.emulator.launcher import Launcher
from unohil.emulator.model import ACTED, REPORTED
from unohil.emulator.showdown import STATE as SD_STATE, Showdown
from unohil.harness import conform
from unohil.harness.conform import coverage, draws, quick
from unohil.harness.outcome import Outcome
from unohil.harness.run.results import RaceResult, ScenarioResult
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths
from unohil.protocol import catalogue as cat
from unohil.protocol.algorithms import Pcg32

from test_conform import _virtual


def with_model(model):
    """A Device whose unit model is `model` (a subclass of the kind's own)."""
    class Mutant(Device):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.model_cls = model
    Mutant.__name__ = model.__name__
    return Mutant


def failed(report) -> dict[str, str]:
    return {c.name: c.detail for c in report.checks if c.status in ("fail", "error")}


# ---- the Flash's bad_value refusals (SPEC 8.1) ----

OFF_REFUSAL = "switched off, a button the base lacks and a speed above 2 are still refused bad_value"

class AcceptsSpeed3(Flash):
    """Takes a speed_switch value above 2 as the shortest turn instead of refusing it."""

    def on_input(self, t, inp, action, value):
        if inp == FL_INPUT.speed_switch and action == PRESS and value > 2:
            value = 2
        return super().on_input(t, inp, action, value)


class EightButtonsAlways(Flash):
    """A base of six that acts on buttons 6 and 7 too (it forgot IDENTITY.players)."""

    def on_input(self, t, inp, action, value):
        if 6 <= inp < 8:
            players, self.players = self.players, 8
            try:
                return super().on_input(t, inp, action, value)
            finally:
                self.players = players
        return super().on_input(t, inp, action, value)


@pytest.mark.parametrize("model, words", [(AcceptsSpeed3, "INPUT speed_switch press 3"),
                                          (EightButtonsAlways, "INPUT player_6 press 0")])
def test_a_flash_accepting_what_spec_8_1_refuses_does_not_conform(model, words):
    report = conform.run(_virtual(with_model(model), "flash"), scenarios=None)
    bad = failed(report)
    refusal = "INPUT refused by the unit as bad_value: NAK bad_value, then INPUT_SEEN refused"
    assert list(bad) == [refusal, OFF_REFUSAL], bad      # switched on, and switched off (FL-25)
    assert words in bad[refusal]


@pytest.mark.parametrize("players, checked", [(6, "speed_switch press 3; player_6 press 0"),
                                              (2, "speed_switch press 3; player_2 press 0"),
                                              (8, "speed_switch press 3")])
def test_a_right_flash_of_any_size_passes_both_refusals(players, checked):
    report = conform.run(_virtual(Device, "flash", players=players), scenarios=None)
    assert not failed(report)
    (res,) = [c for c in report.checks if c.name.startswith("INPUT refused by the unit as bad_value")]
    assert res.status == "pass" and res.detail == f"checked: {checked}"


# ---- a Showdown without a landing sensor: SD-13 and SD-5's tie edge (SD-11 changes only the landing) ----

class SensorlessTieEndsAtGoTimeout(Showdown):
    """Closes the tie window at the go timeout: a second press after green + go_timeout_us is only reported."""

    def _paddle(self, t, side):
        if (self.state == SD_STATE.racing and self.press[side] is None
                and t >= self.green_t + self.config["go_timeout_us"]):
            return REPORTED
        return super()._paddle(t, side)


class SensorlessWindowOneShort(Showdown):
    """Ties only when t2 - t1 < W - 1: a second press at t1 + W - 1 loses as a first_press race."""

    def _paddle(self, t, side):
        if (self.state == SD_STATE.racing and self.press[side] is None
                and t - self.press[self.first] == self.config["tie_window_us"] - 1):
            self.press[side] = t
            return ACTED
        return super()._paddle(t, side)


def library(kind: str):
    return load_paths(library_paths(kind))


@pytest.mark.parametrize("model, words", [(SensorlessTieEndsAtGoTimeout, "runs past it on a unit without a landing"),
                                          (SensorlessWindowOneShort, "1 us inside the tie window ties on a unit without")])
def test_a_sensorless_showdown_breaking_a_tie_rule_does_not_conform(model, words):
    report = conform.run(_virtual(with_model(model), landing_sensor=0), scenarios=library("showdown"))
    bad = failed(report)
    assert any(words in name for name in bad), bad
    assert all("without a landing sensor" in name for name in bad), bad     # the rules it broke, nothing else
    assert report.verdict == "DOES NOT CONFORM"


def test_a_right_sensorless_showdown_proves_sd_13_and_sd_5():
    report = conform.run(_virtual(landing_sensor=0), scenarios=library("showdown"))
    assert report.verdict == "CONFORMS", failed(report)
    status = {c.key: c.status for c in coverage.decisions(report, "showdown")}
    assert status["SD-13"] == status["SD-5"] == "passed"


# ---- the launcher's triangle (SPEC 6.5): every burst size is predictable under reference_rng ----

class BurstMaxOneShort(Launcher):
    """Its burst loop stops one card before burst_max: a 12-card burst comes out as 11."""

    def _press(self, t):
        super()._press(t)
        b = self.burst
        if b is not None and b["planned"] == self.config["burst_max"]:
            b["planned"] -= 1
            b["count"] = min(b["count"], b["planned"])


def test_a_launcher_that_never_throws_burst_max_does_not_conform():
    report = conform.run(_virtual(with_model(BurstMaxOneShort), "launcher"), scenarios=library("launcher"))
    bad = failed(report)
    assert any("burst is burst_max" in name for name in bad), bad
    assert report.verdict == "DOES NOT CONFORM"


def test_the_library_draws_burst_min_mode_and_max_by_seed():
    report = conform.run(_virtual(kind="launcher"), scenarios=library("launcher"))
    assert report.verdict == "CONFORMS", failed(report)
    ran = {c.name.split(" (")[0]: c.status for c in report.checks}
    assert {ran[f"the seed's burst is {n}"] for n in ("burst_max, twelve cards", "burst_min, one card",
                                                      "burst_mode, four cards")} == {"pass"}


# ---- --quick: each decision's edge ----

class TiesAtTheWindowEnd(Showdown):
    """Takes the tie window as closed, [t1, t1 + W]: a second press at exactly t1 + W ties."""

    def _paddle(self, t, side):
        if (self.state == SD_STATE.racing and self.press[side] is None
                and t - self.press[self.first] == self.config["tie_window_us"]):
            self.press[side] = t
            self.tie = True
            self._cancel()
            self.timer = self.at(self.press[self.first] + self.config["flight_us"], self._landing)
            return ACTED
        return super()._paddle(t, side)


def test_quick_catches_a_tie_at_exactly_the_window_end():
    report = conform.run(_virtual(with_model(TiesAtTheWindowEnd)), scenarios=library("showdown"), quick=True)
    assert any("exactly one tie window later is not a tie" in name for name in failed(report)), failed(report)
    assert report.verdict == "DOES NOT CONFORM"


@pytest.mark.parametrize("kind", ["showdown", "flash", "launcher"])
def test_quick_runs_an_edge_scenario_of_every_decision_that_has_one(kind):
    scenarios = library(kind)
    chosen = quick.choose(scenarios, kind, lambda sc: "no landing_sensor" not in sc.needs)
    for did in {d for sc in scenarios if "boundary" in sc.tags for d in sc.covers if not d.startswith("PR-")}:
        assert any(did in sc.covers and "boundary" in sc.tags for sc in chosen), did


# ---- SPEC 6.0: a generator of another stream, under the reference_rng bit ----

class OtherStream(Pcg32):
    """PCG32 seeded with another stream constant: every draw differs, every rule is right."""

    def seed(self, seed, stream=cat.RNG_STREAM):
        super().seed(seed, stream ^ 0x10)


class WrongStream(Device):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rng = OtherStream(self.seed)


@pytest.mark.parametrize("kind", ["showdown", "flash", "launcher"])
def test_a_reference_generator_of_another_stream_is_named_before_the_seeded_scenarios(kind):
    report = conform.run(_virtual(WrongStream, kind), scenarios=library(kind))
    bad = failed(report)
    said = bad.pop(draws.CHECK)
    assert said.startswith("the unit's draws differ from SPEC 6.0's from the first draw: rng_seed 1, "), said
    assert bad and all("(not the rule: the unit's draws differ from SPEC 6.0's from the first draw; see" in detail
                       for detail in bad.values()), bad
    assert report.verdict == "DOES NOT CONFORM"


def test_a_unit_without_the_reference_generator_is_not_asked_for_its_draws():
    report = conform.run(_virtual(rng="python"), scenarios=library("showdown"))
    assert report.verdict == "PARTIAL" and not failed(report)
    assert not [c for c in report.checks if c.name == draws.CHECK]


def test_draws_a_unit_cannot_be_seeded_for_are_not_compared_and_not_passed():
    report = conform.run(_virtual(without="config_set"), scenarios=library("showdown"))
    (probe,) = [c for c in report.checks if c.name == draws.CHECK]
    assert probe.status == "skip" and probe.detail.startswith("not compared: needs capability config_set")


class _LinkLostEveryRace:
    """A runner whose link loses the probe's races: no draw is seen, and none is blamed on the unit."""

    def run(self, sc):
        race = RaceResult(0, {"race": 0}, status=Outcome.LINK_ERROR, error="INJECT too_late")
        return ScenarioResult(sc, "emu://showdown", races=[race], status=Outcome.LINK_ERROR)


def test_a_probe_race_the_link_lost_is_an_error_not_a_fail():
    status, detail = draws.compare(_LinkLostEveryRace(), "showdown")
    assert status == "error" and "link-error (INJECT too_late)" in detail
