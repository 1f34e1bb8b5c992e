"""Fault injection on an emulated unit's link: a noisy, lossy, slow, flaky line.

A fault spec is a comma-separated list of ITEM=VALUE:

  corrupt=P         each byte the unit sends has one bit flipped, with probability P
  drop=P            each byte the unit sends is lost, with probability P
  dropframe=P       each frame the unit sends is lost whole, with probability P
  dup=P             each frame the unit sends goes out twice, back to back, with probability P
  garbage=P         each frame the unit sends is preceded by 1-16 random bytes (0x00 included),
                    with probability P
  delay=A..B        every burst of output (the frames the unit sends at one instant) arrives
                    after a delay drawn uniformly from [A, B]; a burst never overtakes an
                    earlier one (a line does not reorder). delay=A: always A
  stall=P:D         each frame the unit sends stalls the line with probability P: that frame
                    and everything after it waits until D has passed, then flows again
  reset=P           the unit reboots (BOOT reason watchdog) right after a frame, with
                    probability P per frame
  reset_after=N     the unit reboots once, right after its N-th frame
  baud=B            the line carries B baud, 8N1 (10 bits a byte: 86.8 us at 115200), both ways:
                    each frame arrives when its last byte has crossed, one byte after another (a
                    command reaches the unit when its delimiter has, SPEC 10.2)
  split_burst=A..B  the second frame of a burst (and the rest of it) arrives a delay drawn from
                    [A, B] after the first, as behind a TCP bridge without TCP_NODELAY
  disconnect_after=N
                    the connection drops once, right after the unit's N-th frame (frames
                    still in flight are lost)
  in.corrupt=P, in.drop=P, in.dropframe=P, in.garbage=P
                    the same faults on the bytes the host sends (into the unit): the unit
                    answers what survives as SPEC.md 2.6 says (unattributed NAK bad_crc, or
                    nothing), a lost command gets no reply
  seed=S            seed of the fault generators (default: derived from the unit's seed and
                    serial)

P is a probability, a number in [0, 1] (1e-3, 0.001). Durations (A, B, D) are integers with
a unit, us, ms or s (50us, 2ms, 1s; a bare number is us). N counts the unit's frames from the
start of the link, replies and events alike. Example:

  corrupt=1e-3,drop=1e-3,dropframe=1e-3,dup=1e-4,garbage=1e-4,delay=50us..2ms,stall=1e-4:200ms,seed=7

Where the time comes from: on emu://KIND?clock=virtual&faults=... delays and stalls are in
virtual time (exact, reproducible, and free); served units (`python -m unohil.emulator KIND --pty
--faults ...`, emu://...&clock=real) wait in real time. A disconnect closes a TCP client's
connection or the in-process socket (the unit keeps running; a new connection works), makes a
virtual link raise its closed error (reopening the URL gives a fresh unit), and silences a
pty both ways for good (a pty cannot be closed without its path going away).

Faults draw from their own generators (one per direction, one for timing), never from the
unit's: a unit with faults makes exactly the same game decisions as one without. Separate
generators also keep each kind of fault where it was when another is added (adding
in.corrupt does not move the corrupted bytes of the unit's output). Each fault counts
what it did in stats.

Output held back by delays and stalls is bounded (MAX_HELD bytes, as a unit's transmit
queue): a burst that does not fit is lost, as on a UART whose queue overflowed; the unit's
event ring still has its events for EVENT_RESEND.
"""
from __future__ import annotations

import math
import random
import re
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

from unohil.protocol import ENUMS

from .clock import INPUT

MAX_HELD = 4096
GARBAGE_MAX = 16

_PROB_OUT = ("corrupt", "drop", "dropframe", "dup", "garbage", "reset")
_PROB_IN = ("corrupt", "drop", "dropframe", "garbage")
_COUNTS = ("reset_after", "disconnect_after")
_UNITS = {"us": 1, "ms": 1000, "s": 1_000_000}
_WATCHDOG = ENUMS["boot_reason"].watchdog


class FaultSpecError(ValueError):
    """A fault spec that cannot be parsed; the message names the item."""


@dataclass(frozen=True)
class Direction:
    corrupt: float = 0.0
    drop: float = 0.0
    dropframe: float = 0.0
    dup: float = 0.0
    garbage: float = 0.0
    reset: float = 0.0


