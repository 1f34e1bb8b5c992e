"""Every conformance check is shown able to fail: for each registered check, a unit with one realistic
firmware mistake ("a mutant") that fails exactly that check, with a detail that names the fault.

A mutant is a subclass of emulator.device.Device run through `conform.run` on the virtual clock.
Where a check needs a capability or a transport, its mutant runs where the check runs. A few faults
cannot help failing a second check, because it judges the same fact again: the checks of the
OVERALL phase judge every frame of the run, and the END phase's reboot repeats the START phase's;
such a second failure is named in the mutant's `also`, and must happen too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from unohil.emulator.device import BOOT_REASON, ERROR, SOURCE, Device
from unohil.emulator.model import DISPOSITION, refused
from unohil.emulator.showdown import INPUT as SD_INPUT, PRESS as SD_PRESS, STATE as SD_STATE, Showdown
from unohil.emulator.usb_backend import EmulatedBackend
from unohil.harness import conform
from unohil.harness.conform.registry import CHECKS
from unohil.harness.links import usb as usb_link
from unohil.protocol import catalogue as cat, decode, msg
from unohil.protocol.devtime import diff, wrap
from unohil.protocol.framing import CobsError, cobs_decode, cobs_encode, crc16

from test_conform import (ResendNewTimes, StampsWhenRun, TwiceStatus, WrongLengthNak,
                          _virtual)

_MODE = cat.ENUM_VALUES["reset_mode"]


def _unrefused(part: bytes):
    """A COBS-encoded frame (without its delimiter) as a device that ignores its CRC would decode it."""
    raw = bytearray(cobs_decode(part))
    raw[-2:] = crc16(bytes(raw[:-2])).to_bytes(2, "little")
    return decode(cobs_encode(bytes(raw)))


def _crc_fails(part: bytes) -> bool:
    try:
        raw = cobs_decode(part)
    except CobsError:
        return False
    return len(raw) >= 10 and crc16(raw[:-2]) != int.from_bytes(raw[-2:], "little")


class Firmware(Device):
    """A Device whose command handlers a subclass may override (Device dispatches to its own functions)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for cls, handler in self._handlers.items():
            mine = getattr(type(self), handler.__name__, None)
            if mine is not None and mine is not handler:
                self._handlers[cls] = mine


# ---- 4.2 handshake ----

class NoPlayers(Firmware):
    """Leaves IDENTITY.players 0 (a forgotten field)."""

    def _hello(self, f, m, t):
        r = super()._hello(f, m, t)
        return r._replace(players=0) if r.NAME == "IDENTITY" else r


class EchoesHostMajor(Firmware):
    """Answers a HELLO of another major NAK bad_version with the host's major in detail, not its own."""

    def _hello(self, f, m, t):
        r = super()._hello(f, m, t)
        return r._replace(detail=m.host_major) if r.NAME == "NAK" else r


class HelloRefusedNewGame(Firmware):
    """Drops the session on a HELLO it refuses as bad_version, starting a new game before the NAK."""

    def _hello(self, f, m, t):
        if m.host_major != cat.MAJOR:
            self._new_game(t)
        return super()._hello(f, m, t)


class HelloCancelsStimuli(Firmware):
    """Takes a HELLO for the start of a new host session and drops the pending stimuli."""

    def _hello(self, f, m, t):
        self._cancel_injects()
        return super()._hello(f, m, t)


class StrictLength(Device):
    """Refuses a longer payload as bad_length even from a newer minor version (which may append fields)."""

    def _command(self, frame, t):
        if frame.version & 15 > cat.MINOR and len(frame.raw) != 10 + frame.msg.DEF.size:
            self._nak_raw(frame.seq, frame.msg.ID, ERROR.bad_length)
            return
        super()._command(frame, t)


# ---- 2 framing ----

class NaksEmptyFrames(Device):
    """Takes a delimiter that follows another in one read for an empty frame and NAKs it bad_crc."""

    def receive(self, data):
        for _ in range(data.count(b"\x00\x00")):
            self._nak_raw(0xFFFF, 0xFF, ERROR.bad_crc)
        super().receive(data)


class LengthOfTheLastRead(Device):
    """Measures a frame's length from the last read only: a frame that arrived in pieces is NAKed bad_length."""

    def receive(self, data):
        self._split = bool(self.decoder._buf)          # the first frame completed now began in an earlier read
        super().receive(data)

    def _command(self, frame, t):
        if self._split:
            self._split = False
            self._nak_raw(frame.seq, frame.msg.ID, ERROR.bad_length)
            return
        super()._command(frame, t)

    def _frame_error(self, err):
        self._split = False
        super()._frame_error(err)


