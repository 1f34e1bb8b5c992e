"""What the driver tells a unit: each command and its reply (retried, a NAK named, a reboot seen for
what it is), the session's start (HELLO, the handshake), configuration, and stimuli given now (INPUT)
or at a device time (INJECT). A part of Driver (driver.py), which holds the state these read."""
from __future__ import annotations

from typing import Callable

from unohil.protocol import Frame, StreamDecoder, catalogue as cat, devtime
from unohil.protocol import msg as M

from unohil.harness.errors import CommandTimeout, DeviceMismatch, DeviceReset, LinkClosed, LinkError, Nak
from unohil.harness.links import claim
from unohil.harness.links.console import last_words

KIND_NAMES = cat.ENUM_NAMES["unit_kind"]
ERROR_NAMES = cat.ENUM_NAMES["error"]
ACTION = cat.ENUM_VALUES["action"]
IDEMPOTENT = {"HELLO", "TIME_SYNC", "CONFIG_GET", "CONFIG_SET", "STATUS_GET", "EVENT_RESEND", "INJECT_CANCEL"}


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
    """A command sent and not yet answered: its reply once it comes, and what to do with it then."""
    __slots__ = ("name", "reply", "on_reply")

    def __init__(self, name: str, on_reply: Callable[[Frame], None] | None = None):
        self.name = name
        self.reply: Frame | None = None
        self.on_reply = on_reply


# NAKs a reboot the host has not seen yet can cause: ask STATUS for the boot id before blaming the command
REBOOT_SYMPTOMS = frozenset({"too_late", "wrong_state"})
_HOST = cat.ENUM_VALUES["input_source"]["host"]
_REFUSED = cat.ENUM_VALUES["disposition"]["refused"]
# The commands still sent once a reboot is known: they see it (STATUS) or begin the new session (HELLO)
SURVIVE_REBOOT = frozenset({"HELLO", "STATUS_GET"})


class Commands:
    """The commands of a Driver (mixed into it)."""

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

    def cancel_injections(self, retries: int | None = None) -> int:
        n = self.command(M.INJECT_CANCEL(), retries=retries).msg.value
        self._injected.clear()
        return n


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
