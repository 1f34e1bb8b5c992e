"""The Showdown, launcher and protocol-wide decisions of issue 30 (items 8 and 9): for each, a unit with
the other answer, built as an emulator mutant or option, that conform must fail, and the right unit (on
each form the SPEC allows) that it must pass."""
from __future__ import annotations

import pytest

from unohil.emulator.device import _VERDICT_CLASSES, Device
from unohil.emulator.showdown import SIDE, STATE as SD_STATE, Showdown
from unohil.harness import conform
from unohil.protocol import ENUMS, msg
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

from test_conform import _virtual
from test_conform_decision_mutants import failed, library, with_model


# ---- SD-3: a false start throws only on a unit that says so (capability false_start_launch) ----

class ThrowsWithoutSaying(Showdown):
    """Its IDENTITY clears false_start_launch, yet a false start throws the cards at the false starter."""

    def _false_start(self, t, side):
        self.false_start_launch = 1
        try:
            super()._false_start(t, side)
        finally:
            self.false_start_launch = 0


class SaysButDoesNotThrow(Showdown):
    """Its IDENTITY sets false_start_launch, yet a false start throws nothing."""

    def _false_start(self, t, side):
        self.false_start_launch = 0
        try:
            super()._false_start(t, side)
        finally:
            self.false_start_launch = 1


@pytest.mark.parametrize("model, options, words", [
    (ThrowsWithoutSaying, {"false_start_launch": 0}, "a false start throws nothing"),
    (SaysButDoesNotThrow, {}, "a false start throws the cards at the false starter"),
])
def test_a_false_start_that_breaks_the_units_own_form_does_not_conform(model, options, words):
    report = conform.run(_virtual(with_model(model), **options), scenarios=library("showdown"))
    bad = failed(report)
    assert any(words in name for name in bad), bad
    assert report.verdict == "DOES NOT CONFORM"


@pytest.mark.parametrize("options", [{}, {"false_start_launch": 0}, {"false_start_launch": 0, "landing_sensor": 0}])
def test_both_forms_of_a_false_start_conform(options):
    report = conform.run(_virtual(**options), scenarios=library("showdown"))
    assert report.verdict == "CONFORMS", failed(report)
    skipped = {c.name for c in report.checks if c.status == "skip"}
    other = "a false start throws the cards" if options else "a false start throws nothing"
    assert any(other in name for name in skipped)         # the other form's scenario, as another variant


def test_false_start_launch_is_bit_8_and_the_emulator_sets_it():
    assert ENUMS["capability"].false_start_launch == 8
    ident = Probe(VirtualLink("showdown", 1)).request(msg.HELLO(1, 0)).msg
    assert ident.caps & (1 << 8)


# ---- SD-16: SD_LAUNCH.toward is the side away from the first press, at it, also in a tie ----

class LaunchesTowardTheLoser(Showdown):
    """Holds the throw until the verdict, then throws toward the side that loses (the line's, in a tie)."""

    def _launch(self, toward):
        if self.state == SD_STATE.go:           # the first press: held back
            self.tray = 0
            return
        super()._launch(toward)

    def _verdict(self, loser, reason, decisive, knowable, landed=(0xFF, 0xFF)):
        if reason != ENUMS["showdown_reason"].false_start and reason != ENUMS["showdown_reason"].no_press:
            super()._launch(loser if loser != SIDE.none else 1 - self.first)
        super()._verdict(loser, reason, decisive, knowable, landed)


@pytest.mark.parametrize("options", [{}, {"landing_sensor": 0}])
def test_a_throw_held_back_to_the_loser_in_a_tie_does_not_conform(options):
    report = conform.run(_virtual(with_model(LaunchesTowardTheLoser), **options), scenarios=library("showdown"))
    bad = failed(report)
    assert any("exact tie" in name for name in bad), bad
    assert report.verdict == "DOES NOT CONFORM"


# ---- PR-7: what a verdict brings carries the verdict's header time ----

class SlowVerdict(Device):
    """Produces every verdict 500 us after the work that decides it began (PR-1 allows processing time);
    `followers_keep_the_timers_time` also stamps what comes after the verdict with that work's time."""
    followers_keep_the_timers_time = False

    def emit(self, cls, at=None, **fields):
        if cls in _VERDICT_CLASSES and at is None and self._stamp is not None:
            stamp = self._stamp
            super().emit(cls, at=stamp + 500, **fields)
            if self.followers_keep_the_timers_time:
                self._stamp = stamp
            return
        super().emit(cls, at, **fields)


class FollowersAtTheScheduledTime(SlowVerdict):
    followers_keep_the_timers_time = True


@pytest.mark.parametrize("kind", ["showdown", "launcher"])
def test_events_after_a_verdict_stamped_at_the_timers_time_do_not_conform(kind):
    report = conform.run(_virtual(FollowersAtTheScheduledTime, kind), scenarios=library(kind))
    bad = failed(report)
    assert bad and all("(SPEC PR-7)" in detail for detail in bad.values()), bad
    assert report.verdict == "DOES NOT CONFORM"


@pytest.mark.parametrize("kind", ["showdown", "launcher", "flash"])
def test_a_slow_verdict_whose_events_follow_it_conforms(kind):
    report = conform.run(_virtual(SlowVerdict, kind), scenarios=library(kind))
    assert not failed(report), failed(report)


@pytest.mark.parametrize("kind", ["showdown", "launcher", "flash"])
def test_a_lagging_unit_stamps_its_verdict_and_what_follows_alike(kind):
    """The emulator's timer_lag_us variant: a timer's verdict is produced when its late handler ran, and
    the STATE after it carries the same time."""
    report = conform.run(_virtual(kind=kind, timer_lag_us=2000), scenarios=library(kind))
    assert not failed(report), failed(report)


# ---- LA-14: the magazine holds 98 cards ----

def test_a_launcher_of_sixty_cards_cannot_load_a_two_player_game():
    report = conform.run(_virtual(kind="launcher", card_capacity=60), scenarios=library("launcher"))
    bad = failed(report)
    assert any("loads the rest of the deck" in name for name in bad), bad
    assert report.verdict == "DOES NOT CONFORM"


def test_a_unit_that_throws_nothing_passes_the_false_starts_and_the_rig_scenarios():
    """SD-3's documents' form, through a rig: the red lamp swings at once, no solenoid is watched for."""
    from unohil.harness.outcome import Outcome
    from unohil.harness.rig.links import open_rig_unit
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.load import load_paths
    from unohil.harness.scenarios.library import library_paths
    files = [p for p in load_paths(library_paths("showdown"))
             if p.file.endswith(("rig.yaml", "false_start.yaml"))]
    d = open_rig_unit("emu://showdown?false_start_launch=0", "emurig://")
    try:
        results = {sc.name: Runner(d).run(sc) for sc in files}
    finally:
        d.close()
    assert not [name for name, r in results.items() if r.status not in (Outcome.PASS, Outcome.SKIP)]
    passed = {name for name, r in results.items() if r.status is Outcome.PASS}
    assert "through a rig a false start's red lamp swings to the false starter at once" in passed
    assert "a false start throws nothing, on a unit that does not throw then; the false starter takes the cards" \
        in passed