class RunsABadCrcReset(Device):
    """NAKs a frame with a bad CRC, as it should, but has already dispatched it: a RESET runs, unanswered."""

    def receive(self, data):
        self._bad = [p for p in data.split(b"\x00") if p and _crc_fails(p)]
        super().receive(data)

    def _frame_error(self, err):
        super()._frame_error(err)
        if err.kind == "bad_crc" and self._bad:
            frame = _unrefused(self._bad.pop(0))
            if frame.msg.NAME == "RESET" and frame.msg.mode == _MODE["new_game"]:
                self._new_game(self.now())


class TooLongAsBadCrc(Device):
    """Reports a run of more than 63 bytes without a delimiter as bad_crc instead of frame_too_long."""

    def _frame_error(self, err):
        if err.kind == "too_long":
            self._nak_raw(0xFFFF, 0xFF, ERROR.bad_crc)
            return
        super()._frame_error(err)


class NaksShortFrames(Device):
    """Answers a frame shorter than a header and CRC with an unattributed NAK bad_crc (it checks the CRC first)."""

    def _frame_error(self, err):
        if err.kind == "too_short":
            self._nak_raw(0xFFFF, 0xFF, ERROR.bad_crc)
            return
        super()._frame_error(err)


class DropsTheReadAfterNoise(Device):
    """Throws away the rest of a read after a malformed frame: it resyncs at the next read, not delimiter."""

    def receive(self, data):
        self._noise = False
        super().receive(data)

    def _frame_error(self, err):
        self._noise = self._noise or err.kind in ("cobs", "too_short")
        super()._frame_error(err)

    def _command(self, frame, t):
        if not self._noise:
            super()._command(frame, t)


class BadVersionWithoutMajor(Device):
    """NAKs a frame of another header major bad_version with detail 0, forgetting its own major."""

    def _frame_error(self, err):
        if err.kind == "bad_version":
            self._nak_raw(err.seq, err.type_id, ERROR.bad_version, 0)
            return
        super()._frame_error(err)


class RepliesAsUnsupported(Device):
    """Answers a reply's or an event's id NAK unsupported (a message it knows) instead of unknown_type."""

    def _command(self, frame, t):
        if frame.msg.KIND != "command":
            self._nak_raw(frame.seq, frame.msg.ID, ERROR.unsupported)
            return
        super()._command(frame, t)


# ---- 4.3 commands and replies ----

class CancelAckNamesInject(Firmware):
    """Answers INJECT_CANCEL with an ACK naming INJECT's type (the handler copied from INJECT's)."""

    def _inject_cancel(self, f, m, t):
        return msg.ACK(f.seq, msg.INJECT.ID, self._cancel_injects())


class OneCommandBuffer(Device):
    """Has room for one command: a second one in the same read is refused NAK busy."""

    def receive(self, data):
        self._taken = False
        super().receive(data)

    def _command(self, frame, t):
        if self._taken:
            self._nak_raw(frame.seq, frame.msg.ID, ERROR.busy)
            return
        self._taken = True
        super()._command(frame, t)


class SeenBeforeAck(Firmware):
    """Reports an accepted INPUT's edge (INPUT_SEEN and what it caused) before answering the INPUT."""

    def _input(self, f, m, t):
        reply = super()._input(f, m, t)
        if not isinstance(reply, int):
            held, self._held = self._held, None
            self._flush_held(held)
            self._held = []
        return reply


class OneInputTooMany(Device):
    """Checks an input id against the number of inputs with <= instead of <: one past the last is taken."""

    def _valid_input(self, inp, action):
        one_past = inp == len(self._inputs)
        return super()._valid_input(inp - one_past, action)


class SeesUnknownInputs(Firmware):
    """Reports every INPUT edge it receives with INPUT_SEEN, one of an input it does not have too."""

    def _input(self, f, m, t):
        if not self._valid_input(m.input, m.action):
            self.emit(msg.INPUT_SEEN, input=m.input, action=m.action, value=m.value, source=SOURCE.host,
                      disposition=DISPOSITION.refused, detail=ERROR.bad_value)
        return super()._input(f, m, t)


