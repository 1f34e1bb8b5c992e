"""Putting a unit's events in order: each delivered once, in event_seq order, gaps recovered by
EVENT_RESEND or counted as lost. Pure: the driver does the I/O and passes the time in.

An event whose event_seq is the next one goes to the inbox. One further ahead is held, and the
range before it is asked for again (send(Resend), which the driver turns into EVENT_RESEND);
due() asks again when the answer is overdue, at most RESEND_TRIES times, and then the range is
given up as lost. An older one, or one already held, is a duplicate. Every range given up is kept
in `lost` (first event_seq, count), so what could not be recovered can be named.

A duplicate is a copy only if its payload is the one already received (SPEC 4.5: a resent event has
the same payload; a line that duplicates frames repeats them byte for byte). One that differs is the
unit saying two things under one event_seq: both are kept in `conflicts` (first, copy), for the
race to fail naming them.
"""
from __future__ import annotations

from collections import deque
from typing import Callable

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.session.health import LinkHealth

RESEND_TRIES = 6
MAX_HELD = cat.EVENT_BUFFER * 4
# The device sends the resent events right behind its ACK (SPEC 4.5), so once the ACK is in they are
# overdue after their transit: a resent copy lost on the line is asked for again then, not after a
# whole reply timeout, which would hold every later event (an anchor the runner waits for) that long.
# 4 ms an event is one of up to 46 bytes at 115,200 baud; 20 ms is the link's and the host's slack.
FOLLOW_US = 20_000
FOLLOW_PER_EVENT_US = 4_000


class Resend:
    """One outstanding EVENT_RESEND: the range asked for, what of it is still missing, and when to ask again."""
    __slots__ = ("first", "count", "want", "tries", "deadline")

    def __init__(self, first: int, count: int, deadline: int):
        self.first = first
        self.count = count
        self.want = {(first + i) & 0xFFFF for i in range(count)}
        self.tries = 1
        self.deadline = deadline


