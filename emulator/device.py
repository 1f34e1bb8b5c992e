"""The device core: one emulated unit's protocol side, around a unit model.

Bytes in (receive), bytes out (take_output). In between: the stream decoder, every
command of protocol/messages.yaml, NAKs for every bad-input case of
protocol/SPEC.md (2.6, 4.3), header and event sequence numbers, the 64-event ring for
EVENT_RESEND, the 16-deep INJECT queue, configuration, the seeded random generator,
and the u32 device time. The game rules live in the unit model (emulator/model.py
documents the model API); the passing of time lives in the clock (emulator/clock.py).
The core does no I/O: a link or a serving loop moves its bytes.

Device time: unwrapped microseconds t = boot_time_us + (clock time - clock time at
boot); the wire carries t mod 2**32. boot_time_us lets a test start the counter just
before the wrap. A reboot restarts the counter at boot_time_us, as a
microcontroller's timer would.

Protocol choices implemented here (protocol/SPEC.md sections 2.6, 4.3-4.9):
- A command's reply is sent before the events it caused (RESET reboot: ACK, then
  BOOT; EVENT_RESEND: ACK, then the events; INPUT: ACK, then INPUT_SEEN and its
  consequences).
- INPUT_SEEN of an input edge precedes the events the edge caused; its header time
  is the edge's time (for INJECT, at_us; for INPUT, the time the frame completed).
- A frame whose header major version differs is answered NAK bad_version (detail =
  the device's major), like a HELLO with another host_major. A frame of a type that
  is not a command is answered NAK unknown_type. Too-short frames and COBS errors
  are dropped and counted (dropped_frames), no NAK.
- NAK wrong_state carries the unit's state in detail; bad_version the device major.
- An input edge with a non-zero value on an input the catalogue does not list as valued
  (units: valued_inputs) is refused bad_value before the model sees it (PR-3).
- RESET new_game keeps pending INJECT stimuli (they belong to the test, not the
  game); RESET reboot drops them.
- Events are stamped with the model's time of the input or timer that caused them
  (an injected input's at_us, a timer's due time), so the wire agrees with the
  model on the real clock too; verdicts are stamped when produced (see _latched).

Test hooks: drop_next_events(n, name=None) keeps the next n events (of that message
name, if given) off the wire once; they stay in the ring, so EVENT_RESEND recovers
them, exactly like events lost on a noisy line.
"""
from __future__ import annotations

import hashlib
import random
from collections import deque

from unohil import protocol
from unohil.protocol import ENUMS, NONE_U16, FrameError, StreamDecoder, encode, msg
from unohil.protocol.codec import handed
from unohil.protocol.catalogue import EVENT_BUFFER, INJECT_QUEUE, MAJOR, MINOR, UNITS, params_for
from unohil.protocol.algorithms import Pcg32
from unohil.protocol.devtime import diff, wrap

from .build import check_options, check_without, firmware_version, model_class
from .clock import INPUT, TIMER
from .model import DISPOSITION, ERROR, UnitModel

FIRMWARE = (0, 1, 0)
KIND = ENUMS["unit_kind"]
SOURCE = ENUMS["input_source"]
BOOT_REASON = ENUMS["boot_reason"]
CAP = ENUMS["capability"]
RESET_MODE = ENUMS["reset_mode"]
ACTION = ENUMS["action"]

_ACTIONS = frozenset({int(ACTION.press), int(ACTION.release)})
_TIMERS_KEPT = 64            # cancelled model timers are dropped from the set beyond this

# Events that close a race: stamped when produced, so their lateness is visible.
_VERDICT_CLASSES = frozenset(getattr(msg, u.verdict) for u in UNITS.values())

_COMMAND_IDS = frozenset(m.id for m in protocol.catalogue.MESSAGES if m.kind == "command")
_UNATTRIBUTED = {"bad_crc": ERROR.bad_crc, "too_long": ERROR.frame_too_long}
_ATTRIBUTED = {"unknown_type": ERROR.unknown_type, "bad_length": ERROR.bad_length,
               "bad_version": ERROR.bad_version}