class WrongStateWithoutState(Firmware):
    """Refuses an INPUT wrong_state with detail 0, forgetting to put its state in."""

    def _input(self, f, m, t):
        reply = super()._input(f, m, t)
        return msg.NAK(f.seq, m.ID, ERROR.wrong_state, 0) if reply == ERROR.wrong_state else reply


class StatusStateZero(Firmware):
    """Answers STATUS with state 0 whatever state it is in (a field never filled in); its NAKs are right."""

    def _status_get(self, f, m, t):
        return super()._status_get(f, m, t)._replace(state=0)


class RefusedLoadAddsCards(Firmware):
    """Refuses loading during the countdown (wrong_state), and puts the cards in the tray all the same."""

    def _input(self, f, m, t):
        reply = super()._input(f, m, t)
        if reply == ERROR.wrong_state and m.input == cat.ENUM_VALUES["showdown_input"]["load_cards"]:
            self.model.tray += m.value
            self.model.emit(msg.SD_CARDS, cards=self.model.tray)
        return reply


class EveryRefusalWrongState(Firmware):
    """NAKs every INPUT the unit refuses wrong_state, whatever the refusal (bad_value included)."""

    def _input(self, f, m, t):
        reply = super()._input(f, m, t)
        return ERROR.wrong_state if isinstance(reply, int) and self._valid_input(m.input, m.action) else reply


class InputHandlerLeftIn(Device):
    """Built without host_input (the bit is clear in IDENTITY) but with its INPUT handler still dispatched."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._handlers[msg.INPUT] = Device._input


# ---- 4.7 configuration ----

class UnsupportedButSeen(Firmware):
    """Built without host_input, it NAKs INPUT unsupported after having applied the edge."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._handlers[msg.INPUT] = type(self)._input

    def _input(self, f, m, t):
        super()._input(f, m, t)
        return ERROR.unsupported


class StaleGoTimeout(Device):
    """Boots with go_timeout_us 500000, a zero short of its default."""

    def _boot(self, reason):
        super()._boot(reason)
        self.config["go_timeout_us"] = 500_000


class StoresBeforeRangeCheck(Firmware):
    """Stores a CONFIG_SET's value before checking its range; one out of range is NAKed, but kept."""

    def _config_set(self, f, m, t):
        reply = super()._config_set(f, m, t)
        p = cat.PARAMS_BY_ID.get(m.param)
        if reply == ERROR.bad_value and p.name in self.params and not p.min <= m.value <= p.max:
            self.config[p.name] = m.value
        return reply


class RefusesTheMax(Firmware):
    """Range-checks CONFIG_SET with value < max instead of <= max: every parameter's maximum is refused."""

    def _config_set(self, f, m, t):
        p = cat.PARAMS_BY_ID.get(m.param)
        if p is not None and p.name in self.params and m.value == p.max:
            return ERROR.bad_value
        return super()._config_set(f, m, t)


class UnknownParamWritesModulo(Firmware):
    """Writes an unknown parameter's CONFIG_SET at its id modulo the table's size, then NAKs unknown_param."""

    def _config_set(self, f, m, t):
        reply = super()._config_set(f, m, t)
        if reply == ERROR.unknown_param:
            names = list(self.params)
            self.config[names[m.param % len(names)]] = m.value
        return reply


class AnyCatalogueParam(Firmware):
    """Looks parameters up in the whole catalogue: another kind's parameter reads as its default."""

    def _config_get(self, f, m, t):
        p = cat.PARAMS_BY_ID.get(m.param)
        if p is not None and p.name not in self.params:
            return msg.CONFIG_VALUE(f.seq, m.param, p.default)
        return super()._config_get(f, m, t)


class BusyStillStores(Firmware):
    """Refuses a CONFIG_SET while busy (wrong_state), having stored its value already."""

    def _config_set(self, f, m, t):
        reply = super()._config_set(f, m, t)
        p = cat.PARAMS_BY_ID.get(m.param)
        if reply == ERROR.wrong_state:
            self.config[p.name] = m.value
        return reply


class RangeBeforeState(Firmware):
    """Checks a CONFIG_SET's range before the unit's state: out of range while busy is NAKed bad_value."""

    def _config_set(self, f, m, t):
        p = cat.PARAMS_BY_ID.get(m.param)
        if p is not None and p.name in self.params and not p.min <= m.value <= p.max:
            return ERROR.bad_value
        return super()._config_set(f, m, t)


