"""The driver: one connected device, spoken to in protocol 1.0.

There is no reader thread. Whoever waits (for a reply, for an event) reads the
link itself, so a frame reaches the waiting code in the same thread that read
it, with no hand-off between read and delivery. Frames carry the host time of
the read that completed them (host_us) and their unwrapped device time (dev_us).
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Callable

from unohil import protocol
from unohil.protocol import Frame, FrameError, StreamDecoder, Unwrapper, catalogue as cat
from unohil.protocol import msg as M
from unohil.protocol.codec import WIRE_SIZE

from unohil.harness.links.console import ConsoleTimes
from unohil.harness.session.awake import LEAD_US, TAIL_US, Awake, ReplayLink
from unohil.harness.session.clocksync import ClockSync
from unohil.harness.session.commands import ACTION, Commands, _Pending, input_id
from unohil.harness.session.device_clock import DeviceClock
from unohil.harness.session.waiting import Waiting
from unohil.harness.session.events import EventSequencer, Resend
from unohil.harness.errors import DeviceReset, LinkError, Nak, WaitTimeout
from unohil.harness.session.health import LinkHealth
from unohil.harness.session.timing import link_timing
from unohil.harness.links import Link, open_link

# The harness's logger tree is "unohil" (session, run, conform): pytest's log options and per-test log files
# show what a unit was told and said. Frames at DEBUG, what the session noticed (gaps, resends) at INFO.
log = logging.getLogger("unohil.session")

__all__ = ["ACTION", "BURST_SAME_US", "Driver", "input_id"]

_BAD_CRC = cat.ENUM_VALUES["error"]["bad_crc"]
# Events stamped this close to a reply are taken for the rest of its burst (what the command caused)
BURST_SAME_US = 2000


def _NOTHING(frame: Frame) -> bool:
    """A rehearsal's predicate: looks at the frame as a waiter's does, and takes none."""
    return frame.msg.NAME is None


def hands_frames(link) -> bool:
    """Whether the link carries frames as objects (an in-process unit's, emulator/inprocess.py): asked of the
    link's own class, so a wrapper that reads and writes its bytes (and forwards the rest) is spoken to in bytes."""
    return getattr(type(link), "read_frames", None) is not None and link.hands_frames


class Driver(Commands, Waiting, DeviceClock):
    """One connected unit: its link, its session's state, the frames read and where they go. What it is
    told is in Commands (commands.py), how it is waited on in Waiting (waiting.py), its clock in
    DeviceClock (device_clock.py)."""

    #: How long a session's start may take, a reboot during it (which starts it again) and
    #: TIME_SYNC exchanges lost on the way included.
    HANDSHAKE_BUDGET_US = 15_000_000

    def __init__(self, link: Link, *, name: str | None = None, trace=None,
                 command_timeout_us: int | None = None, history: int = 20_000,
                 opener: Callable[[str], Link] = open_link, stay_awake: bool = False):
        self.link = link
        self.opener = opener            # opens the URL again after the other end hung up
        self.url = link.url
        self.name = name or link.url
        self.trace = trace
        # None: each reply waited for as SPEC 4.3 and the link's measured round trips allow (session/timing.py)
        self._fixed_timeout_us = command_timeout_us
        self.timing = link_timing(link)
        self._burst_ref: tuple[int, int] | None = None  # (device, host time) of the latest reply: its burst's start
        self.decoder = StreamDecoder()
        self.unwrap = Unwrapper()
        self.health = LinkHealth()
        self.clock = ClockSync()
        self.identity = None
        self.kind: str | None = None
        self.inbox: deque[Frame] = deque()
        # stay_awake: when a frame is expected, a wait polls for it (session/awake.py). Off unless asked: on a
        # shared 2-core VM it did not bring frames to the waiter sooner (docs/performance.md)
        self.awake = Awake()
        self.awake.enabled = stay_awake
        self.awake.replay = self._rehearse
        self._understudy: Driver | None = None     # the throwaway driver of the rehearsals
        self._stimulus_expected = 0     # the device time of the latest stimulus a wait stayed awake for
        self.history: deque[Frame] = deque(maxlen=history)
        self._tx_seq = 0
        self._rx_seq: int | None = None
        self._pending: dict[int, _Pending] = {}
        self.events = EventSequencer(self.health, self.inbox, self.history, self.command_timeout_us, self._send_resend,
                                     self._note)
        self._reset: DeviceReset | None = None
        self._stray: deque[tuple[int, str, int]] = deque(maxlen=8)  # (count, name, cmd_seq) of replies
        self._strays = 0                                            # naming no command we sent
        self._replies = 0
        self._crc_swapped = 0           # frames whose CRC was right but byte-swapped
        self._bad_crc_naks = 0          # unattributed NAKs bad_crc: a frame of ours arrived damaged
        self.caps = 0
        self.last_reply_dev_us = 0
        self.config_cache: dict[str, int] = {}     # what this session last set; cleared by HELLO
        self._injected: list[int] = []             # times of accepted stimuli not known to have run
        self.dirty = False      # a race was cut short: the unit may hold its stimuli (and held buttons)
        self.link_down: str | None = None   # why the link is gone, once an outage budget was spent on it
        self.replaced: str | None = None    # why the session ended for good: another unit answers at the URL
        # Where the unit's switches are (switch -> position), as the host last put them; None: not known
        # (a new session, or a switch input sent since). RESET new_game keeps them (LA-7, FL-17).
        self.switch_positions: dict[str, str] | None = None
        # the unit's debug console (link.console: a qemu: unit's UART1, or --console URL), read beside the link
        self.console_log: deque[dict] = deque(maxlen=history)
        self._console_cursor = 0
        self._console_times = ConsoleTimes(dir="console")

    @property
    def command_timeout_us(self) -> int:
        """How long one try of a command waits for its reply."""
        if self._fixed_timeout_us is not None:
            return self._fixed_timeout_us
        return self.timing.reply_timeout_us()

    # ---- opening ----

    @classmethod
    def open(cls, url: str, *, kind: str | None = None, trace_dir=None, sync: bool = True,
             opener: Callable[[str], Link] = open_link, **kw) -> "Driver":
        """Open the URL and start a session (handshake: HELLO checked, the unit brought clean, the
        clock synchronised); close everything again on any failure."""
        link = opener(url)
        trace = None
        try:
            if trace_dir is not None:
                from unohil.harness.session.trace import TraceWriter
                trace = TraceWriter(trace_dir, url.replace("://", "_").replace("/", "_"))
            drv = cls(link, trace=trace, opener=opener, **kw)
            drv.handshake(expect_kind=kind, sync=sync)
            return drv
        except BaseException:
            link.close()
            if trace is not None:
                trace.close()
            raise

    def close(self) -> None:
        """Leave the unit clean (its pending stimuli cancelled, a new game), then close the link."""
        try:
            self._leave_clean()
        finally:
            try:
                self.link.close()
            finally:
                if self.trace is not None:
                    for rec in self._console_times.give_up(self.clock.estimate):
                        self.trace.write(rec)
                    self.trace.close()

    def _leave_clean(self) -> None:
        if self.identity is None or self._reset is not None or self.replaced or getattr(self.link, "closed", False):
            return      # no session, a rebooted unit (which dropped its stimuli itself), or not this session's unit
        try:
            if self.has_cap("test_mode"):
                self.cancel_injections(retries=0)       # closing: one try, a dead unit costs one timeout
            self.reset("new_game")
        except (LinkError, Nak):
            pass        # a unit that does not answer now is brought clean when the next session starts

    def __repr__(self) -> str:
        ident = self.identity
        if ident is None:
            return f"Driver({self.url}, not connected)"
        return (f"Driver({self.url}, {self.kind}, serial {ident.serial}, firmware {ident.fw_major}.{ident.fw_minor}.{ident.fw_patch}, "
                f"boot {ident.boot_id:#010x})")

    def __enter__(self) -> "Driver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def expect_events_from(self, event_seq: int) -> None:
        """Start event sequencing without a handshake (for links that only emit events)."""
        self.events.start(event_seq)

    def has_cap(self, name: str) -> bool:
        return cat.has_capability(self.caps, name)

    # ---- the byte level ----

    def _send(self, msg) -> int:
        seq = self._tx_seq
        self._tx_seq = (seq + 1) & 0xFFFF
        link = self.link
        handed = hands_frames(link)
        # A link that takes the message as an object is given it unencoded, its fields checked as encoding would
        data = protocol.codec.encode_payload(msg) if handed else protocol.encode(msg, seq, 0)
        if self.trace is not None:
            f = Frame(cat.VERSION_BYTE, seq, 0, msg)
            f.host_us = link.now_us()
            self.trace.frame("tx", f)
        if handed:
            link.write_message(msg, seq)
        else:
            link.write(data)
        self.health.frames_tx += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s tx #%d %s", self.name, seq, msg)
        return seq

    def _pump(self, deadline_us: int) -> bool:
        """Read once, until deadline at most. False if nothing arrived by the deadline."""
        link = self.link
        health = self.health
        stats = self.decoder.stats
        dropped_before = stats.dropped_bytes
        awake = self.awake
        if hands_frames(link):
            # the unit's frames as objects (an in-process unit): nothing to decode
            timeout = deadline_us - link.now_us()
            frames, host_us = link.read_frames(timeout if timeout > 0 else 0)
            size = 0
            for frame in frames:
                frame.host_us = host_us
                size += WIRE_SIZE[frame.msg.__class__]
            health.bytes_rx += size         # what they would have taken on a byte link
        else:
            if awake.until_us:          # a frame is expected soon: poll for it rather than sleep (awake.py)
                data, host_us = awake.read(link, deadline_us)
            else:
                timeout = deadline_us - link.now_us()
                data, host_us = link.read(timeout if timeout > 0 else 0)
            if data and awake.enabled:
                awake.keep(data)
            health.bytes_rx += len(data)
            frames = self.decoder.feed(data, host_us) if data else []
        if getattr(link, "console", None) is not None:
            self._take_console(link.console)
        if not frames:
            return False
        # Per frame, inlined (this runs for every frame received): unwrap the time, count
        # header-seq gaps, trace, dispatch; in-order events go straight to the inbox.
        unwrap, trace, inbox, history = self.unwrap.unwrap, self.trace, self.inbox, self.history
        events = self.events
        rx_seq = self._rx_seq
        errors = 0
        debug = log.isEnabledFor(logging.DEBUG)
        try:
            for frame in frames:
                if frame.__class__ is FrameError:
                    errors += 1
                    self._on_frame_error(frame, host_us)
                    continue
                frame.dev_us = unwrap(frame.time_us)
                m = frame.msg
                seq = frame.seq
                if seq != rx_seq and rx_seq is not None:
                    gap = (seq - rx_seq) & 0xFFFF
                    if gap < 0x8000 and m.NAME != "BOOT":     # a boot restarts the seqs at 0
                        health.frames_missed += gap
                rx_seq = (seq + 1) & 0xFFFF
                if trace is not None:
                    trace.frame("rx", frame)
                if debug:
                    log.debug("%s rx #%d t=%d %s", self.name, seq, frame.time_us, m)
                kind = m.KIND
                if kind == "event":
                    ref = self._burst_ref
                    # a reply is stamped when sent, the events its command caused at its arrival: either first
                    if ref is not None and abs(frame.dev_us - ref[0]) <= BURST_SAME_US:
                        # later than the reply by more than the unit's own stamps say: the link's doing
                        self.timing.observe_spread(host_us - ref[1] - max(0, frame.dev_us - ref[0]))
                    # The next event of a stream without gaps: the sequencer's delivery, inline.
                    if m.event_seq == events.next and not events.held and events.resend is None \
                            and m.NAME != "BOOT":
                        events.next = (m.event_seq + 1) & 0xFFFF
                        inbox.append(frame)
                        history.append(frame)
                    elif m.NAME == "BOOT":
                        self._on_boot(frame)
                    else:
                        events.receive(frame, link.now_us())
                elif kind == "reply":
                    self._on_reply(frame)
        finally:
            self._rx_seq = rx_seq
            health.frames_rx += len(frames) - errors
            health.bytes_dropped += stats.dropped_bytes - dropped_before
        return True

    def _take_console(self, console) -> None:
        """The console's lines since the last read into console_log, and into the trace once placed on the
        unit's clock (links/console.py's ConsoleTimes: a line read before the clock sync waits for it)."""
        lines, self._console_cursor = console.after(self._console_cursor)
        new, settled = self._console_times.take(lines, self.clock.estimate if self.clock.settled else None)
        self.console_log.extend(new)
        if self.trace is not None:
            for rec in settled:
                self.trace.write(rec)

    def _on_frame_error(self, err: FrameError, host_us: int) -> None:
        self.health.bad_frames += 1
        if err.kind == "bad_crc":
            self.health.crc_errors += 1
            self._crc_swapped += err.crc_swapped
        log.info("%s: a frame failed its checks: %s", self.name, err)
        if self.trace is not None:
            self.trace.error(host_us, err)

    def _on_reply(self, frame: Frame) -> None:
        self._replies += 1
        m = frame.msg
        # Unattributed is a NAK naming seq 0xFFFF *and* type 0xFF (SPEC 2.6): our seqs wrap through
        # 0xFFFF too, and the reply to the command sent with it is that command's.
        if m.cmd_seq == 0xFFFF and m.NAME == "NAK" and m.cmd_type == 0xFF:
            self.health.naks_unattributed += 1
            if m.error == _BAD_CRC:
                self._bad_crc_naks += 1
            return
        p = self._pending.get(m.cmd_seq)
        if p is None or p.reply is not None:
            self.health.duplicates += 1
            if p is None:
                self._strays += 1
                self._stray.append((self._strays, m.NAME, m.cmd_seq))
            return
        p.reply = frame
        if p.on_reply is not None:
            del self._pending[m.cmd_seq]
            p.on_reply(frame)

    # ---- events: recovery's I/O (the ordering is session/events.py's) ----

    def _send_resend(self, r: Resend) -> None:
        # An earlier request whose ACK never came would wait in _pending for good.
        for s in [s for s, p in self._pending.items() if p.on_reply is not None]:
            del self._pending[s]
        seq = self._send(M.EVENT_RESEND(first_seq=r.first, count=r.count))
        self._pending[seq] = _Pending("EVENT_RESEND", on_reply=self._on_resend_reply)

    def _on_resend_reply(self, frame: Frame) -> None:
        if frame.msg.NAME != "ACK":
            self.events.give_up("the device refused EVENT_RESEND", self.link.now_us())
        else:
            self.events.answered(frame.msg.value, self.link.now_us())

    def _note(self, text: str) -> None:
        log.info("%s: %s", self.name, text)
        if self.trace is not None:
            self.trace.note(self.link.now_us(), text)

    def _check_recovery(self) -> None:
        if self.events.resend is not None:      # the common case, checked before reading the clock
            self.events.due(self.link.now_us())

    def _resend_deadline(self, deadline: int) -> int:
        """The deadline of a wait, or sooner if a resend is outstanding, so it is asked again in time."""
        r = self.events.resend
        return deadline if r is None else min(deadline, r.deadline)

    # ---- staying awake for an expected frame ----

    def expect_frame(self, at_host_us: int, lead_us: int = LEAD_US, tail_us: int = TAIL_US) -> None:
        """A frame is expected at host time at_host_us: the waits around it poll the link instead of
        sleeping (session/awake.py), so the waiting code has it soon after its read. No-op on a
        virtual link, whose clock does not run while nobody reads."""
        if not self.link.virtual:
            self.awake.expect(at_host_us, lead_us, tail_us)

    def _rehearse(self, data: bytes) -> None:
        """Read data again in a throwaway driver waiting for an event, as this one does when its frame
        comes: the same code, from the read to the waiter's predicate, runs and is in the caches then."""
        understudy = self._understudy
        if understudy is None:
            understudy = self._understudy = Driver(ReplayLink(), name="rehearsal", history=8)
        understudy.link.data = data
        nxt = self.events.next      # the bytes are most likely the latest event: take it as in order
        understudy.events.start(0 if nxt is None else (nxt - 1) & 0xFFFF)
        understudy._pending.clear()
        try:
            understudy.wait_for(_NOTHING, 0, "a rehearsal", probe=False)
        except WaitTimeout:
            pass        # a replay waits for nothing: it ends when its bytes are read

    def _expect_stimuli(self) -> None:
        """Stay awake for the next stimulus this session scheduled (its events come at its device time),
        once per stimulus."""
        est = self.clock.estimate
        if est is None or self.link.virtual:
            return
        after = max(self.unwrap.latest or 0, self._stimulus_expected)
        due = [t for t in self._injected if t > after]
        if due:
            t = self._stimulus_expected = min(due)
            self.awake.expect(round(est.to_host(t)), LEAD_US + int(est.uncertainty_us))

    # ---- reboots ----

    def _on_boot(self, frame: Frame) -> None:
        old = self.identity.boot_id if self.identity is not None else None
        if old is not None and frame.msg.boot_id != old:
            self._rebooted(old, frame.msg.boot_id, "")

    def _rebooted(self, old: int, new: int, seen: str) -> None:
        """The unit's boot id changed (seen in a BOOT event, or in STATUS when the BOOT was lost on
        the link, SPEC 4.2): everything the session knew is void."""
        if self._reset is not None:
            return
        self.health.resets += 1
        self._reset = DeviceReset(f"{self.url}: the device rebooted (boot id {old:#010x} -> {new:#010x}{seen}); "
                                  f"results after this point are void", old, new)
        self.events.stop()
        self._injected.clear()

    def _raise_if_reset(self) -> None:
        if self._reset is not None:
            raise self._reset

    @property
    def reset_detected(self) -> DeviceReset | None:
        return self._reset

    # ---- commands ----

    # ---- time ----

    # ---- waiting ----