@dataclass(frozen=True)
class FaultSpec:
    out: Direction = field(default_factory=Direction)
    into: Direction = field(default_factory=Direction)
    delay: tuple[int, int] | None = None
    stall: tuple[float, int] | None = None
    reset_after: int | None = None
    disconnect_after: int | None = None
    seed: int | None = None
    baud: int | None = None
    split_burst: tuple[int, int] | None = None
    text: str = ""

    @property
    def timed(self) -> bool:
        """True if output may be held back (delay, stall, a baud rate or a split burst)."""
        return (self.delay is not None or self.stall is not None or self.baud is not None
                or self.split_burst is not None)

    def __str__(self) -> str:
        return self.text


def _prob(item: str, value: str) -> float:
    try:
        p = float(value)
    except ValueError:
        raise FaultSpecError(f"faults: {item!r}: {value!r} is not a probability (a number in [0, 1], "
                             f"e.g. 1e-3)") from None
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        raise FaultSpecError(f"faults: {item!r}: a probability must be in [0, 1], not {value}")
    return p


def _duration(item: str, value: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(us|ms|s)?\s*", value)
    if not m:
        raise FaultSpecError(f"faults: {item!r}: {value!r} is not a duration (an integer with us, ms or s, "
                             f"e.g. 200ms)")
    return int(m.group(1)) * _UNITS[m.group(2) or "us"]


def _range(item: str, value: str) -> tuple[int, int]:
    lo, sep, hi = value.partition("..")
    a = _duration(item, lo)
    b = _duration(item, hi) if sep else a
    if b < a:
        raise FaultSpecError(f"faults: {item!r}: the range is empty ({hi.strip()} < {lo.strip()})")
    return a, b


def _count(item: str, value: str) -> int:
    if not value.strip().isdigit():
        raise FaultSpecError(f"faults: {item!r}: {value!r} is not a frame count (a whole number)")
    return int(value)


def parse(text: str | FaultSpec | None) -> FaultSpec | None:
    """The FaultSpec of a spec string (None or "" for no faults). Raises FaultSpecError."""
    if text is None or isinstance(text, FaultSpec):
        return text
    text = text.strip()
    if not text:
        return None
    out: dict = {}
    into: dict = {}
    other: dict = {}
    seen: set[str] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise FaultSpecError(f"faults: {item!r}: expected ITEM=VALUE")
        if key in seen:
            raise FaultSpecError(f"faults: {item!r}: {key} is given twice")
        seen.add(key)
        name = key[3:] if key.startswith("in.") else key[4:] if key.startswith("out.") else key
        if key.startswith("in."):
            if name not in _PROB_IN:
                raise FaultSpecError(f"faults: {item!r}: unknown fault {key!r} on the host's bytes; "
                                     f"known: {', '.join('in.' + k for k in _PROB_IN)}")
            into[name] = _prob(item, value)
        elif name in _PROB_OUT:
            out[name] = _prob(item, value)
        elif key in ("delay", "split_burst"):
            other[key] = _range(item, value)
        elif key == "baud":
            if not value.strip().isdigit() or not 300 <= int(value) <= 100_000_000:
                raise FaultSpecError(f"faults: {item!r}: a baud rate is a whole number from 300 to 100000000, "
                                     f"e.g. baud=115200")
            other["baud"] = int(value)
        elif key == "stall":
            p, sep2, d = value.partition(":")
            if not sep2:
                raise FaultSpecError(f"faults: {item!r}: expected stall=P:DURATION, e.g. stall=1e-4:200ms")
            other["stall"] = (_prob(item, p), _duration(item, d))
        elif key in _COUNTS:
            other[key] = _count(item, value)
        elif key == "seed":
            try:
                other["seed"] = int(value, 0)
            except ValueError:
                raise FaultSpecError(f"faults: {item!r}: the seed must be an integer") from None
        else:
            known = list(_PROB_OUT) + ["delay", "split_burst", "baud", "stall", *_COUNTS, "seed"] + [f"in.{k}" for k in _PROB_IN]
            raise FaultSpecError(f"faults: {item!r}: unknown fault {key!r}; known: {', '.join(known)}")
    return FaultSpec(out=Direction(**out), into=Direction(**into), text=text, **other)


# ---- the fault engine ----

class _Countdown:
    """Events of probability p per trial, drawn as geometric gaps: one draw per event, not per trial."""

    __slots__ = ("p", "left", "_log")

    def __init__(self, p: float, rng: random.Random):
        self.p = p
        self._log = math.log1p(-p) if 0.0 < p < 1.0 else None
        self.left = self.gap(rng)

    def gap(self, rng: random.Random) -> int:
        """Trials up to and including the next event (a huge number when p = 0)."""
        if self.p <= 0.0:
            return 1 << 62
        if self._log is None:
            return 1
        return 1 + int(math.log(1.0 - rng.random()) / self._log)


class _Stream:
    """One direction's byte and frame faults on a stream of 0x00-delimited frames."""

    def __init__(self, d: Direction, rng: random.Random, stats: dict, prefix: str):
        self.rng = rng
        self.stats = stats
        self.prefix = prefix
        self.corrupt = _Countdown(d.corrupt, rng)
        self.drop = _Countdown(d.drop, rng)
        self.dropframe = _Countdown(d.dropframe, rng)
        self.dup = _Countdown(d.dup, rng)
        self.garbage = _Countdown(d.garbage, rng)
        self.reset = _Countdown(d.reset, rng)
        self.frame_faults = any((d.dropframe, d.dup, d.garbage, d.reset))
        self.active = self.frame_faults or bool(d.corrupt or d.drop)
        self.in_frame = False       # the last byte seen was not a delimiter
        self.dropping = False       # the frame under way is being dropped whole
        self.reboot_now = False     # a reset fault fired: the owner reboots the unit after this output

    def _count(self, key: str, n: int = 1) -> None:
        k = self.prefix + key
        self.stats[k] = self.stats.get(k, 0) + n

    def feed(self, data: bytes) -> bytes:
        """The bytes that come out of the line for data."""
        if not self.active:
            return data
        n = len(data)
        frames = data.count(0)
        if (not self.in_frame and not self.dropping and data.endswith(b"\x00")
                and self.corrupt.left > n and self.drop.left > n and self.dropframe.left > frames
                and self.dup.left > frames and self.garbage.left > frames and self.reset.left > frames):
            self.corrupt.left -= n
            self.drop.left -= n
            self.dropframe.left -= frames
            self.dup.left -= frames
            self.garbage.left -= frames
            self.reset.left -= frames
            return data
        out = bytearray()
        start = 0
        while start < n:
            end = data.find(0, start)
            last = end < 0
            piece = data[start:] if last else data[start:end + 1]
            start = n if last else end + 1
            if not self.in_frame and not self.dropping:
                piece = self._frame_start(piece)
            if self.dropping:
                if not last:
                    self.dropping = False
                continue
            self.in_frame = last
            out += self._bytes(piece)
        return bytes(out)

    def _frame_start(self, piece: bytes) -> bytes:
        rng = self.rng
        if self.frame_faults:
            c = self.dropframe
            c.left -= 1
            if c.left <= 0:
                c.left = c.gap(rng)
                self.dropping = True
                self._count("dropped_frames")
                return piece
            c = self.dup
            c.left -= 1
            if c.left <= 0 and piece.endswith(b"\x00"):
                c.left = c.gap(rng)
                self._count("duplicated_frames")
                piece = piece + piece
            c = self.garbage
            c.left -= 1
            if c.left <= 0:
                c.left = c.gap(rng)
                junk = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, GARBAGE_MAX)))
                self._count("garbage_bytes", len(junk))
                piece = junk + piece
            c = self.reset
            c.left -= 1
            if c.left <= 0:
                c.left = c.gap(rng)
                self.reboot_now = True
        return piece

    def _bytes(self, b: bytes) -> bytes:
        n = len(b)
        c, d = self.corrupt, self.drop
        if c.left > n and d.left > n:
            c.left -= n
            d.left -= n
            return b
        buf = bytearray(b)
        rng = self.rng
        i = c.left - 1
        while i < n:
            buf[i] ^= 1 << rng.randrange(8)
            self._count("corrupted_bytes")
            i += c.gap(rng)
        c.left = i - n + 1
        i = d.left - 1
        lost = []
        while i < n:
            lost.append(i)
            i += d.gap(rng)
        d.left = i - n + 1
        if lost:
            self._count("dropped_bytes", len(lost))
            for k in reversed(lost):
                del buf[k]
        return bytes(buf)