class NewGameRestoresDefaults(Device):
    """Restores the configuration defaults at RESET new_game (the SPEC keeps it until a reboot)."""

    def _new_game(self, t):
        self.config.update({name: p.default for name, p in self.params.items()})
        super()._new_game(t)


# ---- 4.8 test mode ----

class NowIsNotTooLate(Firmware):
    """Refuses an INJECT only when at_us is before now (< instead of <=): a stimulus due now is taken."""

    def _inject(self, f, m, t):
        if diff(m.at_us, wrap(t)) == 0 and self._valid_input(m.input, m.action):
            return super()._inject(f, m._replace(at_us=wrap(t + 1)), t)
        return super()._inject(f, m, t)


class RunsALateStimulus(Firmware):
    """NAKs a stimulus in the past too_late, and runs it at once all the same."""

    def _inject(self, f, m, t):
        reply = super()._inject(f, m, t)
        if reply == ERROR.too_late and diff(m.at_us, wrap(t)) < 0:
            self.apply_input(t, m.input, m.action, m.value, SOURCE.injected)
        return reply


class TimeBeforeInput(Firmware):
    """Checks an INJECT's time before its input: an unknown input in the past is NAKed too_late."""

    def _inject(self, f, m, t):
        if diff(m.at_us, wrap(t)) <= 0:
            return ERROR.too_late
        return super()._inject(f, m, t)


class QueuesABadInject(Firmware):
    """Queues an INJECT before checking its input and action: one it NAKs bad_value stays pending."""

    def _inject(self, f, m, t):
        reply = super()._inject(f, m, t)
        if reply == ERROR.bad_value:
            self._inject_id += 1
            self._injects[self._inject_id] = self.clock.call_at(self.clock.now() + 600_000_000, lambda: None)
        return reply


class OneStimulusTooMany(Firmware):
    """Refuses an INJECT only when more than inject_queue are pending (> instead of >=)."""

    def _inject(self, f, m, t):
        if len(self._injects) != cat.INJECT_QUEUE:
            return super()._inject(f, m, t)
        sid, handle = self._injects.popitem()          # counted one short
        try:
            return super()._inject(f, m, t)
        finally:
            self._injects[sid] = handle


class BootsAsPowerOn(Device):
    """Gives every BOOT the reason power_on, a RESET reboot's too."""

    def _boot(self, reason):
        super()._boot(BOOT_REASON.power_on)


class AnyModeNewGame(Firmware):
    """Takes any RESET mode but reboot for new_game: an unknown mode is not refused."""

    def _reset(self, f, m, t):
        return super()._reset(f, m._replace(mode=_MODE["new_game"]) if m.mode != _MODE["reboot"] else m, t)


class NewGameBeforeModeCheck(Firmware):
    """Starts the new game before looking at RESET's mode; an unknown mode is NAKed bad_value after it."""

    def _reset(self, f, m, t):
        if m.mode not in (_MODE["reboot"], _MODE["new_game"]):
            self._new_game(t)
        return super()._reset(f, m, t)


class NewGameDropsStimuli(Device):
    """Drops the pending stimuli at RESET new_game (they belong to the test, and are to be kept)."""

    def _new_game(self, t):
        self._cancel_injects()
        super()._new_game(t)


class RebootKeepsStimuli(Device):
    """Forgets to empty the stimulus queue at a RESET reboot."""

    _rebooting = False

    def _cancel_injects(self):
        return 0 if self._rebooting else super()._cancel_injects()

    def _boot(self, reason):
        self._rebooting = reason == BOOT_REASON.reset_command
        try:
            super()._boot(reason)
        finally:
            self._rebooting = False


class EmptyResendIsEverything(Firmware):
    """Reads EVENT_RESEND count 0 as 256 (count - 1 wraps in a u8): asking for nothing resends the ring."""

    def _event_resend(self, f, m, t):
        return super()._event_resend(f, m._replace(count=256) if m.count == 0 else m, t)


