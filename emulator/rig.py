"""The emulated stimulus-and-capture rig (protocol/SPEC.md section 13), wired to an emulated unit.

A rig is a device of its own kind: the device core (device.py) does its framing, handshake, time sync,
event ring and stimulus queue; RigModel adds its two commands (RIG_WIRE, RIG_EDGE) and Rig holds what
RESET new_game keeps: the wiring and the lines' levels. The unit is an ordinary emulated unit on the
same clock, built without host_input and test_mode so that, as on a real bench, its inputs come only
through the rig (INPUT_SEEN source physical). Between the two sits the path (emulator/path.py): a
driven edge reaches the unit's model through skew, debounce, the poll loop or interrupt; the unit's
outputs (its LIGHT, SOUND, SD_LAUNCH and LA_CARD events) reach the watched lines after their delays.
A loopback line (SPEC 13.7) watches one of the rig's own drive lines: the rig's floor, 0 unless the
path gives the rig a capture lag of its own (capture=D, on every watched line alike).

RigLink is the rig's end of the harness's link interface; it shares the unit link's clock and host
time, so reading either link moves both devices' time. start_real_pair serves the same pair on the
real clock from one thread, each device on its own socketpair.
"""
from __future__ import annotations

import os
from fractions import Fraction

from unohil.protocol import ENUMS, NONE_U8, catalogue as cat, msg
from unohil.protocol.catalogue import RIG

from .clock import INPUT, RealClock
from .device import Device
from .inprocess import VirtualLink, serve_in_thread
from .model import ERROR, UnitModel
from .path import InputPath, OutputPath, PathSpec, parse as parse_path

SIGNAL = ENUMS["rig_signal"]
ORIGIN = ENUMS["rig_origin"]
STATE = ENUMS["rig_state"]
ACTION = ENUMS["action"]
MODE_OFF = ENUMS["light_mode"].off

#: how long a pulse output keeps its line active (the emulated units report these outputs as instants)
PULSE_US = {"sound": 50_000, "launch": 20_000, "card": 5_000}
SWITCHED_BY: dict[str, list] = {}       # the unit's event -> [(watched signal, what of it moves the line)]
for _signal, _by in RIG.switched_by.items():
    SWITCHED_BY.setdefault(_by.event, []).append((_signal, _by))
RIG_BOOT_US = 1_000_000_000     # the rig's clock starts elsewhere than the unit's: no one mixes them up unseen


class Wire:
    """One wired line (RIG_WIRE)."""
    __slots__ = ("line", "signal", "id", "target", "polarity", "name")

    def __init__(self, line: int, signal: int, id_: int, target: int, polarity: int, name: str):
        self.line, self.signal, self.id, self.target, self.polarity, self.name = \
            line, signal, id_, target, polarity, name