class Line:
    """Both directions of one unit's line, and time.

    The owner calls out(data, now) with the unit's output, take(now) for what has arrived
    at the host by then, next_delivery() to know when to look again, and into(data) with
    the host's bytes. After out() it looks at reboot (reboot the unit now, then clear it)
    and cut (the connection dropped: stop serving it).
    """

    def __init__(self, spec: FaultSpec, seed_text: str):
        self.spec = spec
        base = str(spec.seed) if spec.seed is not None else seed_text
        self.stats: dict[str, int] = {}
        self._out = _Stream(spec.out, random.Random(f"uno-hil faults out {base}"), self.stats, "")
        self._in = _Stream(spec.into, random.Random(f"uno-hil faults in {base}"), self.stats, "in.")
        self._time_rng = random.Random(f"uno-hil faults time {base}")
        self._stall = _Countdown(spec.stall[0], self._time_rng) if spec.stall else None
        self.timed = spec.timed
        self.frames_out = 0
        self.reboot = False
        self.cut = False
        self._queue: deque = deque()      # (delivery time, bytes), in order
        self._held = 0
        self._last = 0                    # delivery time of the latest burst
        self._stall_until = 0
        # 8N1: 10 bits a byte; exact fractions so a long run does not drift from the baud rate
        self._byte_us = Fraction(10_000_000, spec.baud) if spec.baud else None
        self._out_free = Fraction(0)      # when the unit's side of the wire is free again
        self._in_free = Fraction(0)       # when the host's side is

    # ---- unit -> host ----
    def _count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def _frames(self, n: int) -> bool:
        """Count the unit's n frames of one burst; True if the line stalls at one of them.
        Bursts are the unit's output at one instant, so a stall, a reboot or a cut takes
        effect at the end of the burst holding the frame that caused it."""
        before = self.frames_out
        self.frames_out = after = before + n
        spec = self.spec
        if spec.reset_after is not None and before < spec.reset_after <= after:
            self.reboot = True
            self._count("resets")
        if spec.disconnect_after is not None and before < spec.disconnect_after <= after:
            self.cut = True
            self._count("disconnects")
        c = self._stall
        if c is None:
            return False
        c.left -= n
        if c.left > 0:
            return False
        while c.left <= 0:
            c.left += c.gap(self._time_rng)
        return True

    def out(self, data: bytes, now: int) -> None:
        """The unit sent data (whole frames) at time now."""
        if self.cut or not data:
            return
        stall = self._frames(data.count(0))
        s = self._out
        data = s.feed(data)
        if s.reboot_now:
            s.reboot_now = False
            self.reboot = True
            self._count("resets")
        if self.cut:
            self._queue.clear()
            self._held = 0
            return
        if not data:
            return
        at = now
        if self.timed:
            if self.spec.delay is not None:
                lo, hi = self.spec.delay
                at = now + (lo if lo == hi else self._time_rng.randint(lo, hi))
            if stall:
                self._stall_until = max(self._stall_until, now) + self.spec.stall[1]
                self._count("stalls")
            at = max(at, self._last, self._stall_until)
            if self._held + len(data) > MAX_HELD:
                self._count("overflow_bytes", len(data))
                return
            if at > now:
                self._count("delayed_bursts")
        if self._byte_us is None and self.spec.split_burst is None:
            self._last = at
            self._queue.append((at, data))
        else:
            for t, piece in self._pace(data, at):
                self._last = t = max(t, self._last)
                self._queue.append((t, piece))
        self._held += len(data)

    def _pace(self, data: bytes, at: int) -> list[tuple[int, bytes]]:
        """(arrival, bytes) of a burst leaving at `at`: a split burst's second frame later, and on a line
        with a baud rate each frame when its last byte has crossed."""
        pieces = [(at, data)]
        if self.spec.split_burst is not None:
            end = data.find(0) + 1
            if 0 < end < len(data):
                lo, hi = self.spec.split_burst
                gap = lo if lo == hi else self._time_rng.randint(lo, hi)
                pieces = [(at, data[:end]), (at + gap, data[end:])]
                self._count("split_bursts")
        if self._byte_us is None:
            return pieces
        out = []
        for t, piece in pieces:
            for frame in _frames_of(piece):
                self._out_free = max(self._out_free, Fraction(t)) + len(frame) * self._byte_us
                out.append((math.ceil(self._out_free), frame))
        return out

    def take(self, now: int) -> bytes:
        """Everything that has arrived at the host by now."""
        q = self._queue
        if not q or q[0][0] > now:
            return b""
        if q[-1][0] <= now:
            parts = [d for _, d in q]
            q.clear()
            self._held = 0
            return b"".join(parts)
        parts = []
        while q and q[0][0] <= now:
            parts.append(q.popleft()[1])
        out = b"".join(parts)
        self._held -= len(out)
        return out

    def next_delivery(self) -> int | None:
        return self._queue[0][0] if self._queue else None

    @property
    def held_bytes(self) -> int:
        return self._held

    # ---- host -> unit ----
    def into(self, data: bytes) -> bytes:
        if self.cut:
            return b""
        return self._in.feed(data)

    @property
    def paces_input(self) -> bool:
        return self._byte_us is not None

    def into_at(self, data: bytes, now: int) -> list[tuple[int, bytes]]:
        """The host's bytes written at now, as (arrival at the unit, bytes): each frame when its delimiter
        has crossed the wire at the baud rate."""
        data = self.into(data)
        out = []
        for frame in _frames_of(data):
            self._in_free = max(self._in_free, Fraction(now)) + len(frame) * self._byte_us
            out.append((math.ceil(self._in_free), frame))
        return out


