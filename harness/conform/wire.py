"""A raw protocol session for conformance checks: frames out exactly as built (even malformed),
every frame in recorded in order, replies matched by cmd_seq; and the assertions checks make."""
from __future__ import annotations

from contextlib import contextmanager

from unohil.protocol import Frame, FrameError, StreamDecoder, catalogue as cat, devtime, encode, msg
from unohil.protocol.framing import cobs_encode, crc16

from unohil.harness.links.console import last_words
from unohil.harness.session.timing import link_timing

ERR = cat.ENUM_VALUES["error"]
ERR_NAMES = cat.ENUM_NAMES["error"]
KIND_NAMES = cat.ENUM_NAMES["unit_kind"]
ACTION = cat.ENUM_VALUES["action"]
SOURCE = cat.ENUM_VALUES["input_source"]
DISPOSITION = cat.ENUM_VALUES["disposition"]
REPLY_OF = {m.name: m.reply for m in cat.MESSAGES if m.kind == "command"}
REPLY_TIMEOUT_US = 1_000_000
QUIET_US = 100_000
TURNAROUND_MAX_US = 50_000
BURST_SAME_US = 2000        # an event stamped this close after a reply is taken for the rest of its burst


class Fail(Exception):
    """A check found the unit in breach of the SPEC; the message says how."""


def raw_frame(type_id: int, payload: bytes, seq: int, version: int = cat.VERSION_BYTE, bad_crc: bool = False) -> bytes:
    body = bytes([version, type_id]) + (seq & 0xFFFF).to_bytes(2, "little") + bytes(4) + payload
    crc = crc16(body) ^ (0x5A5A if bad_crc else 0)
    return cobs_encode(body + crc.to_bytes(2, "little")) + b"\x00"


class Wire:
    """A raw protocol session: frames out exactly as built, every frame in recorded in order."""

    def __init__(self, link):
        self.link = link
        self.dec = StreamDecoder()
        self.frames: list[Frame] = []
        self.stream_errors: list[FrameError] = []
        self.sent: dict[int, tuple[str, int]] = {}        # seq -> (name, type id) of commands owed a reply
        self.replies: dict[int, list[Frame]] = {}
        self.unattributed: list[Frame] = []
        self.resent: set[int] = set()                      # ids of frames that are EVENT_RESEND copies
        self._resend_left = 0
        self.origin = 0                                    # frames and errors before this are another session's
        self.origin_errors = 0
        self._seq = 0x100
        self.reply_times_us: list[int] = []
        self.timing = link_timing(link)                   # what the link has shown: quiet windows and leads
        self._burst_ref: tuple[int, int] | None = None     # (device, host time) of the latest reply

    def next_seq(self) -> int:
        s = self._seq
        self._seq = (s + 1) & 0xFFFF
        if self._seq == 0xFFFF:
            self._seq = 0
        return s

    # ---- out ----
    def send(self, m, *, owed: bool = True) -> int:
        seq = self.next_seq()
        if owed:
            self.sent[seq] = (m.NAME, m.ID)
        self.link.write(encode(m, seq, 0))
        return seq

    def send_raw(self, data: bytes, owed: dict[int, tuple[str, int]] | None = None) -> None:
        if owed:
            self.sent.update(owed)
        self.link.write(data)

    # ---- in ----
    def pump(self, until_us: int) -> bool:
        left = until_us - self.link.now_us()
        data, host_us = self.link.read(max(0, left))
        if not data:
            return False
        for item in self.dec.feed(data):
            if isinstance(item, FrameError):
                self.stream_errors.append(item)
                continue
            item.host_us = host_us
            self._on_frame(item)
        return True

    def _on_frame(self, f: Frame) -> None:
        self.frames.append(f)
        m = f.msg
        if m.KIND == "reply":
            self._burst_ref = (f.time_us, f.host_us)
            if m.cmd_seq == 0xFFFF:
                self.unattributed.append(f)
                return
            self.replies.setdefault(m.cmd_seq, []).append(f)
            owed = self.sent.get(m.cmd_seq)
            if owed and owed[0] == "EVENT_RESEND" and m.NAME == "ACK" and len(self.replies[m.cmd_seq]) == 1:
                self._resend_left = m.value
        elif m.KIND == "event":
            ref = self._burst_ref
            # a reply is stamped when sent, the events its command caused at the command's arrival: either first
            if ref is not None and abs(devtime.diff(f.time_us, ref[0])) <= BURST_SAME_US:
                # later than the reply by more than the unit's own stamps say: the link's doing
                self.timing.observe_spread(f.host_us - ref[1] - max(0, devtime.diff(f.time_us, ref[0])))
            if self._resend_left > 0:
                self._resend_left -= 1
                self.resent.add(id(f))

    def reply(self, seq: int, timeout_us: int = REPLY_TIMEOUT_US) -> Frame | None:
        deadline = self.link.now_us() + timeout_us
        while not self.replies.get(seq):
            if not self.pump(deadline) and self.link.now_us() >= deadline:
                return None
        return self.replies[seq][0]

    def command(self, m, expect: str | None = None, timeout_us: int = REPLY_TIMEOUT_US) -> Frame:
        seq = self.send(m)
        t0 = self.link.now_us()
        r = self.reply(seq, timeout_us)
        if r is None:
            raise Fail(f"no reply to {m.NAME} (seq {seq}) within {timeout_us // 1000} ms" + last_words(self.link, t0))
        self.reply_times_us.append(r.host_us - t0)
        self.timing.observe_reply(r.host_us - t0)
        if expect is not None and r.msg.NAME != expect:
            raise Fail(f"{m.NAME} answered {show(r)}, expected {expect}")
        return r

    def status(self):
        """STATUS, its state checked first against the last STATE event the unit sent before it (since its
        last boot): both say where the unit is, so a check that compares something else with STATUS.state
        blames STATUS, not the thing compared, when STATUS is the one that disagrees."""
        r = self.command(msg.STATUS_GET(), expect="STATUS")
        at = max(i for i, f in enumerate(self.frames) if f is r)
        for f in reversed(self.frames[self.origin:at]):
            if f.msg.NAME == "BOOT":
                break
            if f.msg.NAME == "STATE" and id(f) not in self.resent:
                expect(r.msg.state == f.msg.state, f"STATUS.state {r.msg.state}, but the unit's last STATE event "
                                                   f"says {f.msg.state}: STATUS misreports the unit's state")
                break
        return r.msg

    def nak(self, m, error: str, detail: int | None = 0) -> Frame:
        r = self.command(m)
        expect_nak(r, m.ID, r.msg.cmd_seq, error, detail, what=m.NAME)
        return r

    def burst_us(self) -> int:
        """How long the rest of a reply's burst (the events its command caused) may take to come, as the link
        has shown (session/timing.py): the window in which a check looks for them."""
        return self.timing.burst_us()

    def lead_us(self, commands: int = 1) -> int:
        """How far ahead of the last reply's time a stimulus sent after `commands` more commands must lie to
        arrive in time: each command's worst round trip and jitter, and the stimulus's own lead."""
        t = self.timing
        return (commands - 1) * (t.worst_round_trip_us() + t.jitter_us()) + t.stimulus_lead_us()

    def quiet(self, us: int = QUIET_US) -> list[Frame]:
        """Everything that arrives within us."""
        n = len(self.frames)
        deadline = self.link.now_us() + us
        while self.link.now_us() < deadline:
            self.pump(deadline)
        return self.frames[n:]

    def wait(self, pred, timeout_us: int, start: int = 0) -> Frame | None:
        deadline = self.link.now_us() + timeout_us
        i = start
        while True:
            while i < len(self.frames):
                if pred(self.frames[i]):
                    return self.frames[i]
                i += 1
            if not self.pump(deadline) and self.link.now_us() >= deadline:
                return None

    def last_dev_time(self) -> int:
        """Header time of the newest reply: a device time certainly in the past."""
        for f in reversed(self.frames):
            if f.msg.KIND == "reply":
                return f.time_us
        return 0


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise Fail(message)


