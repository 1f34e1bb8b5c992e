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
from unohil.protocol import Frame, FrameError, StreamDecoder, Unwrapper, catalogue as cat, devtime
from unohil.protocol import msg as M

from unohil.harness.session.clocksync import ClockEstimate, ClockSync, SyncSample
from unohil.harness.session.events import RESEND_TRIES, EventSequencer, Resend
from unohil.harness.errors import CommandTimeout, DeviceMismatch, DeviceReset, LinkClosed, LinkError, Nak, WaitTimeout
from unohil.harness.session.health import LinkHealth
from unohil.harness.session.timing import link_timing
from unohil.harness.links import Link, claim, open_link
from unohil.harness.links.console import last_words

# The harness's logger tree is "unohil" (session, run, conform): pytest's log options and per-test log files
# show what a unit was told and said. Frames at DEBUG, what the session noticed (gaps, resends) at INFO.
log = logging.getLogger("unohil.session")

KIND_NAMES = {v: k for k, v in cat.ENUM_VALUES["unit_kind"].items()}
ERROR_NAMES = {v: k for k, v in cat.ENUM_VALUES["error"].items()}
ACTION = cat.ENUM_VALUES["action"]
IDEMPOTENT = {"HELLO", "TIME_SYNC", "CONFIG_GET", "CONFIG_SET", "STATUS_GET", "EVENT_RESEND", "INJECT_CANCEL"}
_U16 = 0x10000
_BAD_CRC = cat.ENUM_VALUES["error"]["bad_crc"]


def input_id(kind: str, name: str | int) -> int:
    """Input number for a unit kind's input name (e.g. showdown 'paddle_a' -> 0)."""
    if isinstance(name, int):
        return name
    table = _INPUTS.get(kind, {})
    if name not in table:
        raise ValueError(f"{kind} has no input {name!r}; it has: {', '.join(table)}")
    return table[name]


_INPUTS = {name[:-len("_input")]: table for name, table in cat.ENUM_VALUES.items() if name.endswith("_input")}
_SWITCHES = {kind: frozenset(_INPUTS[kind][s] for s in u.switches) for kind, u in cat.UNITS.items()}


class _Pending:
    __slots__ = ("name", "reply", "on_reply")

    def __init__(self, name: str, on_reply: Callable[[Frame], None] | None = None):
        self.name = name
        self.reply: Frame | None = None
        self.on_reply = on_reply


# NAKs a reboot the host has not seen yet can cause: ask STATUS for the boot id before blaming the command
REBOOT_SYMPTOMS = frozenset({"too_late", "wrong_state"})
_HOST = cat.ENUM_VALUES["input_source"]["host"]
_REFUSED = cat.ENUM_VALUES["disposition"]["refused"]
# Events stamped this close to a reply are taken for the rest of its burst (what the command caused)
BURST_SAME_US = 2000
# The commands still sent once a reboot is known: they see it (STATUS) or begin the new session (HELLO)
SURVIVE_REBOOT = frozenset({"HELLO", "STATUS_GET"})