def _frames_of(data: bytes) -> list[bytes]:
    """data cut after each 0x00 delimiter (a tail without one is a piece of its own)."""
    parts = data.split(b"\x00")
    out = [p + b"\x00" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def reboot(device) -> None:
    """The unit restarts on its own, as after a watchdog reset (SPEC.md 4.9)."""
    device._boot(_WATCHDOG)


def seed_text(unit_seed: int, serial: int) -> str:
    return f"unit {unit_seed} serial {serial}"


class VirtualFaults:
    """A VirtualLink's read and write through a Line, on the link's virtual clock.

    The unit's output enters the line at the host time of the instant it was produced and
    leaves it at its delivery time. A read returns what has been delivered, running the
    unit's timers in between; as in VirtualLink.read, a read that ends at instant T (a
    timeout or a delivery) leaves the unit's timers due at exactly T pending, so that bytes
    the host writes at T arrive first.
    """

    def __init__(self, link, spec: FaultSpec, unit_seed: int, serial: int):
        self.link = link
        self.line = Line(spec, seed_text(unit_seed, serial))

    @property
    def stats(self) -> dict:
        return self.line.stats

    def _collect(self) -> None:
        link, line = self.link, self.line
        while True:
            data = link.device.take_output()
            if not data:
                return
            line.out(data, link._host_now)
            if line.cut:
                link.closed = True
                return
            if line.reboot:
                line.reboot = False
                reboot(link.device)

    def write(self, data: bytes) -> bytes:
        line = self.line
        if not line.paces_input:
            return line.into(data)
        link = self.link
        for t, frame in line.into_at(data, link._host_now):
            link.clock.call_at(max(link.clock.now(), link._clock_limit(t)), link.device.receive, frame,
                               priority=INPUT)
        return b""

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        link, line, clock = self.link, self.line, self.link.clock
        limit_host = link._host_now + max(0, int(timeout_us))
        while True:
            self._collect()
            if link.closed:
                link._check_open()
            data = line.take(link._host_now)
            if data:
                return data, link._host_now
            nxt = line.next_delivery()
            h = limit_host if nxt is None else min(limit_host, nxt)
            limit = max(clock.now(), link._clock_limit(h))
            due = clock.run_next(limit if limit == clock.now() else limit - 1)
            if due is not None:
                link._host_now = max(link._host_now, link._host_at(due))
                continue
            clock.move_to(limit)
            link._host_now = max(link._host_now, h)
            if nxt is None or nxt > limit_host:
                self._collect()
                if link.closed:
                    link._check_open()
                data = line.take(link._host_now)
                return data, link._host_now
