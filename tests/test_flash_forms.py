"""The Flash base's decisions of issue 30 items 8 and 9 (SPEC 8.3, FL-20 to FL-29): the library and conform
pass every form and variant of a right base, and a base with the other answer to any of them fails."""
from __future__ import annotations

import pytest

from unohil.emulator.device import Device
from unohil.emulator.flash import LIGHT, MODE, PRESS, STATE, Flash
from unohil.emulator.model import REPORTED
from unohil.harness import Driver, conform
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths
from unohil.protocol import devtime

from test_conform import _virtual
from test_conform_decision_mutants import failed, with_model

# What issue 30 asks every Flash decision to hold on: the default unit, another generator, late timer
# stamps, a base of 8, a unit without each optional command, and the three forms of FL-20..FL-22.
VARIANTS = {
    "default": {},
    "rng=python": {"rng": "python"},
    "timer_lag_us=2000": {"timer_lag_us": 2000},
    "players=8": {"players": 8},
    **{f"without={cap}": {"without": cap}
       for cap in ("test_mode", "host_input", "time_sync", "event_resend", "config_set")},
    "speed_at_power_on=1": {"speed_at_power_on": 1},
    "slowest_light_only=1": {"slowest_light_only": 1},
    "reset_light_show=1": {"reset_light_show": 1},
    # each form without the commands that change how the runner sets its switches and times its presses
    **{f"{form}=1&without={cap}": {form: 1, "without": cap}
       for form in ("speed_at_power_on", "slowest_light_only", "reset_light_show")
       for cap in ("host_input", "test_mode")},
}

FULL = {"default", "timer_lag_us=2000", "players=8",
        "speed_at_power_on=1", "slowest_light_only=1", "reset_light_show=1"}


def library():
    return load_paths(library_paths("flash"))


def run_library(device_cls=Device, **options) -> dict[str, object]:
    d = Driver(_virtual(device_cls, "flash", **options))
    try:
        d.handshake()
        runner = Runner(d)
        return {sc.name: runner.run(sc) for sc in library()}
    finally:
        d.close()


