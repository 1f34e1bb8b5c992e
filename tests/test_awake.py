"""Staying awake for an expected frame (harness/session/awake.py), tested by counting on a link with a clock of
its own: which reads block and for how long, which poll, which poll brings the frame. No wall-clock time."""
import pytest

from unohil.protocol import encode, msg as M
from unohil.harness.session.awake import LEAD_US, MAX_WINDOW_US, TAIL_US
from unohil.harness.session.clocksync import ClockEstimate
from unohil.harness.session.driver import Driver

POLL_US = 2         # what a read that does not block costs on this link's clock


class ScriptedLink:
    """A real-clock link as the driver sees it, on a clock that moves only as it is read: a blocking read
    sleeps until the next frame due or its timeout, a poll (timeout 0) costs POLL_US. A command written is
    answered by reply(msg, seq) reply_after_us later."""

    virtual = False

    def __init__(self, reply=None, reply_after_us: int = 100):
        self.url = "scripted://"
        self.t = 1_000_000
        self.due: list[tuple[int, bytes]] = []
        self.reads: list[int] = []          # the timeout of every read, in order
        self.reply, self.reply_after_us = reply, reply_after_us
        self.closed = False

    def now_us(self) -> int:
        return self.t

    def at(self, t: int, frame) -> None:
        self.due.append((t, frame))
        self.due.sort(key=lambda d: d[0])

    def read(self, timeout_us: int):
        self.reads.append(timeout_us)
        if self.due and self.due[0][0] <= self.t + max(timeout_us, 0):
            t, data = self.due.pop(0)
            self.t = max(self.t, t)
            return data, self.t
        self.t += timeout_us if timeout_us > 0 else POLL_US
        return b"", self.t

    def write(self, data: bytes) -> None:
        from unohil.protocol import decode
        f = decode(data[:-1])
        if self.reply is not None:
            self.at(self.t + self.reply_after_us, encode(self.reply(f.msg, f.seq), 0, 0))

    def close(self) -> None:
        self.closed = True

    def polls(self) -> int:
        return sum(1 for r in self.reads if r == 0)


def beep(i: int) -> bytes:
    return encode(M.SD_BEEP(event_seq=i, index=i), i, 0)


def driver(link, stay_awake: bool = True) -> Driver:
    d = Driver(link, stay_awake=stay_awake)
    d.expect_events_from(0)
    return d


def is_beep(f):
    return f.msg.NAME == "SD_BEEP"


def test_a_wait_with_nothing_expected_sleeps_in_one_read():
    link = ScriptedLink()
    d = driver(link)
    link.at(link.t + 5000, beep(0))
    f = d.wait_for(is_beep, 1_000_000, "a beep")
    assert f.host_us == link.t and link.reads == [1_000_000] and d.awake.polls == 0


def test_an_expected_frame_is_caught_by_a_poll_of_the_waiting_thread():
    """The wait sleeps until LEAD_US before the expected time, then polls: the read that brings the frame
    is one of the waiting thread's own polls (no other thread, no hand-off)."""
    link = ScriptedLink()
    d = driver(link)
    t0 = link.t
    link.at(t0 + 5000, beep(0))
    f = d.wait_for(is_beep, 1_000_000, "a beep", expect_at_us=t0 + 5000)
    assert link.reads[0] == 5000 - LEAD_US                # asleep until the window opens
    assert set(link.reads[1:]) == {0}                      # then only polls, the last bringing the frame
    assert d.awake.caught == 1 and f.host_us == t0 + 5000
    assert d.awake.polls == len(link.reads) - 1 == LEAD_US // POLL_US + 1
    assert d.awake.polled_us == LEAD_US                    # the CPU it cost, counted


def test_the_window_is_bounded_and_the_wait_sleeps_again_after_it():
    link = ScriptedLink()
    d = driver(link)
    t0 = link.t
    link.at(t0 + 50_000, beep(0))                          # 45 ms later than said
    f = d.wait_for(is_beep, 1_000_000, "a beep", expect_at_us=t0 + 5000)
    assert f.host_us == t0 + 50_000 and d.awake.caught == 0
    assert d.awake.polled_us == LEAD_US + TAIL_US
    assert link.reads[-1] > 0 and link.polls() == d.awake.polls     # the frame came to a sleeping read
    assert d.awake.until_us == 0


