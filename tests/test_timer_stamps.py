"""PR-1 over the whole library: a unit whose timer handlers stamp late (allowed) passes every scenario;
one that stamps its timer events early is caught on every timer the catalogue names, and a verdict
produced before its knowable_us is caught too."""
from __future__ import annotations

import pytest

from unohil.emulator import device as emu_device
from unohil.harness import Driver
from unohil.harness.run import judge
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths
from unohil.protocol import Frame, catalogue as cat, msg

KINDS = tuple(cat.UNITS)


def at(m, t: int) -> Frame:
    f = Frame(1, 0, t & 0xFFFFFFFF, m)
    f.dev_us = t
    return f


def run_library(kind: str, url_options: str = ""):
    """Every library scenario of kind on a virtual-clock emulator: (passed, failures by scenario)."""
    passed, failures = 0, {}
    with Driver.open(f"emu://{kind}?clock=virtual{url_options}") as d:
        runner = Runner(d)
        for sc in load_paths(library_paths(kind)):
            res = runner.run(sc)
            if res.status == "pass":
                passed += 1
            elif res.status != "skip":
                failures[sc.name] = [f for r in res.races for f in r.failures] + [r.error for r in res.races if r.error]
    return passed, failures


@pytest.mark.parametrize("kind", KINDS)
def test_a_unit_stamping_its_timers_late_passes_the_library(kind):
    """2000 us late, the most PR-1 lets a unit be (the 2 ms of a reply): a correct unit."""
    passed, failures = run_library(kind, "&timer_lag_us=2000")
    assert passed and not failures, failures


@pytest.fixture
def stamps_early(monkeypatch):
    """A broken unit: every timer event stamped `by` us before the deadline its rules armed."""
    def make(by: int):
        init = emu_device.Device.__init__

        def early(self, *args, **kwargs):
            init(self, *args, **kwargs)
            self.timer_lag_us = -by
        monkeypatch.setattr(emu_device.Device, "__init__", early)
    return make


@pytest.mark.parametrize("kind", KINDS)
def test_a_unit_stamping_its_timers_early_fails_on_every_timer(kind, stamps_early):
    stamps_early(50)
    _, failures = run_library(kind)
    said = [f for fs in failures.values() for f in fs]
    for rule in cat.UNITS[kind].timers:
        assert any(f.startswith(f"{rule.event} stamped 50 us before the earliest it can be due") and "SPEC PR-1" in f
                   for f in said), (rule.event, said[:5])


def test_the_early_message_names_the_trigger_the_delay_and_the_frozen_time():
    """FL_TIMEOUT 6 s after FL_SELECTED with a 1 s pause between: due 7 s after; stamped at 6.5 s."""
    unit = cat.UNITS["flash"]
    frame = at
    events = [frame(msg.FL_SELECTED(0, player=1, turn=1, turn_time_us=6_000_000, reason=0), 1_000),
              frame(msg.FL_PAUSE(1, paused=1, remaining_us=5_000_000), 1_001_000),
              frame(msg.FL_PAUSE(2, paused=0, remaining_us=5_000_000), 2_001_000),
              frame(msg.FL_TIMEOUT(3, player=1, turn=1), 6_501_000)]
    (said,) = judge.early_timers(events, unit, unit.with_defaults({}))
    assert said.startswith("FL_TIMEOUT stamped 500000 us before the earliest it can be due (FL_SELECTED + "
                           "turn_time_us = 6000000 us, + 1000000 us frozen)"), said
    events[-1] = frame(msg.FL_TIMEOUT(3, player=1, turn=1), 7_001_000)
    assert judge.early_timers(events, unit, unit.with_defaults({})) == []


def test_a_trigger_at_the_timers_own_instant_did_not_arm_it():
    """An edge at the sleep instant comes after the sleep (deadline first), whatever the stream order."""
    unit = cat.UNITS["flash"]
    sleep = unit.with_defaults({})["sleep_after_us"]
    seen = msg.INPUT_SEEN
    frame = at
    events = [frame(seen(0, input=0, action=1, value=0, source=1, disposition=0, detail=0), 1_000),
              frame(seen(1, input=1, action=1, value=0, source=1, disposition=1, detail=0), 1_000 + sleep),
              frame(msg.FL_SLEEP(2, asleep=1), 1_000 + sleep)]
    assert judge.early_timers(events, unit, unit.with_defaults({})) == []
    events[-1] = frame(msg.FL_SLEEP(2, asleep=1), sleep)      # 1 ms early after the first edge
    assert judge.early_timers(events[:1] + events[2:], unit, unit.with_defaults({}))


def test_a_verdict_before_its_knowable_time_fails():
    unit = cat.UNITS["launcher"]
    v = msg.LA_RESULT(0, press=1, press_us=100, planned=0, fired=0, inside=3, fired_total=0, loaded_total=3,
                      knowable_us=200)
    (said,) = judge.early_verdicts([at(v, 150)], unit)
    assert "LA_RESULT produced 50 us before its knowable_us" in said
    assert judge.early_verdicts([at(v, 200)], unit) == []