def fails(results) -> set[str]:
    return {name for name, r in results.items() if r.status == "fail"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_passes_the_library_and_conforms(variant):
    results = run_library(**VARIANTS[variant])
    assert not fails(results), {n: [f for r in results[n].races for f in r.failures] for n in fails(results)}
    report = conform.run(_virtual(Device, "flash", **VARIANTS[variant]), scenarios=library())
    assert not failed(report), failed(report)
    # PARTIAL: a unit without a command or the reference generator leaves the checks that need them unrun
    assert report.verdict == ("CONFORMS" if variant in FULL else "PARTIAL"), report.verdict


# ---- FL-20..FL-22: a base of one form that declares the other (or none) fails ----

def declaring(cap: str, declared: bool):
    """A Flash whose IDENTITY.caps says `declared` about cap, whatever form it is built as."""
    class Declares(Flash):
        def caps(self):
            others = tuple(c for c in super().caps() if c != cap)
            return others + ((cap,) if declared else ())
    Declares.__name__ = f"{'Declares' if declared else 'Hides'}_{cap}"
    return with_model(Declares)


FORMS = {
    "speed_at_power_on": (
        {"a speed change mid-turn applies from the next turn",
         "a speed change mid-turn leaves the unlimited turn untimed, the next turn has 1 s"},
        {"a base that reads the speed at power-on keeps its turn time through a mid-game switch move",
         "a base that reads the speed at power-on reads it when switched on"}),
    "slowest_light_only": (
        {"buzzer race with 2 opponents", "the buzzer player's own button cancels the buzzer"},
        {"a base that lights only the slowest lights nothing during the race",
         "a base that lights only the slowest cancels a buzzer with no opponent light to turn off"}),
    "reset_light_show": (
        {"holding PLAY/PAUSE and BUZZER for 3 s resets to setup"},
        {"a base that confirms a reset with its lights shows them before setup"}),
}


@pytest.mark.parametrize("cap", FORMS)
def test_a_base_that_plays_one_form_and_declares_the_other_fails(cap):
    as_default, as_form = FORMS[cap]
    hides = fails(run_library(declaring(cap, False), **{cap: 1}))      # the document's form, bit clear
    assert as_default <= hides, hides
    claims = fails(run_library(declaring(cap, True)))                 # the SPEC's default form, bit set
    assert as_form <= claims, claims


# ---- item 9: a base with the other answer fails ----

class SleepsAtOnceBeyondHalfWrap(Flash):
    """Arms the inactivity period as one wrapped deadline compared as 3.2 compares times (FL-23)."""

    def _arm_sleep(self, t, end):
        self.deadlines.clear(self.sleep_deadline)
        self.sleep_end = t + max(0, devtime.diff(devtime.wrap(end), devtime.wrap(t)))
        self.sleep_deadline = self.deadlines.set(self.sleep_end, self._sleep_step)


def by_reset(core) -> bool:
    """Whether the model being made replaces a game thrown away by RESET new_game (not a boot)."""
    previous = getattr(core, "model", None)
    return isinstance(previous, Flash) and previous.handing_over


class KeepsSleepOverReset(Flash):
    """RESET new_game keeps counting the inactivity period from the last edge before it (not FL-24)."""

    def __init__(self, core, **options):
        self.edge_before = core.model.last_edge if by_reset(core) else None
        super().__init__(core, **options)

    def power_on(self, t):
        if self.powered:
            self._restart_sleep(t if self.edge_before is None else self.edge_before)


class CancelsSleepAtReset(Flash):
    """RESET new_game leaves no inactivity period running until the next edge (not FL-24)."""

    def __init__(self, core, **options):
        self.after_reset = by_reset(core)
        super().__init__(core, **options)

    def power_on(self, t):
        if not self.after_reset:
            super().power_on(t)


class ReportsMissingButtonsWhenOff(Flash):
    """Switched off, reports every Player button, those the base lacks too (8.2's row before 8.1's, not FL-25)."""

    def on_input(self, t, inp, action, value):
        if self.state == STATE.off and inp < 8:
            self.deadlines.catch_up(t)
            self._restart_sleep(t)
            return REPORTED
        return super().on_input(t, inp, action, value)


class HoldsOnlyWhatWentDownWhileOn(Flash):
    """Forgets a button pressed while off: PLAY/PAUSE held since then never makes a reset pair (not FL-26)."""

    def _track_hold(self, t, inp, action):
        if action == PRESS and self.state == STATE.off:
            return
        super()._track_hold(t, inp, action)


class OneLightPerChange(Flash):
    """Leaves out the verdict's LIGHT(slowest, flash) when that button already flashes (not FL-27)."""

    def light(self, light, mode, target=0):
        if self.state == STATE.buzzer and mode == MODE.flash and self.light_mode(LIGHT.player, target) == mode:
            return
        super().light(light, mode, target)


class ResetSwitchesOn(Flash):
    """RESET new_game on a base switched off starts it in setup, as if the switch were on (not FL-28)."""

    def __init__(self, core, **options):
        super().__init__(core, **options)
        if not self.powered:
            self.powered, self.state = True, STATE.setup


@pytest.mark.parametrize("model, check", [
    (SleepsAtOnceBeyondHalfWrap, "an inactivity period beyond the half-wrap"),
    (KeepsSleepOverReset, "RESET new_game restarts the inactivity period from the RESET"),
    (CancelsSleepAtReset, "RESET new_game restarts the inactivity period from the RESET"),
    (ReportsMissingButtonsWhenOff, "switched off, a button the base lacks and a speed above 2"),
    (ResetSwitchesOn, "RESET new_game on a base switched off"),
])
def test_conform_catches_the_other_answer(model, check):
    report = conform.run(_virtual(with_model(model), "flash"), scenarios=None)
    bad = failed(report)
    assert any(name.startswith(check) for name in bad), bad
    assert report.verdict == "DOES NOT CONFORM"


@pytest.mark.parametrize("model, scenario", [
    (ReportsMissingButtonsWhenOff, "switched off, a button the base does not have is still refused bad_value"),
    (HoldsOnlyWhatWentDownWhileOn, "PLAY/PAUSE held since before power-on and BUZZER pressed after it reset the base"),
    (OneLightPerChange, "buzzer race with 2 opponents"),
])
def test_the_library_catches_the_other_answer(model, scenario):
    assert scenario in fails(run_library(with_model(model)))

