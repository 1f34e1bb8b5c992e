"""Firmware with one mistake in how a unit talks, each failing one conformance check
(tests/test_conform_mutants.py): framing (SPEC 2), the handshake (4.2), commands and replies (4.3); and
Firmware, the Device whose command handlers a mutant overrides."""
from __future__ import annotations

from unohil.emulator.device import ERROR, SOURCE, Device
from unohil.emulator.model import DISPOSITION
from unohil.protocol import catalogue as cat, decode, msg
from unohil.protocol.framing import CobsError, cobs_decode, cobs_encode, crc16


RESET_MODE = cat.ENUM_VALUES["reset_mode"]


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
            if frame.msg.NAME == "RESET" and frame.msg.mode == RESET_MODE["new_game"]:
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