class Driver:
    #: How long a session's start may take, a reboot during it (which starts it again) and
    #: TIME_SYNC exchanges lost on the way included.
    HANDSHAKE_BUDGET_US = 15_000_000

    def __init__(self, link: Link, *, name: str | None = None, trace=None,
                 command_timeout_us: int | None = None, history: int = 20_000,
                 opener: Callable[[str], Link] = open_link):
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

    def now_us(self) -> int:
        return self.link.now_us()

    def expect_events_from(self, event_seq: int) -> None:
        """Start event sequencing without a handshake (for links that only emit events)."""
        self.events.start(event_seq)

    def has_cap(self, name: str) -> bool:
        return cat.has_capability(self.caps, name)

    # ---- the byte level ----

    def _send(self, msg) -> int:
        seq = self._tx_seq
        self._tx_seq = (seq + 1) & 0xFFFF
        data = protocol.encode(msg, seq, 0)
        if self.trace is not None:
            f = Frame(cat.VERSION_BYTE, seq, 0, msg)
            f.host_us = self.link.now_us()
            self.trace.frame("tx", f)
        self.link.write(data)
        self.health.frames_tx += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s tx #%d %s", self.name, seq, msg)
        return seq

    def _pump(self, deadline_us: int) -> bool:
        """Read once, until deadline at most. False if nothing arrived by the deadline."""
        link = self.link
        timeout = deadline_us - link.now_us()
        data, host_us = link.read(timeout if timeout > 0 else 0)
        if getattr(link, "console", None) is not None:
            self._take_console(link.console)
        if not data:
            return False
        health = self.health
        health.bytes_rx += len(data)
        stats = self.decoder.stats
        dropped_before = stats.dropped_bytes
        # Per frame, inlined (this runs for every frame received): unwrap the time, count
        # header-seq gaps, trace, dispatch; in-order events go straight to the inbox.
        frames = self.decoder.feed(data, host_us)
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
        """The console's lines since the last read, each with the device time of its host stamp (through
        the clock sync; None before there is one), into console_log and the trace."""
        lines, self._console_cursor = console.after(self._console_cursor)
        est = self.clock.estimate
        for ln in lines:
            rec = {"host_us": ln.host_us, "dev_us": int(est.to_device(ln.host_us)) if est is not None else None,
                   "dir": "console", "text": ln.text}
            self.console_log.append(rec)
            if self.trace is not None:
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
        if m.cmd_seq == 0xFFFF:
            self.health.naks_unattributed += 1
            if m.NAME == "NAK" and m.error == _BAD_CRC:
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

    def command(self, msg, timeout_us: int | None = None, retries: int | None = None) -> Frame:
        """Send a command and return its one reply. Raises Nak, CommandTimeout, DeviceReset."""
        timeout = self.command_timeout_us if timeout_us is None else timeout_us
        tries = (2 if msg.NAME in IDEMPOTENT else 0) if retries is None else retries
        crc_errors, strays = self.health.crc_errors, self._strays
        void = msg.NAME not in SURVIVE_REBOOT
        # A command that may be sent again is, as soon as the unit says a frame reached it damaged
        # (SPEC 2.6): most likely this one, whose reply would never come. INJECT is not resent
        # blindly, but its caller asks STATUS whether it was taken at once rather than after the timeout.
        early = tries > 0 or msg.NAME == "INJECT"
        while True:
            if self._reset is not None and void:
                # Not sent at all: the rebooted unit would act on it in its new boot (an INJECT
                # timed on the old boot's clock would stay pending into the next session).
                raise self._reset
            seq = self._send(msg)
            sent_us = self.link.now_us()        # after the write: a host stalled in it is no slow link
            p = self._pending[seq] = _Pending(msg.NAME)
            deadline = sent_us + timeout
            damaged = self._bad_crc_naks
            while p.reply is None:
                if self._reset is not None and void:
                    self._pending.pop(seq, None)
                    raise self._reset
                self._check_recovery()
                if not self._pump(deadline) and self.link.now_us() >= deadline:
                    break
                if early and self._bad_crc_naks != damaged and p.reply is None:
                    break
            self._pending.pop(seq, None)
            if p.reply is not None:
                break
            if tries <= 0:
                waited = (f"within {timeout} us" if self._bad_crc_naks == damaged else
                          "(the unit answered a damaged frame with NAK bad_crc instead)")
                raise CommandTimeout(f"{self.url}: no reply to {msg.NAME} (seq {seq}) {waited}"
                                     + self._why_no_reply(msg.NAME, crc_errors, strays)
                                     + last_words(self.link, sent_us))
            tries -= 1
            self.health.retries += 1
        reply = p.reply
        self.last_reply_dev_us = reply.dev_us
        self._burst_ref = (reply.dev_us, reply.host_us)
        self.timing.observe_reply(reply.host_us - sent_us)
        self.events.timeout_us = self.command_timeout_us
        if reply.msg.NAME == "NAK":
            error = ERROR_NAMES.get(reply.msg.error, str(reply.msg.error))
            if error in REBOOT_SYMPTOMS and void and self.identity is not None:
                # A unit that rebooted unseen (its BOOT lost on the line) refuses a stimulus for
                # the old session's clock or state: that is the reboot, not the command's fault.
                self.status()
                if self._reset is not None:
                    raise self._reset
            raise Nak(msg.NAME, error, reply.msg.detail)
        return reply

    def _why_no_reply(self, command: str, crc_errors_before: int, strays_before: int) -> str:
        """What the link saw instead of the reply, when it saw something: the cause, not the symptom."""
        want = cat.BY_NAME[command].reply
        stray = [s for n, name, s in self._stray if n > strays_before and name in (want, "NAK")]
        if stray:
            return (f"; {want} replies did arrive, naming cmd_seq {', '.join(map(str, stray[-3:]))}: the unit "
                    f"does not echo the command's seq in cmd_seq (SPEC 4.3)")
        bad = self.health.crc_errors - crc_errors_before
        if bad:
            # only when every CRC failure so far was a swapped CRC: damage on a faulty line makes one now and
            # then by chance (1 in 65536), and the unit is not to be blamed for the line
            hint = ("; their CRCs are right with the two bytes swapped: the unit sends its CRC big-endian, "
                    "SPEC 2 wants it little-endian") if self._crc_swapped == self.health.crc_errors else ""
            return f"; {bad} frame(s) from the unit arrived but failed their CRC{hint}"
        return ""

    def hello(self, expect_kind: str | None = None):
        versions = self.decoder.stats.errors["bad_version"]
        try:
            reply = self.command(M.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), retries=3)
        except Nak as exc:
            if exc.error != "bad_version":
                raise
            raise DeviceMismatch(f"{self.url}: the device speaks protocol {exc.detail}.x and refused this harness's "
                                 f"{cat.MAJOR}.{cat.MINOR}: update the firmware or the harness") from None
        except CommandTimeout:
            if self.decoder.stats.errors["bad_version"] > versions:
                raise DeviceMismatch(f"{self.url}: the device answers in frames of another protocol version "
                                     f"(this harness speaks {cat.MAJOR}.{cat.MINOR}): update the firmware or "
                                     f"the harness") from None
            raise
        ident = reply.msg
        if ident.NAME != "IDENTITY":
            raise DeviceMismatch(f"{self.url}: answered HELLO with {ident.NAME}, not IDENTITY")
        if ident.proto_major != cat.MAJOR:
            raise DeviceMismatch(f"{self.url}: the device speaks protocol {ident.proto_major}.{ident.proto_minor}, "
                                 f"this harness {cat.MAJOR}.{cat.MINOR}: update the firmware or the harness")
        if ident.proto_minor == cat.MINOR and ident.catalog_crc != cat.CATALOG_CRC:
            raise DeviceMismatch(f"{self.url}: the device's protocol {cat.MAJOR}.{cat.MINOR} catalogue differs from "
                                 f"this harness's (CRC {ident.catalog_crc:#06x} vs {cat.CATALOG_CRC:#06x})")
        kind = KIND_NAMES.get(ident.kind, f"unknown({ident.kind})")
        if expect_kind is not None and kind != expect_kind:
            raise DeviceMismatch(f"{self.url}: this is a {kind} unit, not a {expect_kind} (serial {ident.serial})")
        unusable = _unusable(ident)
        if unusable:
            raise DeviceMismatch(f"{self.url}: {kind} unit, serial {ident.serial}: {unusable}")
        if self.identity is not None and (ident.serial, kind) != (self.identity.serial, self.kind):
            # after an outage another unit answers at the URL: what this session found was the first one's
            self.replaced = (f"{self.url}: another unit answers here since the link came back ({kind}, serial "
                             f"{ident.serial}; this session's unit was {self.kind}, serial {self.identity.serial}): "
                             f"this device's run ends; its results until then are the first unit's")
            self.link_down = self.replaced
            raise DeviceMismatch(self.replaced)
        if self.identity is not None and ident.boot_id != self.identity.boot_id:
            self._injected.clear()
            if self._reset is None:
                self.health.resets += 1
        claim.identified(self.link, kind, ident.serial, ident.boot_id)     # refused if another route holds this unit
        self.identity = ident
        self.kind = kind
        self.config_cache.clear()
        self.switch_positions = None
        self.caps = ident.caps
        self._reset = None
        self.clock.reset()
        status = self.status()
        self.events.start(status.next_event_seq)
        self.inbox.clear()
        return ident

    def handshake(self, expect_kind: str | None = None, *, clean: bool = True, sync: bool = True):
        """Start a session: HELLO (checked), the unit brought clean (whatever an earlier session left
        on it), the clock synchronised. A reboot on the way, or a command whose tries all went
        unanswered while the unit did answer something (the line loses replies), starts it again, within
        HANDSHAKE_BUDGET_US. Returns the IDENTITY."""
        deadline = self.link.now_us() + self.HANDSHAKE_BUDGET_US
        heard = self._heard()
        while True:
            try:
                ident = self.hello(expect_kind=expect_kind)
                if clean:
                    self.bring_clean()
                if sync:
                    self.sync_clock(deadline_us=deadline)
                return ident
            except DeviceReset:
                if self.link.now_us() >= deadline:
                    raise
                self._note("the unit rebooted during the handshake: starting it again")
                self.unwrap.reset()
            except CommandTimeout as exc:
                # Replies lost on a line that does carry the unit's bytes (damaged, cut): worth asking again
                # while the budget lasts. A unit that sent nothing at all is reported after HELLO's own tries.
                if self._heard() == heard or self.link.now_us() >= deadline:
                    raise
                self._note(f"{exc}: starting the handshake again")
                self.health.retries += 1
            self._pending.clear()

    def _heard(self) -> int:
        """Replies and damaged frames received so far: what a unit that answers sends on a bad line."""
        return self._replies + self.health.bad_frames + self.health.bytes_dropped

    def bring_clean(self) -> int:
        """Drop what an earlier session may have left on the unit: a process killed mid-race leaves
        its stimuli pending, and RESET new_game keeps them (SPEC 4.9). Cancels them (STATUS says how
        many there are), then a new game, whose events are received here. Returns how many stimuli
        were dropped."""
        dropped = 0
        if self.has_cap("test_mode") and self.status().pending_injects:
            dropped = self.cancel_injections()
            self._note(f"{dropped} stimuli left pending by an earlier session: cancelled")
        self.reset("new_game", retries=2)       # a second new game (the first ACK lost) is harmless here
        self.confirm_events()
        return dropped

    def reconnect(self, expect_kind: str | None = None, clean: bool = True):
        """Start a session again (reopening the link if it closed) after a reset or a disconnect."""
        for attempt in (0, 1):
            if getattr(self.link, "closed", False):
                self.link = self.opener(self.url)
                self.decoder = StreamDecoder()
                self._rx_seq = None
            self.unwrap.reset()
            self._pending.clear()
            try:
                return self.handshake(expect_kind=expect_kind or self.kind, clean=clean, sync=False)
            except LinkClosed:
                if attempt:
                    raise
                self.link.close()       # the other end hung up (a TCP server, a pty): open the URL again
        raise AssertionError("unreachable")

    def reboot(self):
        """RESET reboot, then a new session: the unit back at power-on (configuration, pending
        stimuli, and an emulated unit's switches and door). Asked for, so not counted in
        health.resets."""
        resets = self.health.resets
        try:
            self.reset("reboot", retries=2)     # a second reboot (the first ACK lost) is harmless
        except DeviceReset:
            pass
        ident = self.reconnect(clean=False)     # a unit at power-on is clean
        self.health.resets = resets
        self.dirty = False
        return ident

    def status(self):
        st = self.command(M.STATUS_GET()).msg
        ident = self.identity
        if ident is not None and st.boot_id != ident.boot_id:
            self._rebooted(ident.boot_id, st.boot_id, ", seen in STATUS")
        return st

    def config_get(self, name: str) -> int:
        p = _param(name)
        return self.command(M.CONFIG_GET(param=p.id)).msg.value

    def config_set(self, name: str, value: int) -> int:
        p = _param(name)
        return self.command(M.CONFIG_SET(param=p.id, value=int(value))).msg.value

    def apply_config(self, values: dict[str, int]) -> None:
        """Bring the named parameters to these values, sending only what changed.

        Some parameters constrain each other (countdown min <= max, flight > tie window),
        so a change refused as bad_value is retried after the others have gone in.
        """
        todo = {k: v for k, v in values.items() if self.config_cache.get(k) != v}
        while todo:
            refused: dict[str, int] = {}
            last: Nak | None = None
            for name, value in todo.items():
                try:
                    self.config_cache[name] = self.config_set(name, value)
                except Nak as exc:
                    if exc.error != "bad_value":
                        raise
                    refused[name], last = value, exc
            if len(refused) == len(todo):
                raise Nak("CONFIG_SET", f"bad_value for {', '.join(f'{k}={v}' for k, v in refused.items())}"
                          if last else "bad_value")
            todo = refused

    def reset(self, mode: str = "new_game", retries: int = 0) -> None:
        """RESET. retries > 0 resends it when no reply comes: only for callers to whom a second
        new game is harmless (a reset the device did but whose ACK was lost happens twice)."""
        self.command(M.RESET(mode=cat.ENUM_VALUES["reset_mode"][mode]), retries=retries)

    def input(self, name: str | int, action: str = "press", value: int = 0) -> Frame:
        """Apply an input now (host-timed). Returns the ACK frame (or the INPUT_SEEN standing for a lost one);
        its host_us is when it was confirmed.

        INPUT must not be resent blindly (SPEC 4.3): when its reply is lost, the unit's INPUT_SEEN (source
        host, which follows the reply, refused or not) tells whether it acted; that INPUT_SEEN is returned (its
        device time is the input's), a refusal it reports raised as the NAK would have been. Only an INPUT the
        unit says it never saw (every event it sent fetched back, none of them this input's) is sent again."""
        m = M.INPUT(input=self._input(name), action=ACTION[action], value=value)
        for attempt in range(3):
            since = self.history[-1] if self.history else None     # the input's INPUT_SEEN can only come after
            try:
                return self.command(m)
            except CommandTimeout:
                if attempt == 2:
                    raise
                seen = self._input_seen(m, since)
                if seen is None:
                    raise
                if seen is False:
                    self.health.retries += 1
                    continue
                if seen.msg.disposition == _REFUSED:
                    raise Nak("INPUT", ERROR_NAMES.get(seen.msg.detail, str(seen.msg.detail)),
                              self._state_after(seen)) from None
                return seen
        raise AssertionError("unreachable")

    def _input_seen(self, m, since: Frame | None):
        """After an INPUT got no reply: its INPUT_SEEN (source host) if the unit saw it, False if the unit says
        it did not (every event it sent is here and none is this input's), None if that cannot be known."""
        try:
            st = self.status()
        except LinkError:
            return None
        if self._reset is not None or not self._events_until(st.next_event_seq):
            return None
        for f in reversed(self.history):
            if f is since:
                break
            e = f.msg
            if (e.NAME == "INPUT_SEEN" and e.source == _HOST and e.input == m.input and e.action == m.action
                    and e.value == m.value):
                return f
        return False

    def _state_after(self, seen: Frame) -> int:
        """The detail NAK wrong_state would have had, the unit's state: INPUT_SEEN carries only the error, and a
        refused input changed nothing, so STATUS's state is the one it refused in."""
        return self.status().state if ERROR_NAMES.get(seen.msg.detail) == "wrong_state" else 0

    def _input(self, name: str | int) -> int:
        """The input's number; sending a switch's input makes its position unknown (it may be refused)."""
        inp = input_id(self.kind, name)
        if self.switch_positions is not None and inp in _SWITCHES.get(self.kind, ()):
            self.switch_positions = None
        return inp

    def inject(self, at_dev_us: int, name: str | int, action: str = "press", value: int = 0) -> int:
        """Schedule an input at an exact device time (test mode). Returns the stimulus id (0 if the
        device took the stimulus but its ACK was lost on the link).

        INJECT must not be resent blindly (SPEC 4.3): when no reply comes, STATUS and the event
        stream tell whether the device took it, and it is resent only if it did not."""
        m = M.INJECT(at_us=devtime.wrap(at_dev_us), input=self._input(name), action=ACTION[action], value=value)
        for attempt in range(3):
            try:
                sid = self.command(m).msg.value
            except CommandTimeout:
                if attempt == 2:
                    raise
                took = self._inject_took(at_dev_us, m)
                if took is None:
                    raise
                if not took:
                    self.health.retries += 1
                    continue
                sid = 0
            injected = self._injected
            if len(injected) > 2 * cat.INJECT_QUEUE:
                latest = self.unwrap.latest or 0
                injected[:] = [t for t in injected if t > latest]
            injected.append(at_dev_us)
            return sid
        raise AssertionError("unreachable")

    def _inject_took(self, at: int, m) -> bool | None:
        """After an INJECT got no reply: True if the device took it, False if not (and it is still
        in the future), None if that cannot be known."""
        try:
            st = self.status()
        except LinkError:
            return None
        now = self.last_reply_dev_us
        if self._reset is not None:
            return None
        if at > now:
            # Still pending if taken: compare the device's count with the stimuli we know of.
            known = sum(1 for t in self._injected if t > now)
            if st.pending_injects == known + 1:
                return True
            return False if st.pending_injects == known else None
        if at == now or not self._events_until(st.next_event_seq):
            return None
        # Already due: it ran iff its INPUT_SEEN (source injected, at exactly at) is in the stream.
        injected = cat.ENUM_VALUES["input_source"]["injected"]
        for f in reversed(self.history):
            if f.dev_us < at:
                break
            e = f.msg
            if (f.dev_us == at and e.NAME == "INPUT_SEEN" and e.source == injected and e.input == m.input
                    and e.action == m.action and e.value == m.value):
                return True
        return None

    def _events_until(self, next_seq: int) -> bool:
        """Receive (recovering gaps) every event before next_seq. False if some are lost."""
        lost = self.health.events_lost
        ev = self.events
        deadline = self.link.now_us() + (RESEND_TRIES + 1) * self.command_timeout_us
        while True:
            if ev.next is None or self._reset is not None or self.health.events_lost != lost:
                return False
            missing = ev.missing_until(next_seq)
            if not missing:
                return True
            if ev.resend is None:
                ev.request(ev.next, missing, self.link.now_us())
            self._check_recovery()
            if self.link.now_us() >= deadline:
                ev.give_up("no answer to EVENT_RESEND", self.link.now_us())
                return False
            self._pump(self._resend_deadline(deadline))

    def cancel_injections(self, retries: int | None = None) -> int:
        n = self.command(M.INJECT_CANCEL(), retries=retries).msg.value
        self._injected.clear()
        return n

    # ---- time ----

    def sync_clock(self, exchanges: int = 8, deadline_us: int | None = None) -> ClockEstimate:
        """Add `exchanges` samples to the clock mapping. An exchange that gets no answer (its retries
        spent) is skipped and the good samples kept: only a deadline (HANDSHAKE_BUDGET_US from now
        by default) that passes without a single good sample is an error."""
        if deadline_us is None:
            deadline_us = self.link.now_us() + self.HANDSHAKE_BUDGET_US
        exchange = self._sync_exchange if self.has_cap("time_sync") else self._status_exchange
        done = 0
        while done < exchanges:
            try:
                exchange()
                done += 1
            except CommandTimeout:
                if self.link.now_us() < deadline_us:
                    continue
                if self.clock.estimate is None:
                    raise
                break
        if self.clock.estimate is None:
            # every exchange was refused by the fit: the unit counted more time between request and reply
            # than the host's whole round trip (a clock not running at host rate, e.g. QEMU's -icount)
            raise LinkError(f"{self.url}: no usable clock sync: in each of {exchanges} exchanges the unit's clock "
                            f"advanced more than the host's round trip; its time does not run at host rate")
        return self.clock.estimate

    def _timed(self, make) -> tuple[int, Frame]:
        """(host send time, reply) of a command made by make(t1). Each try is sent afresh with its own send
        time: a retry's reply timed from the first try would count that try's timeout into the round trip
        and shift the clock mapping by half of it (seconds, once every exchange of a sync needed a retry)."""
        for attempt in range(3):
            t1 = self.link.now_us()
            try:
                return t1, self.command(make(t1), retries=0)
            except CommandTimeout:
                if attempt == 2:
                    raise
                self.health.retries += 1
        raise AssertionError("unreachable")

    def _sync_exchange(self) -> None:
        t1, reply = self._timed(lambda t1: M.TIME_SYNC(t1_host_us=t1))
        m = reply.msg
        if m.t1_host_us != t1:
            return      # the answer to another exchange (a duplicate, a retry's): not a sample
        t3 = reply.dev_us
        t2 = t3 - devtime.diff(m.t3_us, m.t2_us)
        self.clock.add(SyncSample(t1, t2, t3, reply.host_us))

    def _status_exchange(self) -> None:
        """For a unit without TIME_SYNC (an optional capability): a reply's header time is a device
        time between its command's arrival and the reply's departure (SPEC 3), so STATUS_GET round
        trips bound the offset as TIME_SYNC's do, with the unit's turnaround inside the round trip."""
        t1, reply = self._timed(lambda t1: M.STATUS_GET())
        self.clock.add(SyncSample(t1, reply.dev_us, reply.dev_us, reply.host_us))

    def dev_to_host(self, dev_us: int) -> float:
        if self.clock.estimate is None:
            self.sync_clock()
        return self.clock.estimate.to_host(dev_us)

    def device_now(self) -> int:
        """Best estimate of the device's unwrapped time now."""
        if self.clock.estimate is None:
            self.sync_clock()
        return int(self.clock.estimate.to_device(self.link.now_us()))

    # ---- waiting ----

    def next_event(self, timeout_us: int, what: str = "an event") -> Frame:
        return self.wait_for(lambda f: True, timeout_us, what)

    def wait_for(self, predicate: Callable[[Frame], bool], timeout_us: int, what: str,
                 collect: list | None = None, probe: bool = True) -> Frame:
        """Consume events in order until one satisfies predicate.

        Events consumed on the way are appended to collect (when given); all stay
        in history. On timeout the device is asked for its event count once, so a
        lost trailing event (a verdict, say) is recovered rather than missed.
        """
        deadline = self.link.now_us() + timeout_us
        probed = not probe
        while True:
            inbox = self.inbox
            while inbox:
                f = inbox.popleft()
                if collect is not None:
                    collect.append(f)
                if predicate(f):
                    return f
            self._raise_if_reset()
            self._check_recovery()
            # While a resend is outstanding, wake at its deadline too, to ask again in time.
            r = self.events.resend
            if self._pump(deadline if r is None else min(deadline, r.deadline)) or self.link.now_us() < deadline:
                continue
            if self.events.resend is not None:
                deadline = self.link.now_us() + self.command_timeout_us
                continue
            if not probed:
                # Ask how far the device got: a lost event is recovered, and one held up on the link
                # arrives ahead of the reply (a line does not reorder) and is looked at before giving up.
                probed = True
                if self._probe_trailing_gap():
                    deadline = self.link.now_us() + self.command_timeout_us
                continue
            raise WaitTimeout(f"{self.url}: no {what} within {timeout_us} us")

    def _probe_trailing_gap(self) -> bool:
        """True if the device has sent events we never saw (and recovery has started)."""
        try:
            st = self.status()
        except LinkError:
            return False
        ev = self.events
        missing = ev.missing_until(st.next_event_seq)
        if not missing:
            return False
        if ev.resend is None:
            ev.request(ev.next, missing, self.link.now_us())
        return True

    def confirm_events(self, collect: list | None = None) -> None:
        """Make sure every event the device has sent so far has been received (into collect).

        A lost event is found by the gap it leaves before the next one; a lost last event
        leaves none, so ask the device how far it has got (STATUS) and recover the rest.
        Events that cannot be recovered are counted in health.events_lost. Raises
        DeviceReset if the device rebooted."""
        self.catch_up()
        if collect is not None:
            collect.extend(self.inbox)
        self.inbox.clear()

    def catch_up(self, asks: int = 3):
        """Fetch back everything the unit says it has sent: its event count (STATUS, asked up to
        `asks` times, each with its retries, since a race is judged on the answer) and every event
        before it (EVENT_RESEND, retried). Returns the STATUS; what could not be fetched back is in
        health.events_lost and events.lost. Raises CommandTimeout when STATUS never comes back,
        DeviceReset when the unit rebooted."""
        self._raise_if_reset()
        for ask in range(asks):
            try:
                st = self.status()
                break
            except CommandTimeout:
                if ask == asks - 1:
                    raise
        self._raise_if_reset()
        self._events_until(st.next_event_seq)
        self._raise_if_reset()
        return st

    def transit_margin_us(self) -> int:
        """How long after the host time of a device time its events may still be on their way: what
        wait_until waits beyond it on a real link (0 on a virtual one, whose reads are exact)."""
        if self.link.virtual:
            return 0
        est = self.clock.estimate or self.sync_clock()
        return 2000 + int(2 * est.uncertainty_us) + est.best_rtt_us + self.timing.late_us()

    def stimulus_lead_us(self) -> int:
        """How far ahead of the device's now a stimulus must be sent to get there in time (session/timing.py:
        the link's measured round trips and jitter, its byte time, USB frames, the clock's uncertainty)."""
        est = self.clock.estimate or self.sync_clock()
        return self.timing.stimulus_lead_us(est.uncertainty_us)

    def stimulus_placement_us(self) -> int:
        """How far from its scheduled device time a scheduled stimulus may land: 0, an INJECT lands on its
        exact microsecond (SPEC 4.8)."""
        return 0

    def wait_until(self, dev_us: int, collect: list | None = None, margin_us: int | None = None) -> None:
        """Return once every event up to device time dev_us has been received (into collect).

        On a virtual link that is exact: the clock stops at dev_us and all output
        due then is read. On a real link the wait lasts until the mapped host time
        plus a margin for the link's transit time.
        """
        est = self.clock.estimate
        if est is None:
            est = self.sync_clock()
        if self.link.virtual:
            target = round(est.to_host(dev_us))
        else:
            target = est.to_host(dev_us) + (self.transit_margin_us() if margin_us is None else margin_us)
        while self.link.now_us() < target:
            self._raise_if_reset()
            self._check_recovery()
            self._pump(self._resend_deadline(int(target)))
        # what has arrived by then is read too: on a virtual link all output due at dev_us; on a real one a
        # target already past (another device was waited for first) waits for nothing, but events up to
        # dev_us may be sitting in the link's buffer
        while self._pump(self.link.now_us()):
            pass
        self._raise_if_reset()
        if collect is not None:
            collect.extend(self.inbox)
        self.inbox.clear()

    def drain(self, quiet_us: int = 0) -> list[Frame]:
        """Everything that arrives until the link is quiet for quiet_us; the inbox is emptied."""
        while self._pump(self.link.now_us() + quiet_us):
            pass
        out = list(self.inbox)
        self.inbox.clear()
        return out


def _unusable(ident) -> str:
    """What in an IDENTITY this harness cannot work with, naming the field ("" if nothing)."""
    if ident.inject_queue == 0 and cat.has_capability(ident.caps, "test_mode"):
        # SPEC 4.8 has a unit with test_mode hold 16 pending stimuli; one that holds none cannot take an INJECT
        return (f"IDENTITY.inject_queue is 0 with capability test_mode set: SPEC 4.8 has such a unit accept "
                f"{cat.INJECT_QUEUE} pending INJECT stimuli, so no stimulus can be scheduled on it; not a unit of "
                f"protocol {cat.MAJOR}.{cat.MINOR} as it stands (fix the firmware's IDENTITY)")
    return ""


def _param(name: str):
    p = cat.PARAMS_BY_NAME.get(name)
    if p is None:
        raise ValueError(f"no configuration parameter {name!r}; known: {', '.join(cat.PARAMS_BY_NAME)}")
    return p
