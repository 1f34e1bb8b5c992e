"""Firmware with one mistake in what a unit keeps or when, each failing one conformance check
(tests/test_conform_mutants.py): configuration (SPEC 4.7), test mode and its stimuli (4.8), time sync (4.6),
and the mistakes only the whole run shows (2, 3, 4.3, 4.5)."""
from __future__ import annotations

from unohil.emulator.device import BOOT_REASON, ERROR, SOURCE, Device
from unohil.emulator.model import refused
from unohil.emulator.showdown import INPUT as SD_INPUT, PRESS as SD_PRESS, STATE as SD_STATE, Showdown
from unohil.protocol import catalogue as cat, msg
from unohil.protocol.devtime import diff, wrap

from mutants_link import Firmware, RESET_MODE


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
        return super()._reset(f, m._replace(mode=RESET_MODE["new_game"]) if m.mode != RESET_MODE["reboot"] else m, t)


class NewGameBeforeModeCheck(Firmware):
    """Starts the new game before looking at RESET's mode; an unknown mode is NAKed bad_value after it."""

    def _reset(self, f, m, t):
        if m.mode not in (RESET_MODE["reboot"], RESET_MODE["new_game"]):
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