class SmallRing(Device):
    """Keeps only 32 events for EVENT_RESEND, though IDENTITY.event_buffer says 64."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from collections import deque
        self._ring = deque(maxlen=32)


class NextIsTheLast(Firmware):
    """Reports the last event's seq in STATUS.next_event_seq, not the next one's."""

    def _status_get(self, f, m, t):
        r = super()._status_get(f, m, t)
        return r._replace(next_event_seq=(r.next_event_seq - 1) & 0xFFFF)


# ---- 4.6 time sync ----

class SlowTimeSync(Firmware):
    """Answers TIME_SYNC from a 60 ms housekeeping loop: t3 - t2 is 60 ms."""

    def _time_sync(self, f, m, t):
        def answer():
            now = self.now()
            self._send(msg.TIME_SYNC_REPLY(f.seq, m.t1_host_us, wrap(t), wrap(now)), wrap(now))
        self.clock.call_at(self.clock.now() + 60_000, answer)
        return None


class FastCrystal(Device):
    """Counts device time 2% fast (its timer prescaled for the wrong crystal)."""

    def from_clock(self, clock_us):
        return self.boot_time_us + (clock_us - self.epoch) * 51 // 50

    def to_clock(self, t):
        return self.epoch - (-(t - self.boot_time_us) * 50 // 51)


# ---- 2, 3, 4.3, 4.5 over the whole run ----

class BootBanner(Device):
    """Writes its boot banner, with the C string's NUL, on the data port at a RESET reboot."""

    def _boot(self, reason):
        if reason == BOOT_REASON.reset_command:
            self.output += b"uno-hil 0.1.0\r\n\x00"
        super()._boot(reason)


class ErrorPathCountsTwice(Device):
    """Counts the header seq twice for a NAK of a malformed frame."""

    def _nak_raw(self, *args, **kwargs):
        super()._nak_raw(*args, **kwargs)
        self._tx_seq = (self._tx_seq + 1) & 0xFFFF


class ErrorNaksAtZero(Device):
    """Sends the NAK of a malformed frame with header time 0 (a field left unset)."""

    def _nak_raw(self, seq, type_id, error, detail=0):
        self._send(msg.NAK(seq, type_id, error, detail), 0)


class BootCountedTwice(Device):
    """Counts BOOT twice in event_seq (once when built, once when sent): the event after it is 2."""

    def _boot(self, reason):
        super()._boot(reason)
        self._event_seq += 1


class ReversedRead(Device):
    """Answers the commands of one read last first (it pops them off a stack)."""

    def receive(self, data):
        *whole, rest = data.split(b"\x00")
        frames = [p + b"\x00" for p in whole if p]
        if len(frames) < 2 or self.decoder._buf:
            return super().receive(data)
        for p in reversed(frames):
            super().receive(p)
        super().receive(rest)


class _StateFirstShowdown(Showdown):
    def on_input(self, t, inp, action, value):
        if value and inp != SD_INPUT.load_cards:
            if inp == SD_INPUT.timer and action == SD_PRESS and self.state == SD_STATE.empty:
                return refused("wrong_state")       # TIMER's state rule judged before the value
            return refused("bad_value")
        return super().on_input(t, inp, action, value)


class StateBeforeValue(Firmware):
    """Judges its states' rules before PR-3's value: TIMER with a value on an empty tray is NAKed wrong_state
    (PR-6 puts bad_value first); everywhere else a value is refused bad_value, as it should be."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._valued = self._inputs         # the values reach the unit's own dispatcher
        self.model_cls = _StateFirstShowdown


class IgnoresTheValue(Firmware):
    """Takes any INPUT.value, also on inputs that take none, and acts on the input (before PR-3)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._valued = self._inputs


class SensesLandingOnAFlash(Firmware):
    """A Flash base whose IDENTITY sets landing_sensor, a Showdown capability (PR-4)."""

    def _boot(self, reason):
        super()._boot(reason)
        self.caps |= 1 << cat.ENUM_VALUES["capability"]["landing_sensor"]


class ResetLeavesTheRaceRunning(Firmware):
    """Starts a new game on RESET new_game but forgets the old game's timers: the abandoned countdown
    runs on to its green and, nobody pressing, to a no_press verdict seconds later."""

    def _cancel_timers(self):
        if not getattr(self, "_resetting", False):
            super()._cancel_timers()

    def _new_game(self, t):
        self._resetting = True
        try:
            super()._new_game(t)
        finally:
            self._resetting = False


class ResetKeepsQuiet(Firmware):
    """Starts a new game on RESET new_game without closing what ran: no SD_CARDS(0) for the tray it
    empties, no LA_RESULT for the burst it stops."""

    def _new_game(self, t):
        emit = self.emit
        self.emit = lambda cls, **fields: None if cls.NAME in ("SD_CARDS", "LA_RESULT") else emit(cls, **fields)
        try:
            super()._new_game(t)
        finally:
            del self.emit