GENERATORS = {"reference": Pcg32, "python": random.Random}


def _unsupported(device, frame, m, t) -> int:
    return ERROR.unsupported


def _check_numbers(*, seed: int, serial: int, boot_time_us: int, rng: str, timer_lag_us: int,
                   verdict_delay_us: int, inject_queue: int) -> None:
    """Device()'s arguments within what the unit's fields and the SPEC allow: a ValueError naming the first not."""
    if not 0 <= seed <= 0xFFFFFFFF:
        raise ValueError(f"seed must be a u32, not {seed}")
    if not 0 <= serial <= 0xFFFFFFFF:
        raise ValueError(f"serial must be a u32, not {serial}")
    if not 0 <= boot_time_us <= 0xFFFFFFFF:
        raise ValueError(f"boot_time_us must be a u32, not {boot_time_us}")
    if rng not in GENERATORS:
        raise ValueError(f"rng must be one of {', '.join(GENERATORS)}, not {rng!r}")
    if not 0 <= timer_lag_us <= 2000:
        raise ValueError(f"timer_lag_us must be 0..2000 (PR-1: within the 2 ms of a reply), not {timer_lag_us}")
    if not 0 <= verdict_delay_us <= 1_000_000:
        raise ValueError(f"verdict_delay_us must be 0..1000000, not {verdict_delay_us}")
    if not 0 <= inject_queue <= 255:
        raise ValueError(f"inject_queue must be a u8, not {inject_queue}")


