"""A copy of an event is the same event (SPEC 4.5): duplicates are compared by payload. A copy that
differs (one event_seq, two messages) fails the race naming both; a line that repeats frames byte for
byte (dup=) never does."""
from __future__ import annotations

from collections import deque

from unohil.emulator.device import Device
from unohil.harness import Driver, conform
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.harness.session.events import EventSequencer
from unohil.harness.session.health import LinkHealth
from unohil.protocol import Frame, msg

from test_conform import _virtual
from test_harness_scenarios import GOOD
from test_verdict_consistency import run_on


class VerdictTwice(Device):
    """Sends each SD_VERDICT twice under its event_seq, the copy naming the other loser."""

    def _emit(self, cls, fields, t):
        super()._emit(cls, fields, t)
        if cls.NAME == "SD_VERDICT":
            seq = (self._event_seq - 1) & 0xFFFF
            self._send(cls(seq, **(fields | {"loser": 1 - fields["loser"]})), t & 0xFFFFFFFF)


class VerdictRepeated(Device):
    """Sends each SD_VERDICT twice, the copy the same message (as a resend would be)."""

    def _emit(self, cls, fields, t):
        super()._emit(cls, fields, t)
        if cls.NAME == "SD_VERDICT":
            self._send(cls((self._event_seq - 1) & 0xFFFF, **fields), t & 0xFFFFFFFF)


def _sequencer():
    inbox, history = deque(), deque(maxlen=100)
    s = EventSequencer(LinkHealth(), inbox, history, 1000, lambda r: None)
    s.start(0)
    return s


def _frame(m, t=10) -> Frame:
    return Frame(1, 0, t, m)


def test_the_sequencer_keeps_a_differing_copy_and_counts_an_identical_one():
    s = _sequencer()
    first = _frame(msg.STATE(0, state=1, previous=0))
    s.receive(first, 0)
    s.receive(_frame(msg.STATE(0, state=1, previous=0), t=99), 1)     # another header, the same payload
    assert s.health.duplicates == 1 and s.conflicts == []
    other = _frame(msg.STATE(0, state=2, previous=0))
    s.receive(other, 2)
    assert s.health.duplicates == 2 and s.conflicts == [(first, other)]
    assert list(s.inbox) == [first]


def test_a_differing_copy_of_a_held_event_is_a_conflict_too():
    s = _sequencer()
    held = _frame(msg.STATE(2, state=1, previous=0))
    s.receive(held, 0)                                 # 0 and 1 are missing: 2 is held
    s.receive(_frame(msg.STATE(2, state=3, previous=0)), 1)
    assert [c[0] for c in s.conflicts] == [held]


def test_an_event_of_an_earlier_boot_is_not_compared():
    s = _sequencer()
    s.receive(_frame(msg.STATE(0, state=1, previous=0)), 0)
    s.stop()
    s.start(1)
    s.receive(_frame(msg.STATE(0, state=2, previous=0)), 1)    # seq 0 of this boot was never received
    assert s.conflicts == []


def _run(device_cls):
    return run_on(device_cls, GOOD)


def test_two_verdicts_under_one_event_seq_fail_the_race_naming_both():
    res = _run(VerdictTwice)
    assert res.status == "fail"
    (said,) = [f for r in res.races for f in r.failures]
    assert "came twice with different payloads" in said
    assert "SD_VERDICT(event_seq=" in said and "loser=1" in said and "loser=0" in said


def test_a_verdict_repeated_byte_for_byte_passes():
    res = _run(VerdictRepeated)
    assert res.status == "pass", [f for r in res.races for f in r.failures]


def test_a_line_duplicating_frames_never_makes_a_conflict():
    (sc,) = loads(GOOD.replace("seed: 5\n", "seed: 5\nsweep: {n: {from: 1, to: 20, step: 1}}\n"), "t.yaml")
    with Driver.open("emu://showdown?faults=dup=0.5") as d:
        res = Runner(d).run(sc)
        assert d.health.duplicates > 20 and d.events.conflicts == []
    assert res.status == "pass", [f for r in res.races for f in r.failures]


def test_conform_catches_the_contradicting_copy():
    report = conform.run(_virtual(VerdictTwice), scenarios=loads(GOOD, "t.yaml"))
    assert not report.passed
    failed = [c for c in report.checks if c.status == "fail"]
    assert failed and all("came twice with different payloads" in c.detail for c in failed), \
        [(c.name, c.detail) for c in failed]