class Rig:
    """The rig's lines, wired to one emulated unit through a path."""

    def __init__(self, device: Device, unit: Device | None, spec: PathSpec):
        """unit None: a rig wired to nothing (served on its own): its driven edges are reported, no
        watched line ever moves."""
        self.device = device
        self.unit = unit
        self.unit_def = cat.UNITS[unit.kind] if unit is not None else None
        self.wires: dict[int, Wire] = {}
        self.active: dict[int, bool] = {}
        self.boots = 0
        self.outputs = OutputPath(spec)
        self.capture_us = spec.capture_us       # the rig's own lag from a line's crossing to its stamp
        device.rig = self
        if unit is None:
            return
        self.inputs = InputPath(spec, self.unit_def.inputs)
        # inputs the rig moves as an actuator, not a button: every edge reaches the unit (a feeder placing or
        # taking cards, a selector, the door, the power switch), whatever the line's level
        self.actuated = frozenset(self.unit_def.valued_inputs) | frozenset(self.unit_def.switches)
        unit.observer = self.unit_event

    def rebooted(self) -> None:
        self.wires.clear()
        self.active.clear()

    # ---- names ----
    def _name(self, signal: int, id_: int) -> str:
        if self.unit is None:
            return f"{SIGNAL(signal).name}_{id_}"
        kind = self.unit.kind
        for what in ("input", "light", "sound"):
            if signal == SIGNAL[what]:
                return cat.enum_name(f"{kind}_{what}", id_)
        return SIGNAL(signal).name

    # ---- commands ----
    def wire(self, m) -> int:
        """RIG_WIRE: the error code of a refusal, else 0."""
        if m.line >= RIG.lines or m.signal not in SIGNAL._value2member_map_ or \
                m.polarity not in ENUMS["rig_polarity"]._value2member_map_:
            return ERROR.bad_value
        if self.device.pending_injects:
            return ERROR.wrong_state
        if self.loops_from(m.line) and m.signal != SIGNAL.none:
            return ERROR.bad_value      # a loopback's drive line is wired to nothing else
        if m.signal == SIGNAL.loopback and (m.id >= RIG.lines or m.id == m.line or m.id in self.wires):
            return ERROR.bad_value
        if m.signal == SIGNAL.none:
            self.wires.pop(m.line, None)
        else:
            self.wires[m.line] = Wire(m.line, m.signal, m.id, m.target, m.polarity, self._name(m.signal, m.id))
        self.device.model.state = STATE.wired if self.wires else STATE.unwired
        return 0

    def loops_from(self, line: int) -> list[Wire]:
        """The loopback lines that watch drive line line."""
        return [w for w in self.wires.values() if w.signal == SIGNAL.loopback and w.id == line]

    def drivable(self, line: int) -> bool:
        w = self.wires.get(line)
        return (w is not None and w.signal == SIGNAL.input) or bool(self.loops_from(line))

    def drive(self, at: int, sid: int, line: int, action: int, value: int = 0) -> None:
        """A driven edge at rig time at: reported, then on its way to the unit (or round a loopback)."""
        self.device.stimulus_done(sid)
        self.device.emit(msg.RIG_CAPTURE, at=at, line=line, action=action, origin=ORIGIN.driven, stimulus=sid)
        w = self.wires.get(line)
        was, self.active[line] = self.active.get(line, False), action == ACTION.press
        for loop in self.loops_from(line):
            self._capture(self.device.to_clock(at), loop.line, self.active[line])
        if w is None or self.unit is None:
            return
        if w.name not in self.actuated and was == self.active[line]:
            return              # a button already where it is driven to: nothing happens at the unit
        if w.name not in self.unit_def.valued_inputs:
            value = 0
        self._to_unit(w.id, action, value, self.unit.from_clock(self.device.to_clock(at)))

    def _to_unit(self, inp: int, action: int, value: int, t: int) -> None:
        """An edge at the unit's switch at unit time t, through the path into the unit's model."""
        path = self.inputs
        pin = path.at_pin(inp, t)
        prev = path.pending.pop(inp, None)
        # compared on the clock, whose time a reboot of the unit does not restart
        if prev is not None and prev[0] > self.unit.to_clock(pin):
            prev[1].cancel()            # the line moved again inside the debounce: neither edge counts
            return
        settled = pin + path.debounce_us(inp)
        handle = self.unit.physical_input(path.taken(inp, settled), inp, action, value)
        path.pending[inp] = (self.unit.to_clock(settled), handle)

    # ---- the unit's outputs ----
    def unit_event(self, m, t: int) -> None:
        # what moves which watched line: the catalogue's rig.switched_by (SPEC 13.5)
        for signal, by in SWITCHED_BY.get(m.NAME, ()):
            for w in self._watching(SIGNAL[signal], None if by.field is None else getattr(m, by.field)):
                if not by.level:
                    self._pulse(w, t)
                elif self._same_lamp(m.light, w.target, m.target):      # a level is a lamp: LIGHT's mode and target
                    on = m.mode != MODE_OFF and (m.target == NONE_U8 or w.target in (NONE_U8, m.target))
                    self._output(w, t, on)

    def _watching(self, signal: int, id_: int | None = None):
        return [w for w in self.wires.values() if w.signal == signal and (id_ is None or w.id == id_)]

    def _same_lamp(self, light: int, line_target: int, target: int) -> bool:
        """Whether a LIGHT of this target concerns the lamp a line watches: one lamp whatever it points at
        (the Showdown's red), or one lamp per target (the Flash's buttons)."""
        if line_target == NONE_U8 or target == NONE_U8:
            return True
        key = self.unit.model.light_key
        return key(light, line_target) == key(light, target)

    def _output(self, w: Wire, t: int, on: bool) -> None:
        self._capture(self.unit.to_clock(t) + self.outputs.delay_us(w.name), w.line, on)

    def _capture(self, crossed: int, line: int, on: bool) -> None:
        """A watched line crossing its threshold at clock time crossed: stamped the rig's capture lag later."""
        self.device.clock.call_at(crossed + self.capture_us, self._watched, line, on, priority=INPUT)

    def _pulse(self, w: Wire, t: int) -> None:
        self._output(w, t, True)
        self._output(w, t + PULSE_US[SIGNAL(w.signal).name], False)

    def _watched(self, line: int, on: bool) -> None:
        if line not in self.wires or self.active.get(line, False) == on:
            return
        self.active[line] = on
        action = ACTION.press if on else ACTION.release
        self.device.emit(msg.RIG_CAPTURE, at=self.device.now(), line=line, action=action, origin=ORIGIN.watched,
                         stimulus=0)