class Device:
    output_frames: list | None = None       # a list: what the unit sends kept as frame objects (take_frames)

    def __init__(self, kind: str, clock, *, seed: int = 1, serial: int = 1, boot_time_us: int = 0,
                 salt: bytes = b"", without: str | tuple[str, ...] = (), rng: str = "reference",
                 timer_lag_us: int = 0, inject_queue: int = INJECT_QUEUE, verdict_delay_us: int = 0,
                 firmware: str = "", **unit_options):
        self.kind = kind
        self.model_cls = model_class(kind)
        self.options = check_options(self.model_cls, unit_options)
        # A unit built without some optional capabilities: their bits are clear in IDENTITY and their
        # commands are answered NAK unsupported (SPEC 4.3), as firmware that lacks them would.
        self.without = check_without(without)
        # a model may bring commands of its own kind (the rig's, emulator/rig.py); a command whose capability
        # the kind lacks (a game unit's RIG_EDGE, the rig's INPUT) is unsupported, as is one built without it
        handlers = {**_HANDLERS, **self.model_cls.COMMANDS}
        lacks = self.without | {c.DEF.capability for c in handlers
                                if c.DEF.capability and c.DEF.capability not in self.model_cls.CAPS}
        self._handlers = {cls: (_unsupported if cls.DEF.capability in lacks else h)
                          for cls, h in handlers.items()}
        _check_numbers(seed=seed, serial=serial, boot_time_us=boot_time_us, rng=rng, timer_lag_us=timer_lag_us,
                       verdict_delay_us=verdict_delay_us, inject_queue=inject_queue)
        self.clock = clock
        self.seed = seed
        self.serial = serial
        self.boot_time_us = boot_time_us
        self.salt = salt                  # mixed into boot ids: a served unit gets fresh ones per run
        self.params = {p.name: p for p in params_for(kind)}
        unit = UNITS.get(kind)              # None for the rig: a device kind that is not a game unit
        self.cross_rules = unit.cross_rules if unit else ()
        self.decoder = StreamDecoder()
        # The reference generator of SPEC 6, or (rng=python) another allowed one, as a unit whose
        # firmware brings its own would have: same distributions, other draws, no reference_rng bit.
        self.rng_name = rng
        # A unit whose timer handlers stamp the moment they ran, this late, not the deadline they armed:
        # PR-1 allows it (later, never earlier); the rules still run on the scheduled times.
        self.timer_lag_us = timer_lag_us
        # A unit slower to give its verdicts than this model (firmware doing more work, or slower at it): each
        # verdict, and whatever the unit says after it until then, leaves this much later, stamped then. Its
        # processing latency (header - knowable_us) grows by as much; a release's regression to find.
        self.verdict_delay_us = verdict_delay_us
        self._late: list | None = None      # what waits for the slow verdict's moment, in order
        self.firmware = firmware_version(firmware) if firmware else FIRMWARE     # IDENTITY's version: another build
        # IDENTITY.inject_queue, and the stimuli it takes before queue_full: SPEC 4.8 fixes 16; another value
        # is firmware a harness must recognise as such (0 on a unit with test_mode, say)
        self.inject_queue = inject_queue
        self.rng = GENERATORS[rng](seed)
        self.config: dict[str, int] = {}
        self.output = bytearray()
        self.boots = 0
        self.dropped_frames = 0           # garbage and COBS errors: counted, never answered
        self.epoch = 0
        self.boot_id = 0
        self.model: UnitModel | None = None
        self.caps = 0
        self._timers: set = set()
        self._injects: dict[int, object] = {}
        self._inject_id = 0
        self._tx_seq = 0
        self._event_seq = 0
        self._ring: deque = deque(maxlen=EVENT_BUFFER)
        self._held: list | None = None
        self._drops: list[list] = []
        self._reboot_pending = False
        self._stamp: int | None = None    # event time while the unit acts on one input or timer
        self._inputs = frozenset(int(i) for i in self.model_cls.INPUTS)
        self._valued = frozenset(unit.inputs[name] for name in unit.valued_inputs) if unit else frozenset()
        self.observer = None    # observer(message, t): every event as it is produced (the rig's output path)
        # The current game, for rehearsals (emulator/rehearsal.py): when it began and its first
        # input edges. A game begins at boot, at RESET new_game, and at an edge that finds the unit
        # idle (IDLE_STATES) after an edge of the game found it playing.
        self.game_start = 0
        self.game_inputs: list[tuple[int, int, int, int]] = []
        self._game_playing = False
        self._idle_states = frozenset(self.model_cls.IDLE_STATES)

    # ---- life cycle ----
    def start(self) -> None:
        """Power on: the first BOOT."""
        self._boot(BOOT_REASON.power_on)

    def _boot(self, reason: int) -> None:
        self._stamp = None
        self._cancel_timers()
        self._cancel_injects()
        self.epoch = self.clock.now()
        self.game_start, self.game_inputs, self._game_playing = self.boot_time_us, [], False
        self._tx_seq = 0
        self._event_seq = 0
        self._inject_id = 0
        self._ring.clear()
        self.config.clear()
        self.config.update({name: p.default for name, p in self.params.items()})
        self.config["rng_seed"] = self.seed
        self.rng.seed(self.seed)
        self.boots += 1
        digest = hashlib.sha256(b"%d:%d:%d:" % (self.serial, self.seed, self.boots) + self.salt).digest()
        self.boot_id = int.from_bytes(digest[:4], "little") or 1
        self.model = self.model_cls(self, **self.options)
        caps = self.model.caps() + (("reference_rng",) if self.rng_name == "reference" and self.model.DRAWS else ())
        self.caps = sum(1 << CAP[c] for c in caps if c not in self.without)
        self.emit(msg.BOOT, boot_id=self.boot_id, reason=reason)
        self.model.power_on(self.now())

    # ---- time ----
    def now(self) -> int:
        """Unwrapped device time."""
        return self.from_clock(self.clock.now())

    def to_clock(self, t: int) -> int:
        return t - self.boot_time_us + self.epoch

    def from_clock(self, clock_us: int) -> int:
        """Unwrapped device time at clock time clock_us."""
        return self.boot_time_us + clock_us - self.epoch

    def call_at(self, t: int, fn, *args, priority=TIMER):
        """Schedule fn(t, *args) at device time t (model timers; cancelled on reset)."""
        timers = self._timers
        handle = self.clock.call_at(self.to_clock(t), self.run_timer, fn, t, *args, priority=priority)
        timers.add(handle)
        if len(timers) > _TIMERS_KEPT:
            # Fired and cancelled handles stay in the set until here (a fired one has fn None too):
            # without this a unit that is never reset would keep every timer it ever had.
            timers.difference_update([h for h in timers if h.fn is None])
        return handle

    def _cancel_timers(self) -> None:
        self._late = None           # a verdict still on its way is lost with the timers, as in a reboot
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()

    def _cancel_injects(self) -> int:
        n = len(self._injects)
        for handle in self._injects.values():
            handle.cancel()
        self._injects.clear()
        return n

    # ---- output ----
    def take_frames(self) -> list:
        """What the unit sent since, as frame objects. output_frames is None on a unit whose output is encoded
        into output (bytes); an in-process link sets it to a list before start(), and what the unit sends is
        kept there as frames, handed to the host without bytes (take_output still encodes them)."""
        frames, self.output_frames = self.output_frames, []
        return frames

    def take_output(self) -> bytes:
        out = bytes(self.output)
        self.output.clear()
        frames = self.output_frames
        if frames:
            out += b"".join(encode(f.msg, f.seq, f.time_us) for f in frames)
            frames.clear()
        return out

    def _send(self, m, time_us: int) -> None:
        seq = self._tx_seq
        self._tx_seq = (seq + 1) & 0xFFFF
        if self.output_frames is None:
            self.output += encode(m, seq, time_us)
        else:
            self.output_frames.append(handed(m, seq, time_us))

    def emit(self, cls, at: int | None = None, **fields) -> None:
        """Emit an event now (or with header time at). Held while a command is answered."""
        verdict = cls in _VERDICT_CLASSES
        if at is None:
            at = self._stamp
            if at is None:
                at = self.now()
            elif verdict:
                # produced now, and never before the work it closes began (a lagging timer's: its stamp)
                at = max(self.now(), at)
        if verdict and self._stamp is not None:
            self._stamp = at        # PR-7: what the verdict brings in this work (STATE, lights...) carries its time
        if self.verdict_delay_us and (self._late is not None or verdict):
            if self._late is None:
                self._late = []
                self.call_at(self.now() + self.verdict_delay_us, self._late_out)
            self._late.append((cls, fields))
            return
        self._out(cls, fields, at)

    def _late_out(self, t: int) -> None:
        late, self._late = self._late or [], None
        for cls, fields in late:
            self._out(cls, fields, t)

    def _out(self, cls, fields: dict, at: int) -> None:
        if self._held is not None:
            self._held.append((cls, fields, at))
        else:
            self._emit(cls, fields, at)

    def _emit(self, cls, fields: dict, t: int) -> None:
        seq = self._event_seq
        self._event_seq = (seq + 1) & 0xFFFF
        m = cls(seq, **fields)
        time_us = t & 0xFFFFFFFF
        self._ring.append((seq, time_us, m))
        if self.observer is not None:
            self.observer(m, t)
        if self._drops and self._dropping(m):
            return
        self._send(m, time_us)

    def _dropping(self, m) -> bool:
        for drop in self._drops:
            if drop[1] is None or drop[1] == m.NAME:
                drop[0] -= 1
                if drop[0] <= 0:
                    self._drops.remove(drop)
                return True
        return False

    def drop_next_events(self, n: int = 1, name: str | None = None) -> None:
        """Keep the next n events (only those named name, if given) off the wire, once."""
        if name is not None and name not in protocol.BY_NAME:
            raise ValueError(f"no message named {name!r}")
        if n > 0:
            self._drops.append([n, name])

    def _flush_held(self, held: list) -> None:
        for cls, fields, t in held:
            if self._held is not None:
                self._held.append((cls, fields, t))
            else:
                self._emit(cls, fields, t)

    # ---- inputs ----
    def apply_input(self, t: int, inp: int, action: int, value: int, source: int) -> tuple[int, int]:
        """One input edge at device time t: the model acts, INPUT_SEEN goes first.
        Returns the model's (disposition, detail)."""
        outer = self._held
        held = self._held = [] if outer is None else outer      # inside a command: its list
        if self.model.state not in self._idle_states:
            self._game_playing = True
        elif self._game_playing:
            self.game_start, self.game_inputs, self._game_playing = t, [], False
        if len(self.game_inputs) < INJECT_QUEUE:
            self.game_inputs.append((t, inp, action, value))
        mark = len(held)
        try:
            if value and inp not in self._valued:
                # PR-3: a value on an input that takes none is refused; the model never sees the edge
                disposition, detail = DISPOSITION.refused, ERROR.bad_value
            else:
                disposition, detail = self.model.on_input(t, inp, action, value)
        finally:
            self._held = outer
        held.insert(mark, (msg.INPUT_SEEN, {"input": inp, "action": action, "value": value, "source": source,
                                            "disposition": disposition, "detail": detail}, t))
        if outer is None:
            self._flush_held(held)
        return disposition, detail

    def _valid_input(self, inp: int, action: int) -> bool:
        return inp in self._inputs and action in _ACTIONS

    def physical_input(self, at_dev_us: int, inp: int, action: int, value: int = 0):
        """A person's edge on the unit's own switch at device time at_dev_us (source physical): what the
        interactive unit's keys and a test standing in for a player do. Not cancelled by RESET."""
        return self.clock.call_at(self.to_clock(at_dev_us), self._latched, self.apply_input, at_dev_us, inp, action,
                                  value, SOURCE.physical, priority=INPUT)

    def _run_inject(self, t: int, sid: int, inp: int, action: int, value: int) -> None:
        self._injects.pop(sid, None)
        self._latched(self.apply_input, t, inp, action, value, SOURCE.injected)

    def run_timer(self, fn, t: int, *args) -> None:
        """Run a model timer's work for its deadline t, now or (caught up by a later input) late:
        its events carry t, the scheduled time (PR-1), or t + timer_lag_us on a unit that lags."""
        outer, self._stamp = self._stamp, t + self.timer_lag_us
        try:
            fn(t, *args)
        finally:
            self._stamp = outer

    def _latched(self, fn, t: int, *args) -> None:
        """Run fn(t, ...) with event times latched to t, the time the model acts at.

        On the real clock a timer runs a little after its due time and frames take
        tens of microseconds to build; stamping every consequence with the model's own
        time keeps the wire consistent with the model (a press injected at green + 180000
        is a reaction of exactly 180000 us, and SD_GREEN says when green was). Verdicts
        are the exception: their header is the time they were actually produced, so
        header - knowable_us shows the unit's processing delay (see emit)."""
        outer = self._stamp
        if outer is None:
            self._stamp = t
        try:
            fn(t, *args)
        finally:
            self._stamp = outer

    # ---- bytes in ----
    def receive(self, data: bytes) -> None:
        """Bytes that arrived now. Every frame they complete is handled at this device time."""
        arrived = self.clock.now()
        try:
            for item in self.decoder.feed(data):
                t = self._stamp = self.from_clock(arrived)     # per frame: a reboot moves the epoch
                if item.__class__ is FrameError:
                    self._frame_error(item)
                else:
                    self._command(item, t)
        finally:
            self._stamp = None

    def receive_message(self, m, seq: int) -> None:
        """A command handed over as an object, header seq seq (an in-process link): handled now, as receive()
        handles the frame it decodes."""
        self._stamp = t = self.from_clock(self.clock.now())
        try:
            self._command(handed(m, seq, 0), t)
        finally:
            self._stamp = None

    def _frame_error(self, err: FrameError) -> None:
        if err.kind == "bad_length" and err.type_id not in _COMMAND_IDS:
            # SPEC 2.6: to a device a reply or event id is not a message at all (check 6), so its
            # length is never looked at (check 7)
            self._nak_raw(err.seq, err.type_id, ERROR.unknown_type)
        elif err.kind in _UNATTRIBUTED:
            self._nak_raw(0xFFFF, 0xFF, _UNATTRIBUTED[err.kind])
        elif err.kind in _ATTRIBUTED:
            self._nak_raw(err.seq, err.type_id, _ATTRIBUTED[err.kind], MAJOR if err.kind == "bad_version" else 0)
        else:
            self.dropped_frames += 1

    def _nak_raw(self, seq: int, type_id: int, error: int, detail: int = 0) -> None:
        self._send(msg.NAK(seq, type_id, error, detail), wrap(self.now()))

    def _command(self, frame, t: int) -> None:
        m = frame.msg
        handler = self._handlers.get(m.__class__)
        if handler is None:
            self._nak_raw(frame.seq, m.ID, ERROR.unknown_type)
            return
        self._held = []
        try:
            reply = handler(self, frame, m, t)
            if isinstance(reply, int):
                reply = msg.NAK(frame.seq, m.ID, reply, self.model.state if reply == ERROR.wrong_state else 0)
            if reply is not None:
                # A TIME_SYNC reply's header time is its t3 (SPEC 5): one clock reading, not two.
                self._send(reply, reply.t3_us if reply.NAME == "TIME_SYNC_REPLY" else wrap(self.now()))
        finally:
            held, self._held = self._held, None
        if self._reboot_pending:
            self._reboot_pending = False
            self._boot(BOOT_REASON.reset_command)
            return
        self._flush_held(held)

    # ---- commands: each returns its reply, or an error code for a NAK ----
    def _hello(self, f, m, t):
        if m.host_major != MAJOR:
            return msg.NAK(f.seq, m.ID, ERROR.bad_version, MAJOR)
        model = self.model
        return msg.IDENTITY(
            cmd_seq=f.seq, kind=KIND[self.kind], proto_major=MAJOR, proto_minor=MINOR,
            fw_major=self.firmware[0], fw_minor=self.firmware[1], fw_patch=self.firmware[2], serial=self.serial,
            boot_id=self.boot_id, caps=self.caps, catalog_crc=protocol.CATALOG_CRC,
            card_capacity=getattr(model, "card_capacity", 0), players=getattr(model, "players", 0),
            event_buffer=EVENT_BUFFER, inject_queue=self.inject_queue, seed=self.config["rng_seed"])

    def _time_sync(self, f, m, t):
        return msg.TIME_SYNC_REPLY(f.seq, m.t1_host_us, wrap(t), wrap(self.now()))

    def _config_get(self, f, m, t):
        p = protocol.PARAMS_BY_ID.get(m.param)
        if p is None or p.name not in self.params:
            return ERROR.unknown_param
        return msg.CONFIG_VALUE(f.seq, m.param, self.config[p.name])

    def _config_set(self, f, m, t):
        p = protocol.PARAMS_BY_ID.get(m.param)
        if p is None or p.name not in self.params:
            return ERROR.unknown_param
        if self.model.state not in self.model.IDLE_STATES:
            return ERROR.wrong_state
        if not p.min <= m.value <= p.max:
            return ERROR.bad_value
        proposed = dict(self.config, **{p.name: m.value})
        if not all(rule.holds(proposed) for rule in self.cross_rules):
            return ERROR.bad_value
        error = self.model.check_config(p.name, m.value, proposed)
        if error:
            return ERROR[error]
        self.config[p.name] = m.value
        if p.name == "rng_seed":
            self.rng.seed(m.value)
        return msg.CONFIG_VALUE(f.seq, m.param, m.value)

    def _status_get(self, f, m, t):
        return msg.STATUS(f.seq, self.model.state, self.model.cards, self._event_seq, len(self._injects),
                          self.boot_id)

    def _event_resend(self, f, m, t):
        wanted = [e for e in self._ring if (e[0] - m.first_seq) & 0xFFFF < m.count]
        self._send(msg.ACK(f.seq, m.ID, len(wanted)), wrap(self.now()))
        for _seq, time_us, event in wanted:
            self._send(event, time_us)
        return None

    def _input(self, f, m, t):
        if not self._valid_input(m.input, m.action):
            return ERROR.bad_value
        disposition, detail = self.apply_input(t, m.input, m.action, m.value, SOURCE.host)
        if disposition == DISPOSITION.refused:
            return detail
        return msg.ACK(f.seq, m.ID, 0)

    def _inject(self, f, m, t):
        if not self._valid_input(m.input, m.action):
            return ERROR.bad_value
        sid, error = self.schedule_stimulus(t, m.at_us, self._run_inject, m.input, m.action, m.value)
        return error or msg.ACK(f.seq, m.ID, sid)

    def schedule_stimulus(self, t: int, at_us: int, fn, *args) -> tuple[int, int]:
        """A stimulus for u32 device time at_us, accepted at t by INJECT's rules (SPEC 4.8): fn(at, sid, *args)
        runs then (INJECT_CANCEL drops it). Returns (stimulus id, 0), or (0, error code) when refused."""
        ahead = diff(at_us, wrap(t))
        if ahead <= 0:
            return 0, ERROR.too_late
        if len(self._injects) >= self.inject_queue:
            return 0, ERROR.queue_full
        self._inject_id = self._inject_id % NONE_U16 + 1
        sid = self._inject_id
        at = t + ahead
        self._injects[sid] = self.clock.call_at(self.to_clock(at), fn, at, sid, *args, priority=INPUT)
        return sid, 0

    def stimulus_done(self, sid: int) -> None:
        """A scheduled stimulus ran: no longer pending."""
        self._injects.pop(sid, None)

    def _inject_cancel(self, f, m, t):
        return msg.ACK(f.seq, m.ID, self._cancel_injects())

    def _reset(self, f, m, t):
        if m.mode == RESET_MODE.reboot:
            self._reboot_pending = True
        elif m.mode == RESET_MODE.new_game:
            self._new_game(t)
        else:
            return ERROR.bad_value
        return msg.ACK(f.seq, m.ID, 0)

    def _new_game(self, t: int) -> None:
        old = self.model
        self._cancel_timers()
        old.shutdown(t)
        self.model = self.model_cls(self, **self.options)
        self.model.power_on(t)
        self.game_start, self.game_inputs, self._game_playing = t, [], False
        self.emit(msg.STATE, state=self.model.state, previous=old.state)

    # ---- introspection for tests and tools ----
    @property
    def next_event_seq(self) -> int:
        return self._event_seq

    @property
    def pending_injects(self) -> int:
        return len(self._injects)

    def stimuli_until(self, t: int) -> list[tuple[int, int, int, int]]:
        """Injected stimuli still pending, due at or before device time t: (at, input, action, value)."""
        pending = (h.args for h in self._injects.values() if h.fn is not None)
        return sorted((at, inp, action, value) for at, _sid, inp, action, value in pending if at <= t)


_HANDLERS = {
    msg.HELLO: Device._hello, msg.TIME_SYNC: Device._time_sync, msg.CONFIG_GET: Device._config_get,
    msg.CONFIG_SET: Device._config_set, msg.STATUS_GET: Device._status_get, msg.EVENT_RESEND: Device._event_resend,
    msg.INPUT: Device._input, msg.INJECT: Device._inject, msg.INJECT_CANCEL: Device._inject_cancel,
    msg.RESET: Device._reset,
    msg.RIG_WIRE: _unsupported, msg.RIG_EDGE: _unsupported,     # the rig's model brings its own (SPEC 13.2)
}