def test_no_expectation_polls_longer_than_the_most_a_window_may_last():
    link = ScriptedLink()
    d = driver(link)
    d.expect_frame(link.t + 10_000, lead_us=50_000, tail_us=50_000)
    assert d.awake.until_us - d.awake.from_us == MAX_WINDOW_US
    assert d.awake.from_us == link.t + 10_000 - MAX_WINDOW_US // 2      # around the expected time


def test_the_rehearsal_reads_the_latest_bytes_in_a_throwaway_driver_and_leaves_the_session_alone():
    link = ScriptedLink()
    d = driver(link)
    link.at(link.t + 10, beep(0))
    d.wait_for(is_beep, 1_000_000, "a beep")
    assert d.awake.rehearsals == 0 and d._understudy is None
    rx, history = d.health.frames_rx, list(d.history)
    link.at(link.t + 5000, beep(1))
    f = d.wait_for(is_beep, 1_000_000, "a beep", expect_at_us=link.t + 5000)
    understudy = d._understudy
    assert d.awake.rehearsals >= 1 and understudy.health.frames_rx == d.awake.rehearsals
    assert understudy.health.frames_missed == 0 and understudy.events.resend is None   # taken as in order
    assert f.msg.event_seq == 1 and d.health.frames_rx == rx + 1 and list(d.history) == history + [f]
    assert d.events.next == 2 and d.health.duplicates == 0


def test_a_commands_reply_is_waited_for_asleep():
    """Polling for a reply took the CPU from a unit on the same host and made round trips slower
    (docs/performance.md): a command's wait sleeps in its read."""
    status = lambda m, seq: M.STATUS(cmd_seq=seq, state=0, cards=0, next_event_seq=0, pending_injects=0, boot_id=1)
    link = ScriptedLink(reply=status, reply_after_us=300)
    d = driver(link)
    d.status()
    assert link.polls() == 0 and d.awake.windows == 0 and len(link.reads) == 1


def test_a_wait_stays_awake_for_the_stimulus_the_session_scheduled():
    link = ScriptedLink()
    d = driver(link)
    d.clock.estimate = ClockEstimate(offset_us=link.t, drift_ppm=0.0, dev_ref=0, uncertainty_us=30, samples=8,
                                     best_rtt_us=60)
    d._injected.append(20_000)                              # a press at device time 20 ms: host t + 20 ms
    t0 = link.t
    link.at(t0 + 20_040, beep(0))
    d.wait_for(is_beep, 1_000_000, "a beep")
    assert link.reads[0] == 20_000 - LEAD_US - 30           # the clock's uncertainty widens the lead
    assert d.awake.windows == 1 and d.awake.caught == 1
    link.at(link.t + 50_000, beep(1))
    d.wait_for(is_beep, 1_000_000, "a beep")
    assert d.awake.windows == 1                             # each stimulus once: no window for a past one


def test_a_virtual_link_never_polls():
    with Driver.open("emu://showdown?clock=virtual", stay_awake=True) as d:
        d.input("load_cards", value=1)
        start = d.input("timer")
        d.inject(start.dev_us + 100_000, "paddle_a")
        d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 10_000_000, "the verdict", expect_at_us=d.now_us() + 10)
        d.status()
        assert (d.awake.windows, d.awake.polls) == (0, 0)


def test_a_driver_stays_awake_only_when_asked():
    link = ScriptedLink()
    d = driver(link, stay_awake=False)
    link.at(link.t + 5000, beep(0))
    d.wait_for(is_beep, 1_000_000, "a beep", expect_at_us=link.t + 5000)
    assert (d.awake.windows, link.polls(), len(link.reads)) == (0, 0, 1)


@pytest.mark.parametrize("ahead_us", [0, LEAD_US // 2])
def test_a_frame_before_the_window_or_at_its_opening_is_read_as_any(ahead_us):
    link = ScriptedLink()
    d = driver(link)
    t0 = link.t
    link.at(t0 + 5000 - LEAD_US - ahead_us, beep(0))
    f = d.wait_for(is_beep, 1_000_000, "a beep", expect_at_us=t0 + 5000)
    assert f.host_us == t0 + 5000 - LEAD_US - ahead_us