# ---- the table: each check, the mutant that fails it, and the words its detail must have ----

def _key(c) -> str:
    """A check's key in MUTANTS: its module and function, e.g. "framing.bad_crc"."""
    return f"{c.run.__module__.rsplit('.', 1)[-1]}.{c.run.__name__}"


CHECK_BY_KEY = {_key(c): c for c in CHECKS}


@dataclass(frozen=True)
class Mutant:
    device: type | None                 # the Device subclass (None: the transport is what is broken)
    check: str                          # the key of the check it fails
    words: str                          # what that check's detail must say
    kind: str = "showdown"
    options: dict = field(default_factory=dict)     # Device options: the variant where the check runs
    also: tuple[tuple[str, str], ...] = ()          # (check, words): the same fault judged again
    usb: dict | None = None             # run over the emulated USB bus, with these EmulatedUnit options

    def __str__(self):
        return f"{self.check}-{self.device.__name__ if self.device else 'usb'}"


def _flash_mutants() -> list:
    """The Flash base's SPEC 8 checks (FL-23, FL-24, FL-25, FL-28), each with a base giving the other answer."""
    from test_conform_decision_mutants import with_model
    from test_flash_forms import (CancelsSleepAtReset, KeepsSleepOverReset, ReportsMissingButtonsWhenOff,
                                  ResetSwitchesOn, SleepsAtOnceBeyondHalfWrap)
    return [
        # the maximum period also puts it to sleep at once where the configuration checks set it
        Mutant(with_model(SleepsAtOnceBeyondHalfWrap), "flash.long_sleep_period", "must be armed in steps",
               kind="flash", also=(("config.config_ranges", "NAK wrong_state"),
                                   ("config.config_seed", "NAK wrong_state"))),
        Mutant(with_model(KeepsSleepOverReset), "flash.reset_restarts_sleep", "restarts at the RESET",
               kind="flash"),
        Mutant(with_model(CancelsSleepAtReset), "flash.reset_restarts_sleep", "not cancel it", kind="flash"),
        Mutant(with_model(ReportsMissingButtonsWhenOff), "flash.off_refuses_bad_values",
               "expected NAK bad_value (FL-25)", kind="flash"),
        Mutant(with_model(ResetSwitchesOn), "flash.reset_while_off", "the power switch stays off", kind="flash"),
    ]


FLASH_MUTANTS = _flash_mutants()