def _rig_wire(core, f, m, t):
    error = core.rig.wire(m)
    return error or msg.ACK(f.seq, m.ID, len(core.rig.wires))


def _rig_edge(core, f, m, t):
    if not core.rig.drivable(m.line) or m.action not in (ACTION.press, ACTION.release):
        return ERROR.bad_value
    sid, error = core.schedule_stimulus(t, m.at_us, core.rig.drive, m.line, m.action, m.value)
    return error or msg.ACK(f.seq, m.ID, sid)


class RigModel(UnitModel):
    """The rig's side of the device core: its state and its commands. What RESET new_game keeps (the wiring,
    the levels) lives in Rig."""
    KIND = RIG.kind
    INPUTS = ()
    STATES = STATE
    IDLE_STATES = tuple(STATE)
    COMMANDS = {msg.RIG_WIRE: _rig_wire, msg.RIG_EDGE: _rig_edge}

    def power_on(self, t: int) -> None:
        rig = getattr(self.core, "rig", None)
        if rig is None:
            rig = Rig(self.core, None, PathSpec())      # served on its own (python -m unohil.emulator rig)
        if self.core.boots > rig.boots:
            rig.boots = self.core.boots             # a boot (not RESET new_game): the wiring is gone
            rig.rebooted()
        self.state = STATE.wired if rig.wires else STATE.unwired

    def shutdown(self, t: int) -> None:
        pass                    # RESET new_game: nothing of the rig's is a game


MODEL = RigModel


class RigLink(VirtualLink):
    """The rig's end of the link interface, on the unit link's clock and host time."""

    def __init__(self, unit_link: VirtualLink, spec: PathSpec, *, serial: int = 0x716, closed_error=ConnectionError):
        self.unit_link = unit_link
        self.url = "emurig://"
        self.clock = unit_link.clock
        self.device = Device(RIG.kind, self.clock, serial=serial, boot_time_us=RIG_BOOT_US)
        self.rig = Rig(self.device, unit_link.device, spec)
        self.host_offset_us = unit_link.host_offset_us
        self.drift_ppm = 0.0
        self._rate = Fraction(1)
        self._no_drift = True
        self.closed = False
        self.closed_error = closed_error
        self.faults = None
        self.device.start()

    @property
    def _host_now(self) -> int:
        return self.unit_link._host_now

    @_host_now.setter
    def _host_now(self, value: int) -> None:
        self.unit_link._host_now = value


def _bench(kind: str, unit_options: dict, path_options: dict[str, str]) -> tuple[PathSpec, dict]:
    """The path spec of path_options and the unit's options without host_input and test_mode (its inputs
    come through the rig)."""
    outputs = {w.name for w in RIG.wiring[kind] if not w.drives and w.signal != "loopback"}
    spec = parse_path(path_options, cat.UNITS[kind].inputs, outputs)
    without = {w for w in str(unit_options.pop("without", "")).split(",") if w} | {"host_input", "test_mode"}
    return spec, {**unit_options, "without": ",".join(sorted(without))}


def open_pair(kind: str, unit_options: dict, path_options: dict[str, str], *, closed_error=ConnectionError):
    """An emulated unit of this kind on the virtual clock and the emulated rig wired to it, the path built from
    path_options (emulator/path.py). The unit has no host_input or test_mode: its inputs come through the rig.
    Returns (unit link, rig link)."""
    spec, options = _bench(kind, unit_options, path_options)
    unit = VirtualLink(kind, closed_error=closed_error, **options)
    return unit, RigLink(unit, spec, closed_error=closed_error)


def start_real_pair(kind: str, unit_options: dict, path_options: dict[str, str]):
    """The same pair on the real clock, served from one thread. Returns ((unit socket, rig socket), stop());
    stop() ends the thread (both devices), the caller closes the sockets."""
    spec, options = _bench(kind, unit_options, path_options)
    clock = RealClock()
    unit = Device(kind, clock, salt=os.urandom(8), **options)
    rig = Device(RIG.kind, clock, serial=0x716, boot_time_us=RIG_BOOT_US, salt=os.urandom(8))
    Rig(rig, unit, spec)
    unit.start()
    rig.start()
    return serve_in_thread(clock, [unit, rig])