class EventSequencer:
    def __init__(self, health: LinkHealth, inbox: deque, history: deque, timeout_us: int,
                 send: Callable[[Resend], None], note: Callable[[str], None] = lambda text: None):
        self.health = health
        self.inbox = inbox
        self.history = history
        self.timeout_us = timeout_us        # how long a resend is waited for before asking again
        self.send = send                    # sends an EVENT_RESEND for the range
        self.note = note                    # told, in words, of every range given up
        self.next: int | None = None        # the event_seq expected next; None outside a session
        self.held: dict[int, Frame] = {}
        self.resend: Resend | None = None
        self.lost: list[tuple[int, int]] = []   # (first event_seq, count) of every range given up
        self.conflicts: list[tuple[Frame, Frame]] = []  # (the event received, a copy saying otherwise)
        self._boot_mark: Frame | None = None    # the last frame of history before the device rebooted

    def start(self, next_seq: int) -> None:
        """A session begins: the device's next event will carry next_seq."""
        self.next = next_seq & 0xFFFF
        self.held.clear()
        self.resend = None

    def stop(self) -> None:
        """The device rebooted: its numbering restarts, nothing before counts."""
        self._boot_mark = self.history[-1] if self.history else None
        self.next = None
        self.held.clear()
        self.resend = None

    # ---- events in ----

    def receive(self, frame: Frame, now_us: int) -> None:
        """An event that is not simply the next one in a clear stream (the driver delivers those itself)."""
        if self.next is None:
            return                          # before the session started: not ours to judge
        seq = frame.msg.event_seq
        d = (seq - self.next) & 0xFFFF
        if d >= 0x8000 or seq in self.held:
            self.health.duplicates += 1
            first = self.held.get(seq) or self._delivered(seq)
            if first is not None and not same_payload(first, frame):
                self.conflicts.append((first, frame))
                self.note(f"event_seq {seq} came twice with different payloads: {first.msg} and {frame.msg}")
            return
        if d == 0:
            self._deliver(frame)
            self._flush_held(now_us)
            return
        self.held[seq] = frame
        if len(self.held) > MAX_HELD:
            self.give_up("too many events held behind a gap", now_us)
        elif self.resend is None:
            self.request(self.next, d, now_us)

    def _delivered(self, seq: int) -> Frame | None:
        """The event of this boot delivered with event_seq seq (the newest such), if history still has it."""
        mark = self._boot_mark
        for f in reversed(self.history):
            if f is mark:
                return None
            if f.msg.event_seq == seq:
                return f
        return None

    def _deliver(self, frame: Frame) -> None:
        seq = frame.msg.event_seq
        r = self.resend
        if r is not None and seq in r.want:
            r.want.discard(seq)
            self.health.events_recovered += 1
        self.next = (seq + 1) & 0xFFFF
        self.inbox.append(frame)
        self.history.append(frame)

    def _flush_held(self, now_us: int) -> None:
        held = self.held
        while held:
            f = held.pop(self.next, None)
            if f is None:
                break
            self._deliver(f)
        r = self.resend
        if r is not None and ((self.next - r.first) & 0xFFFF) >= r.count:
            self.resend = None
        if held and self.resend is None:
            first = min(held, key=lambda s: (s - self.next) & 0xFFFF)
            self.request(self.next, (first - self.next) & 0xFFFF, now_us)

    # ---- recovery ----

    def request(self, first: int, count: int, now_us: int) -> None:
        """Ask for count events from first (at most 255, what one EVENT_RESEND can ask)."""
        self.health.gaps_detected += 1
        self.resend = Resend(first, min(count, 255), now_us + self.timeout_us)
        self.send(self.resend)

    def missing_until(self, next_seq: int) -> int:
        """How many events before next_seq (the device's count, from STATUS) were never received."""
        if self.next is None:
            return 0
        n = (next_seq - self.next) & 0xFFFF
        return 0 if n >= 0x8000 else n

    def answered(self, sent: int, now_us: int) -> None:
        """The device ACKed the resend, saying it sends `sent` of the range: it keeps only its
        newest events, so the oldest of the range are gone for good."""
        r = self.resend
        if r is None:
            return
        if r.count - sent > 0:
            self._skip_lost(r.count - sent, now_us)
        if self.resend is r:
            r.deadline = min(r.deadline, now_us + FOLLOW_US + FOLLOW_PER_EVENT_US * sent)

    def due(self, now_us: int) -> None:
        """Ask again if the answer to the resend is overdue; give up after RESEND_TRIES."""
        r = self.resend
        if r is None or now_us < r.deadline:
            return
        if r.tries >= RESEND_TRIES:
            self.give_up("no answer to EVENT_RESEND", now_us)
            return
        r.tries += 1
        self.health.retries += 1
        r.deadline = now_us + self.timeout_us
        self.send(r)

    def give_up(self, why: str, now_us: int) -> None:
        """Count what is still missing as lost and go on with what is held."""
        if not self.held:
            r, self.resend = self.resend, None
            if r is not None:
                # A tail the device said it sent (STATUS) and that never came: lost, not forgotten.
                n = (r.first + r.count - self.next) & 0xFFFF
                if 0 < n < 0x8000:
                    self.note(f"{n} event(s) from {self.next} lost: {why}")
                    self._skip_lost(n, now_us)
            return
        first = min(self.held, key=lambda s: (s - self.next) & 0xFFFF)
        n = (first - self.next) & 0xFFFF
        self.resend = None
        self.note(f"events {self.next}..{first - 1} lost: {why}")
        self._skip_lost(n, now_us)

    def _skip_lost(self, n: int, now_us: int) -> None:
        self.health.events_lost += n
        self.lost.append((self.next, n))
        for _ in range(n):
            if self.resend is not None:
                self.resend.want.discard(self.next)
            self.next = (self.next + 1) & 0xFFFF
        self._flush_held(now_us)


def same_payload(a: Frame, b: Frame) -> bool:
    """Whether two events are one message (type and every field), whatever their headers say."""
    return type(a.msg) is type(b.msg) and a.msg == b.msg


def describe_conflict(first: Frame, copy: Frame) -> str:
    """Two payloads under one event_seq, in words."""
    return (f"event_seq {first.msg.event_seq} came twice with different payloads (SPEC 4.5: a copy of an event "
            f"is the same event): {first.msg} at device time {first.time_us}, then {copy.msg} "
            f"at {copy.time_us}")


def describe_lost(ranges) -> str:
    """event_seq ranges given up, in words: 'event_seq 48..49, 61'."""
    return "event_seq " + ", ".join(str(first) if n == 1 else f"{first}..{(first + n - 1) & 0xFFFF}"
                                    for first, n in ranges)