MUTANTS = [
    Mutant(NoPlayers, "handshake.identity", "players 0 (expected 2)"),
    Mutant(EchoesHostMajor, "handshake.hello_version", "NAK bad_version detail 2, expected 1"),
    Mutant(HelloRefusedNewGame, "handshake.hello_version", "the unit sent STATE"),
    Mutant(HelloCancelsStimuli, "handshake.hello_again", "pending_injects"),
    Mutant(StrictLength, "handshake.newer_minor", "answered NAK bad_length"),
    Mutant(NaksEmptyFrames, "framing.empty_frames", "empty frames were answered: NAK bad_crc"),
    Mutant(LengthOfTheLastRead, "framing.byte_at_a_time", "NAK bad_length"),
    Mutant(RunsABadCrcReset, "framing.bad_crc", "refused as bad_crc were acted on: after them the unit sent STATE"),
    Mutant(TooLongAsBadCrc, "framing.too_long", "expected NAK frame_too_long, got NAK bad_crc"),
    Mutant(NaksShortFrames, "framing.noise", "line noise was answered: NAK bad_crc"),
    Mutant(DropsTheReadAfterNoise, "framing.resync", "after garbage + delimiter",
           also=(("stream.one_reply_each", "never answered: STATUS_GET"),)),
    Mutant(BadVersionWithoutMajor, "framing.header_version", "NAK bad_version detail 0, expected 1"),
    Mutant(RepliesAsUnsupported, "framing.unknown_type", "expected NAK unknown_type, got NAK unsupported"),
    Mutant(WrongLengthNak, "framing.bad_length", "expected NAK bad_length, got NAK bad_value"),
    Mutant(CancelAckNamesInject, "commands.typed_replies", "ACK of INJECT_CANCEL names type",
           also=(("stream.one_reply_each", "INJECT_CANCEL"),)),
    Mutant(OneCommandBuffer, "commands.batch", "NAK busy"),
    Mutant(SeenBeforeAck, "commands.input_ack_first", "INPUT_SEEN came before the INPUT's ACK"),
    Mutant(OneInputTooMany, "commands.input_unknown", "expected NAK bad_value, got ACK"),
    Mutant(SeesUnknownInputs, "commands.input_unknown", "the unit sent INPUT_SEEN"),
    # refusals come in a state other than 0, where a detail left 0 would be right by chance
    Mutant(WrongStateWithoutState, "commands.input_refused", "NAK wrong_state detail 0, expected 1", kind="flash"),
    Mutant(WrongStateWithoutState, "commands.input_refused", "NAK wrong_state detail 0, expected 2"),
    Mutant(RefusedLoadAddsCards, "commands.input_refused", "the unit sent SD_CARDS"),
    # the NAK's detail is right and STATUS is not: the message blames STATUS, in each check that reads its state
    Mutant(StatusStateZero, "commands.input_refused",
           "STATUS.state 0, but the unit's last STATE event says 2: STATUS misreports the unit's state",
           also=(("commands.input_value_not_taken", "STATUS.state 0, but the unit's last STATE event says 1"),
                 ("config.config_busy", "STATUS.state 0, but the unit's last STATE event says 2"),
                 ("commands.value_before_state", "STATUS misreports the unit's state"))),
    Mutant(EveryRefusalWrongState, "commands.input_refused_value", "expected NAK bad_value, got NAK wrong_state",
           also=(("commands.input_value_not_taken", "expected NAK bad_value, got NAK wrong_state"),
                 ("commands.value_before_state", "expected NAK bad_value, got NAK wrong_state"))),
    Mutant(InputHandlerLeftIn, "commands.unsupported", "expected NAK unsupported, got ACK",
           options={"without": "host_input"}),
    Mutant(UnsupportedButSeen, "commands.unsupported", "the unit sent INPUT_SEEN", options={"without": "host_input"}),
    Mutant(StaleGoTimeout, "config.config_defaults", "go_timeout_us = 500000, default 5000000"),
    Mutant(RefusesTheMax, "config.config_ranges", "expected CONFIG_VALUE 4294967295"),
    Mutant(StoresBeforeRangeCheck, "config.config_ranges", "refused, yet"),
    Mutant(AnyCatalogueParam, "config.config_unknown", "expected NAK unknown_param, got CONFIG_VALUE"),
    Mutant(UnknownParamWritesModulo, "config.config_unknown", "refused, changed"),
    Mutant(RangeBeforeState, "config.config_busy", "expected NAK wrong_state, got NAK bad_value"),
    Mutant(BusyStillStores, "config.config_busy", "refused as wrong_state changed"),
    Mutant(NewGameRestoresDefaults, "config.config_seed", "after RESET new_game"),
    Mutant(StampsWhenRun, "inject.inject", "stamped off their scheduled time"),
    Mutant(NowIsNotTooLate, "inject.inject_too_late", "expected NAK too_late, got ACK"),
    Mutant(RunsALateStimulus, "inject.inject_too_late", "the unit sent INPUT_SEEN"),
    Mutant(TimeBeforeInput, "inject.inject_bad_value", "expected NAK bad_value, got NAK too_late"),
    Mutant(QueuesABadInject, "inject.inject_bad_value", "changed STATUS.pending_injects: 0 -> 2"),
    Mutant(OneStimulusTooMany, "inject.inject_queue", "expected NAK queue_full, got ACK"),
    Mutant(BootsAsPowerOn, "reset.reboot", "BOOT reason 0, expected reset_command",
           also=(("reset.reboot_restores", "BOOT reason 0, expected reset_command"),)),
    Mutant(AnyModeNewGame, "reset.reset_bad_mode", "expected NAK bad_value, got ACK"),
    Mutant(NewGameBeforeModeCheck, "reset.reset_bad_mode", "the unit sent STATE"),
    Mutant(NewGameDropsStimuli, "reset.reset_new_game", "left 0 stimuli pending, expected 1"),
    Mutant(SensesLandingOnAFlash, "handshake.caps_of_the_kind", "sets landing_sensor, not a capability of the flash",
           kind="flash"),
    Mutant(StateBeforeValue, "commands.value_before_state",
           "INPUT timer press 1 in state 0 (PR-6: bad_value before the state's rules): expected NAK bad_value, "
           "got NAK wrong_state"),
    # a unit that takes every value breaks PR-6 in every state too
    Mutant(IgnoresTheValue, "commands.input_value_not_taken", "expected NAK bad_value, got ACK",
           also=(("commands.value_before_state", "expected NAK bad_value, got ACK"),)),
    Mutant(IgnoresTheValue, "commands.input_value_not_taken", "expected NAK bad_value, got ACK", kind="launcher",
           also=(("commands.value_before_state", "expected NAK bad_value, got ACK"),)),
    Mutant(ResetKeepsQuiet, "reset.reset_in_play", "emitted nothing before STATE, expected ['SD_CARDS']"),
    # its stray timers go on firing into the checks after it: the next one that watches for events sees them
    Mutant(ResetLeavesTheRaceRunning, "reset.reset_in_play", "SD_VERDICT after RESET new_game",
           also=(("inject.inject_too_late", "after them the unit sent SD_BEEP"),)),
    Mutant(ResetKeepsQuiet, "reset.reset_in_play", "emitted nothing before STATE, expected ['LA_RESULT']",
           kind="launcher"),
    Mutant(RebootKeepsStimuli, "reset.reboot_restores", "stimuli survived RESET reboot"),
    Mutant(ResendNewTimes, "events.resend", "originally"),
    Mutant(EmptyResendIsEverything, "events.resend_nothing", "EVENT_RESEND count 0: ACK value"),
    Mutant(SmallRing, "events.resend_buffer", "ACK value 32, expected 64"),
    # without event_resend: the EVENT_RESEND checks would be misled by the wrong seq too
    Mutant(NextIsTheLast, "events.next_event_seq", "STATUS.next_event_seq", options={"without": "event_resend"}),
    Mutant(SlowTimeSync, "timesync.time_sync", "turnaround t3 - t2 up to 60000 us"),
    Mutant(FastCrystal, "timesync.clock_rate", "+20000 ppm"),
    Mutant(None, "usb.usb_serial", "iSerialNumber '0000002a'", usb={"serial": 0x2A, "serial_string": "0000002a"}),
    Mutant(BootBanner, "stream.stream_clean", "1 bad frame(s) from the device: cobs"),
    Mutant(ErrorPathCountsTwice, "stream.header_seq", "gap(s)"),
    Mutant(ErrorNaksAtZero, "stream.reply_times", "device time went back"),
    Mutant(TwiceStatus, "stream.one_reply_each", "answered more than once"),
    # replies can only come out of order where commands overlap, as in one write of three
    Mutant(ReversedRead, "stream.reply_order", "came before the reply to an earlier command",
           also=(("commands.batch", "came out of order"),)),
    Mutant(BootCountedTwice, "stream.event_seq", "BOOT 0 then"),
    *FLASH_MUTANTS,
]