def expect_nak(r: Frame, cmd_type: int, cmd_seq: int, error: str, detail: int | None = 0, what: str = "") -> None:
    m = r.msg
    what = what or f"type {cmd_type:#04x}"
    expect(m.NAME == "NAK", f"{what}: expected NAK {error}, got {show(r)}")
    expect(m.error == ERR[error], f"{what}: expected NAK {error}, got NAK {ERR_NAMES.get(m.error, m.error)}")
    expect(m.cmd_seq == cmd_seq and m.cmd_type == cmd_type,
           f"{what}: NAK names seq {m.cmd_seq} type {m.cmd_type:#04x}, expected seq {cmd_seq} type {cmd_type:#04x}")
    if detail is not None:
        expect(m.detail == detail, f"{what}: NAK {error} detail {m.detail}, expected {detail}")


# What a refused frame must leave as it was (SPEC 4.3: a NAKed command has no effect).
STATUS_KEPT = ("boot_id", "state", "next_event_seq", "pending_injects", "cards")


@contextmanager
def changes_nothing(w: Wire, what: str, owed=None):
    """Around frames that must not change the unit (refused ones, say): afterwards it has sent no event
    but those owed(frame) allows (the INPUT_SEEN a refused INPUT is reported with), and its STATUS is
    as before. what names the frames, for the messages."""
    before = w.command(msg.STATUS_GET(), expect="STATUS").msg
    n = len(w.frames)
    yield
    w.quiet(w.burst_us())
    events = [f for f in w.frames[n:] if f.msg.KIND == "event" and id(f) not in w.resent]
    allowed = [f for f in events if owed is not None and owed(f)]
    acted = [f.msg.NAME for f in events if not any(f is a for a in allowed)]
    expect(not acted, f"{what} were acted on: after them the unit sent {', '.join(acted)}")
    after = w.command(msg.STATUS_GET(), expect="STATUS").msg
    want = before._replace(next_event_seq=(before.next_event_seq + len(allowed)) & 0xFFFF)
    for field in STATUS_KEPT:
        expect(getattr(after, field) == getattr(want, field),
               f"{what} changed STATUS.{field}: {getattr(before, field)} -> {getattr(after, field)}")


def show(f: Frame) -> str:
    m = f.msg
    if m.NAME == "NAK":
        return f"NAK {ERR_NAMES.get(m.error, m.error)} (detail {m.detail})"
    return m.NAME