def _run(m: Mutant):
    if m.usb is None:
        return conform.run(_virtual(m.device, m.kind, **m.options), scenarios=None)
    with EmulatedBackend() as bus:
        bus.add(m.kind, **m.usb)
        previous = usb_link.set_backend(bus)
        try:
            link = usb_link.open_usb("usb://1209:0001")
            try:
                return conform.run(link, scenarios=None)
            finally:
                link.close()
        finally:
            usb_link.set_backend(previous)


@pytest.mark.parametrize("m", MUTANTS, ids=str)
def test_the_mutant_fails_its_check_and_only_that(m):
    report = _run(m)
    failed = {c.name: c for c in report.checks if c.status in ("fail", "error")}
    want = {CHECK_BY_KEY[k].name: words for k, words in ((m.check, m.words), *m.also)}
    assert set(failed) == set(want), {n: c.detail for n, c in failed.items()}
    for name, words in want.items():
        assert failed[name].status == "fail" and words in failed[name].detail, failed[name].detail
    assert not report.passed and not report.aborted


def test_every_registered_check_has_a_mutant():
    covered = {m.check for m in MUTANTS}
    assert covered <= set(CHECK_BY_KEY), f"mutants of checks that do not exist: {covered - set(CHECK_BY_KEY)}"
    missing = [f"{k} ({CHECK_BY_KEY[k].section} {CHECK_BY_KEY[k].name})" for k in CHECK_BY_KEY if k not in covered]
    assert not missing, "checks no mutant shows able to fail: " + "; ".join(missing)
    assert len(CHECK_BY_KEY) == len(CHECKS), "two checks share a module and function"
