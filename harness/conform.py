"""unohil conform: the firmware acceptance run.

Two parts, reported by SPEC.md section:

1. Protocol checks, on raw frames (this module's Wire, not the Driver, because
   most checks send what a well-behaved host never would): framing and bad input
   (2), header seq and device time (3), handshake and versions (4.2), one reply per
   command (4.3), events and EVENT_RESEND (4.5), time sync (4.6), configuration
   (4.7), test mode (4.8), RESET and BOOT (4.9), and the USB binding (10.1) on
   usb:// links. The unit is rebooted (RESET reboot) at the start and at the end.
2. The scenario library of the unit's kind (sections 7-9), through the Runner.

Some checks are global: every command sent during the run must get exactly one
reply, every device frame must decode, header seqs and event_seqs must run
without gaps. They are judged over everything that came back, so a fault that
only shows in some corner of the run still fails them.

The checks assume a clean link (a lost byte is reported as the device's fault);
run conformance on a good cable.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from protocol import Frame, FrameError, StreamDecoder, catalogue as cat, devtime, encode, msg
from protocol.framing import cobs_encode, crc16

from .errors import HarnessError, LinkClosed, LinkError

SECTIONS = {
    "2": "2 Framing",
    "3": "3 Header and device time",
    "4.2": "4.2 Handshake and versions",
    "4.3": "4.3 Commands and replies",
    "4.5": "4.5 Events and EVENT_RESEND",
    "4.6": "4.6 Time sync",
    "4.7": "4.7 Configuration",
    "4.8": "4.8 Test mode",
    "4.9": "4.9 RESET and BOOT",
    "7": "7 Showdown unit",
    "8": "8 Flash base",
    "9": "9 Card launcher",
    "10": "10 Transport bindings",
}
KIND_SECTION = {"showdown": "7", "flash": "8", "launcher": "9"}
ERR = cat.ENUM_VALUES["error"]
ERR_NAMES = {v: k for k, v in ERR.items()}
KIND_NAMES = {v: k for k, v in cat.ENUM_VALUES["unit_kind"].items()}
ACTION = cat.ENUM_VALUES["action"]
SOURCE = cat.ENUM_VALUES["input_source"]
DISPOSITION = cat.ENUM_VALUES["disposition"]
REPLY_OF = {m.name: m.reply for m in cat.MESSAGES if m.kind == "command"}
COMMAND_IDS = {m.id for m in cat.MESSAGES if m.kind == "command"}
REPLY_TIMEOUT_US = 1_000_000
QUIET_US = 100_000
TURNAROUND_MAX_US = 50_000
POWER_ON = {"showdown": "empty", "flash": "setup", "launcher": "ready"}

# Per unit kind, from the state tables of SPEC.md sections 7-9: inputs (name, action, value) that
# bring a fresh unit to the situation a check needs; the last input of each is the one judged.
RECIPES = {
    "showdown": {
        "report": ("paddle_a", "release", 0),                       # reported, changes nothing
        "stimulus": ("load_cards", "press", 1),
        "refused": [("timer", "press", 0)],                          # empty tray: wrong_state
        "refused_value": [("load_cards", "press", 0)],               # zero cards: bad_value
        "busy_config": {},
        "busy": [("load_cards", "press", 2), ("timer", "press", 0)],   # countdown
    },
    "flash": {
        "report": ("player_0", "release", 0),
        "stimulus": ("player_0", "press", 0),
        "refused": [("play_pause", "press", 0)],                     # setup, < 2 registered
        "refused_value": None,
        "busy_config": {},
        "busy": [("player_0", "press", 0), ("player_1", "press", 0), ("play_pause", "press", 0)],   # turn
    },
    "launcher": {
        "report": ("button", "release", 0),
        "stimulus": ("door", "press", 0),
        "refused": [("door", "press", 0), ("button", "press", 0)],   # door open: wrong_state
        "refused_value": [("door", "press", 0), ("load_cards", "press", 0)],
        "busy_config": {"fire_base_permille": 1000, "motor_us": 2_000_000},
        "busy": [("door", "press", 0), ("load_cards", "press", 5), ("door", "release", 0), ("button", "press", 0)],
    },
}


def cross_rules_ok(kind: str, config: dict[str, int]) -> bool:
    """The cross-parameter rules of SPEC.md 4.7."""
    if kind == "showdown":
        return config["countdown_min_us"] <= config["countdown_max_us"] and config["flight_us"] > config["tie_window_us"]
    if kind == "launcher":
        return config["burst_min"] <= config["burst_mode"] <= config["burst_max"]
    return True


class Fail(Exception):
    pass


class ConformError(HarnessError):
    """The run could not start (no answer, not a unit): exit 2."""


@dataclass
class CheckResult:
    section: str
    name: str
    status: str = "pass"            # pass | fail | skip | error
    detail: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"section": SECTIONS.get(self.section, self.section), "name": self.name, "status": self.status,
                "detail": self.detail, "seconds": round(self.seconds, 6)}


@dataclass
class Report:
    device: str
    identity: dict = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    aborted: str = ""
    wall_s: float = 0.0
    stats: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.aborted and all(c.status in ("pass", "skip") for c in self.checks)

    def sections(self) -> list[tuple[str, list[CheckResult]]]:
        order = list(SECTIONS)
        keys = sorted({c.section for c in self.checks}, key=lambda s: order.index(s) if s in order else 99)
        return [(k, [c for c in self.checks if c.section == k]) for k in keys]

    def as_dict(self) -> dict:
        return {"device": self.device, "identity": self.identity, "passed": self.passed, "aborted": self.aborted,
                "wall_s": round(self.wall_s, 3), "stats": self.stats,
                "sections": [{"section": SECTIONS.get(k, k), "checks": len(cs),
                              "failed": sum(1 for c in cs if c.status in ("fail", "error")),
                              "skipped": sum(1 for c in cs if c.status == "skip")} for k, cs in self.sections()],
                "checks": [c.as_dict() for c in self.checks]}


# ---- raw frames ----

def raw_frame(type_id: int, payload: bytes, seq: int, version: int = cat.VERSION_BYTE, bad_crc: bool = False) -> bytes:
    body = bytes([version, type_id]) + (seq & 0xFFFF).to_bytes(2, "little") + bytes(4) + payload
    crc = crc16(body) ^ (0x5A5A if bad_crc else 0)
    return cobs_encode(body + crc.to_bytes(2, "little")) + b"\x00"


class Wire:
    """A raw protocol session: frames out exactly as built, every frame in recorded in order."""

    def __init__(self, link):
        self.link = link
        self.dec = StreamDecoder()
        self.frames: list[Frame] = []
        self.stream_errors: list[FrameError] = []
        self.sent: dict[int, tuple[str, int]] = {}        # seq -> (name, type id) of commands owed a reply
        self.replies: dict[int, list[Frame]] = {}
        self.unattributed: list[Frame] = []
        self.resent: set[int] = set()                      # ids of frames that are EVENT_RESEND copies
        self._resend_left = 0
        self.origin = 0                                    # frames and errors before this are another session's
        self.origin_errors = 0
        self._seq = 0x100
        self.reply_times_us: list[int] = []

    def next_seq(self) -> int:
        s = self._seq
        self._seq = (s + 1) & 0xFFFF
        if self._seq == 0xFFFF:
            self._seq = 0
        return s

    # ---- out ----
    def send(self, m, *, owed: bool = True) -> int:
        seq = self.next_seq()
        if owed:
            self.sent[seq] = (m.NAME, m.ID)
        self.link.write(encode(m, seq, 0))
        return seq

    def send_raw(self, data: bytes, owed: dict[int, tuple[str, int]] | None = None) -> None:
        if owed:
            self.sent.update(owed)
        self.link.write(data)

    # ---- in ----
    def pump(self, until_us: int) -> bool:
        left = until_us - self.link.now_us()
        data, host_us = self.link.read(max(0, left))
        if not data:
            return False
        for item in self.dec.feed(data):
            if isinstance(item, FrameError):
                self.stream_errors.append(item)
                continue
            item.host_us = host_us
            self._on_frame(item)
        return True

    def _on_frame(self, f: Frame) -> None:
        self.frames.append(f)
        m = f.msg
        if m.KIND == "reply":
            if m.cmd_seq == 0xFFFF:
                self.unattributed.append(f)
                return
            self.replies.setdefault(m.cmd_seq, []).append(f)
            owed = self.sent.get(m.cmd_seq)
            if owed and owed[0] == "EVENT_RESEND" and m.NAME == "ACK" and len(self.replies[m.cmd_seq]) == 1:
                self._resend_left = m.value
        elif m.KIND == "event" and self._resend_left > 0:
            self._resend_left -= 1
            self.resent.add(id(f))

    def reply(self, seq: int, timeout_us: int = REPLY_TIMEOUT_US) -> Frame | None:
        deadline = self.link.now_us() + timeout_us
        while not self.replies.get(seq):
            if not self.pump(deadline) and self.link.now_us() >= deadline:
                return None
        return self.replies[seq][0]

    def command(self, m, expect: str | None = None, timeout_us: int = REPLY_TIMEOUT_US) -> Frame:
        seq = self.send(m)
        t0 = self.link.now_us()
        r = self.reply(seq, timeout_us)
        if r is None:
            raise Fail(f"no reply to {m.NAME} (seq {seq}) within {timeout_us // 1000} ms")
        self.reply_times_us.append(r.host_us - t0)
        if expect is not None and r.msg.NAME != expect:
            raise Fail(f"{m.NAME} answered {_show(r)}, expected {expect}")
        return r

    def nak(self, m, error: str, detail: int | None = 0) -> Frame:
        r = self.command(m)
        expect_nak(r, m.ID, r.msg.cmd_seq, error, detail, what=m.NAME)
        return r

    def quiet(self, us: int = QUIET_US) -> list[Frame]:
        """Everything that arrives within us."""
        n = len(self.frames)
        deadline = self.link.now_us() + us
        while self.link.now_us() < deadline:
            self.pump(deadline)
        return self.frames[n:]

    def wait(self, pred, timeout_us: int, start: int = 0) -> Frame | None:
        deadline = self.link.now_us() + timeout_us
        i = start
        while True:
            while i < len(self.frames):
                if pred(self.frames[i]):
                    return self.frames[i]
                i += 1
            if not self.pump(deadline) and self.link.now_us() >= deadline:
                return None

    def last_dev_time(self) -> int:
        """Header time of the newest reply: a device time certainly in the past."""
        for f in reversed(self.frames):
            if f.msg.KIND == "reply":
                return f.time_us
        return 0


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise Fail(message)


def expect_nak(r: Frame, cmd_type: int, cmd_seq: int, error: str, detail: int | None = 0, what: str = "") -> None:
    m = r.msg
    what = what or f"type {cmd_type:#04x}"
    expect(m.NAME == "NAK", f"{what}: expected NAK {error}, got {_show(r)}")
    expect(m.error == ERR[error], f"{what}: expected NAK {error}, got NAK {ERR_NAMES.get(m.error, m.error)}")
    expect(m.cmd_seq == cmd_seq and m.cmd_type == cmd_type,
           f"{what}: NAK names seq {m.cmd_seq} type {m.cmd_type:#04x}, expected seq {cmd_seq} type {cmd_type:#04x}")
    if detail is not None:
        expect(m.detail == detail, f"{what}: NAK {error} detail {m.detail}, expected {detail}")


def _show(f: Frame) -> str:
    m = f.msg
    if m.NAME == "NAK":
        return f"NAK {ERR_NAMES.get(m.error, m.error)} (detail {m.detail})"
    return m.NAME


class Conformance:
    def __init__(self, link, *, scenarios: list | None = None, progress=None):
        self.link = link
        self.w = Wire(link)
        self.report = Report(link.url)
        self.scenarios = scenarios
        self.progress = progress
        self.ident = None
        self.kind: str | None = None
        self.recipe: dict = {}
        self.boot_seed = 0
        self.syncs: list[tuple[int, int, int, int]] = []        # t1, t2, t3, t4 (t2, t3 raw u32)

    # ---- bookkeeping ----
    def check(self, section: str, name: str, fn, *args) -> CheckResult:
        res = CheckResult(section, name)
        t0 = time.perf_counter()
        try:
            detail = fn(*args)
            if isinstance(detail, tuple) and detail and detail[0] == "skip":
                res.status, res.detail = "skip", detail[1]
            elif detail:
                res.detail = str(detail)
        except Fail as exc:
            res.status, res.detail = "fail", str(exc)
            self._recover()
        except LinkClosed:
            raise
        except LinkError as exc:
            res.status, res.detail = "error", str(exc)
        res.seconds = time.perf_counter() - t0
        self.report.checks.append(res)
        if self.progress is not None:
            self.progress(res)
        return res

    def _recover(self) -> None:
        """After a failed check, so that the next one starts clean: no stimuli, a new game."""
        if self.ident is None:
            return
        try:
            if self.has("test_mode"):
                self.w.command(msg.INJECT_CANCEL())
            self.new_game()
            self.w.quiet(20_000)
        except Fail:
            pass

    def has(self, cap: str) -> bool:
        return bool(self.ident.caps >> cat.ENUM_VALUES["capability"][cap] & 1)

    def input_id(self, name: str) -> int:
        return cat.ENUM_VALUES[f"{self.kind}_input"][name]

    def state_id(self, name: str) -> int:
        return cat.ENUM_VALUES[f"{self.kind}_state"][name]

    def new_game(self) -> None:
        self.w.command(msg.RESET(mode=0), expect="ACK")

    def apply(self, steps) -> Frame:
        """INPUT each step; all but the last must be ACKed. Returns the last reply."""
        r = None
        for i, (name, action, value) in enumerate(steps):
            r = self.w.command(msg.INPUT(input=self.input_id(name), action=ACTION[action], value=value))
            if i < len(steps) - 1:
                expect(r.msg.NAME == "ACK", f"INPUT {name} {action} {value} (preparing): {_show(r)}")
        return r

    # ---- the run ----
    def run(self) -> Report:
        """The whole run. Raises ConformError when the unit cannot even be identified."""
        t0 = time.perf_counter()
        try:
            self._start()
            if callable(self.scenarios):
                self.scenarios = self.scenarios(self.kind)
            self._protocol()
            self._finish_protocol()
            if self.scenarios is not None:
                self._scenarios()
        except LinkClosed as exc:
            self.report.aborted = str(exc)
        finally:
            self.report.wall_s = time.perf_counter() - t0
            times = sorted(self.w.reply_times_us)
            if times:
                self.report.stats = {"commands": len(self.w.sent), "round_trip_us_p50": times[len(times) // 2],
                                     "round_trip_us_max": times[-1]}
        return self.report

    def _start(self) -> None:
        w = self.w
        w.link.write(b"\x00")
        seq = w.send(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR))
        r = w.reply(seq, 2 * REPLY_TIMEOUT_US)
        if r is None:
            raise ConformError(f"{self.link.url}: no answer to HELLO within {2 * REPLY_TIMEOUT_US // 1000} ms: "
                               f"is it a unit, and is it running? (`unohil ports` probes what is attached)")
        if r.msg.NAME != "IDENTITY":
            raise ConformError(f"{self.link.url}: HELLO answered with {_show(r)}, not IDENTITY")
        kind = KIND_NAMES.get(r.msg.kind)
        if kind not in RECIPES:
            raise ConformError(f"{self.link.url}: IDENTITY.kind {r.msg.kind} is not a unit kind of protocol "
                               f"{cat.MAJOR}.{cat.MINOR}")
        self.kind, self.ident, self.recipe = kind, r.msg, RECIPES[kind]
        # start from a power-on state: configuration at defaults, nothing pending
        self.check("4.9", "RESET reboot: ACK, then BOOT(event_seq 0, header seq 0, reset_command), new boot_id",
                   self._reboot)
        self.report.identity = self.ident._asdict() | {"kind_name": kind}

    def _reboot(self):
        w = self.w
        old = self.ident.boot_id
        seq = w.send(msg.RESET(mode=1))
        n = len(w.frames)
        r = w.reply(seq)
        expect(r is not None, "no reply to RESET reboot")
        expect(r.msg.NAME == "ACK" and r.msg.value == 0, f"RESET reboot answered {_show(r)}, expected ACK 0")
        boot = w.wait(lambda f: f.msg.NAME == "BOOT", 3 * REPLY_TIMEOUT_US, n)
        expect(boot is not None, "no BOOT event after RESET reboot")
        # later checks compare against this boot, whatever this one finds wrong with it
        ident = w.command(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), expect="IDENTITY").msg
        self.ident, self.boot_seed = ident, ident.seed
        if not w.origin:
            w.origin, w.origin_errors = w.frames.index(boot), len(w.stream_errors)
        expect(w.frames.index(boot) > w.frames.index(r), "BOOT came before the ACK of RESET reboot")
        expect(boot.seq == 0 and boot.msg.event_seq == 0,
               f"BOOT has header seq {boot.seq} and event_seq {boot.msg.event_seq}, expected 0 and 0")
        expect(boot.msg.reason == cat.ENUM_VALUES["boot_reason"]["reset_command"],
               f"BOOT reason {boot.msg.reason}, expected reset_command (1)")
        expect(boot.msg.boot_id not in (0, old), f"boot_id {boot.msg.boot_id:#010x} after the reboot "
                                                  f"(before {old:#010x}): must be new and non-zero")
        expect(ident.boot_id == boot.msg.boot_id, "IDENTITY.boot_id differs from the BOOT event's")

    def _protocol(self) -> None:
        c = self.check
        # 4.2
        c("4.2", "IDENTITY fields: kind, protocol version, catalog_crc, boot_id, caps, capacities", self._identity)
        c("4.2", "HELLO with another host_major: NAK bad_version, detail = device major", self._hello_version)
        c("4.2", "a second HELLO answers the same boot_id (no session state)", self._hello_again)
        c("4.2", "a frame of a newer minor with a longer payload is accepted, extra bytes ignored", self._newer_minor)
        # 2
        c("2", "leading and doubled 0x00 delimiters are ignored", self._empty_frames)
        c("2", "a frame written one byte at a time is answered", self._byte_at_a_time)
        c("2", "bad CRC: unattributed NAK bad_crc, the command is not acted on", self._bad_crc)
        c("2", "more than 63 bytes without a delimiter: one unattributed NAK frame_too_long", self._too_long)
        c("2", "COBS errors and too-short frames: no answer, next frame answered", self._noise)
        c("2", "resync: garbage or a partial frame, a delimiter, then a frame that is answered", self._resync)
        c("2", "header major version 2: NAK bad_version with seq and type, detail 1", self._header_version)
        c("2", "unknown type, a reply id, an event id: NAK unknown_type with seq and type", self._unknown_type)
        c("2", "every command one byte too long and one byte short: NAK bad_length", self._bad_length)
        # 4.3
        c("4.3", "each command gets its typed reply, cmd_seq echoed", self._typed_replies)
        c("4.3", "three commands in one write: three replies in order", self._batch)
        c("4.3", "INPUT: ACK (value 0) before its INPUT_SEEN (source host)", self._input_ack_first)
        c("4.3", "INPUT of an unknown input or action: NAK bad_value, no INPUT_SEEN", self._input_unknown)
        c("4.3", "INPUT refused by the unit: NAK wrong_state (detail = state), then INPUT_SEEN refused",
          self._input_refused)
        c("4.3", "INPUT refused by the unit as bad_value: NAK bad_value, then INPUT_SEEN refused",
          self._input_refused_value)
        c("4.3", "commands without their capability: NAK unsupported", self._unsupported)
        # 4.7
        c("4.7", "CONFIG_GET of every parameter: its default after a boot", self._config_defaults)
        c("4.7", "CONFIG_SET at min and max accepted (or bad_value by a cross rule), outside: bad_value",
          self._config_ranges)
        c("4.7", "unknown parameter and another kind's parameter: NAK unknown_param", self._config_unknown)
        c("4.7", "CONFIG_SET outside the idle states: NAK wrong_state, detail = state, before bad_value",
          self._config_busy)
        c("4.7", "rng_seed set is reported in IDENTITY.seed; configuration survives RESET new_game",
          self._config_seed)
        # 4.8
        c("4.8", "INJECT: stimulus ids count up; INPUT_SEEN injected at exactly at_us", self._inject)
        c("4.8", "INJECT in the past, at now, 2^31 us ahead: NAK too_late", self._inject_too_late)
        c("4.8", "INJECT of an unknown input or action: NAK bad_value (before too_late)", self._inject_bad_value)
        c("4.8", "INJECT beyond inject_queue pending: NAK queue_full; INJECT_CANCEL drops them all",
          self._inject_queue)
        # 4.9
        c("4.9", "RESET of an unknown mode: NAK bad_value", self._reset_bad_mode)
        c("4.9", "RESET new_game: ACK, then STATE(power-on state, previous); stimuli kept", self._reset_new_game)
        # 4.5
        c("4.5", "EVENT_RESEND returns the events asked for: same payload, same header time", self._resend)
        c("4.5", "EVENT_RESEND of count 0 and of events not yet sent: ACK 0", self._resend_nothing)
        c("4.5", "EVENT_RESEND beyond the buffer: the newest event_buffer events at least", self._resend_buffer)
        c("4.5", "STATUS.next_event_seq follows the last event", self._next_event_seq)
        # 4.6
        c("4.6", "TIME_SYNC echoes t1, t2 <= t3 = header time, turnaround under 50 ms", self._time_sync)
        c("4.6", "device time runs at host rate (within 1%) and never goes back", self._clock_rate)
        # 10
        from .usb_link import UsbLink
        if isinstance(self.link, UsbLink):
            c("10", "USB iSerialNumber is IDENTITY.serial as 8 upper-case hex digits", self._usb_serial)

    def _finish_protocol(self) -> None:
        self.check("4.9", "RESET reboot at the end: drops pending stimuli, restores defaults, stimulus id 1",
                   self._reboot_restores)
        self.w.quiet()
        c = self.check
        c("2", "every frame from the device decodes (no CRC, COBS or length errors)", self._stream_clean)
        c("3", "header seq counts every device frame without a gap", self._header_seq)
        c("3", "device time in replies never goes back within a boot", self._reply_times)
        c("4.3", "every command got exactly one reply, of its type, naming its cmd_seq and cmd_type",
          self._one_reply_each)
        c("4.3", "replies come in the order of their commands", self._reply_order)
        c("4.5", "event_seq counts every new event without a gap", self._event_seq)

    # ---- 4.2 ----
    def _identity(self):
        i = self.ident
        expect(i.proto_major == cat.MAJOR, f"proto_major {i.proto_major}, expected {cat.MAJOR}")
        if i.proto_minor == cat.MINOR:
            expect(i.catalog_crc == cat.CATALOG_CRC,
                   f"catalog_crc {i.catalog_crc:#06x}, protocol {cat.MAJOR}.{cat.MINOR} has {cat.CATALOG_CRC:#06x}")
            known = (1 << len(cat.ENUM_VALUES["capability"])) - 1
            expect(i.caps & ~known == 0, f"caps {i.caps:#06x} has bits that protocol 1.0 does not define")
        expect(i.boot_id != 0, "boot_id is 0")
        expect(i.event_buffer >= cat.EVENT_BUFFER, f"event_buffer {i.event_buffer} < {cat.EVENT_BUFFER}")
        expect(i.inject_queue >= 1, "inject_queue is 0")
        k = self.kind
        if k == "showdown":
            expect(i.players == 2 and i.card_capacity >= 1, f"showdown: players {i.players} (expected 2), "
                                                             f"card_capacity {i.card_capacity} (expected >= 1)")
        elif k == "flash":
            expect(i.card_capacity == 0 and 2 <= i.players <= 8,
                   f"flash: card_capacity {i.card_capacity} (expected 0), players {i.players} (expected 2..8)")
        else:
            expect(i.players == 0 and i.card_capacity >= 1, f"launcher: players {i.players} (expected 0), "
                                                             f"card_capacity {i.card_capacity} (expected >= 1)")
        st = self.w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(st.boot_id == i.boot_id, "STATUS.boot_id differs from IDENTITY.boot_id")
        return f"{k}, protocol {i.proto_major}.{i.proto_minor}, firmware {i.fw_major}.{i.fw_minor}.{i.fw_patch}, " \
               f"serial {i.serial}, caps {i.caps:#06x}"

    def _hello_version(self):
        m = msg.HELLO(host_major=cat.MAJOR + 1, host_minor=0)
        self.w.nak(m, "bad_version", cat.MAJOR)

    def _hello_again(self):
        r = self.w.command(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), expect="IDENTITY")
        expect(r.msg.boot_id == self.ident.boot_id, "boot_id changed between two HELLOs")

    def _newer_minor(self):
        w = self.w
        newer = (cat.MAJOR << 4) | min(15, cat.MINOR + 1)
        seq = w.next_seq()
        w.send_raw(raw_frame(msg.HELLO.ID, bytes([cat.MAJOR, cat.MINOR, 0x7E]), seq, newer), {seq: ("HELLO", 1)})
        r = w.reply(seq)
        expect(r is not None, "no reply to a HELLO of minor version +1 with one extra payload byte")
        expect(r.msg.NAME == "IDENTITY", f"HELLO of a newer minor with an extra byte answered {_show(r)}, "
                                         f"expected IDENTITY (SPEC 4.2: accept, ignore the extra bytes)")
        seq = w.next_seq()
        w.send_raw(raw_frame(msg.STATUS_GET.ID, b"\x01\x02", seq, newer), {seq: ("STATUS_GET", 5)})
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "STATUS", "STATUS_GET of a newer minor with 2 extra bytes: "
                                                         f"{_show(r) if r else 'no reply'}, expected STATUS")

    # ---- 2 ----
    def _empty_frames(self):
        w = self.w
        seq = w.next_seq()
        n = len(w.frames)
        w.send_raw(b"\x00\x00\x00" + encode(msg.STATUS_GET(), seq, 0) + b"\x00\x00", {seq: ("STATUS_GET", 5)})
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "STATUS", "no STATUS for a STATUS_GET between empty frames")
        extra = [f for f in w.quiet() + w.frames[n:] if f.msg.NAME == "NAK"]
        expect(not extra, f"empty frames were answered: {', '.join(_show(f) for f in extra)}")

    def _byte_at_a_time(self):
        w = self.w
        seq = w.next_seq()
        w.sent[seq] = ("CONFIG_GET", msg.CONFIG_GET.ID)
        for b in encode(msg.CONFIG_GET(param=cat.PARAMS_BY_NAME["rng_seed"].id), seq, 0):
            w.link.write(bytes([b]))
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "CONFIG_VALUE",
               f"a CONFIG_GET written byte by byte: {_show(r) if r else 'no reply'}")

    def _bad_crc(self):
        w = self.w
        seq = w.next_seq()
        n_un = len(w.unattributed)
        w.send_raw(raw_frame(msg.RESET.ID, b"\x00", seq, bad_crc=True))
        probe = w.command(msg.STATUS_GET(), expect="STATUS")
        w.quiet()
        naks = w.unattributed[n_un:]
        expect(len(naks) == 1, f"{len(naks)} unattributed NAKs for one bad-CRC frame, expected 1")
        expect_nak(naks[0], 0xFF, 0xFFFF, "bad_crc")
        expect(naks[0].host_us <= probe.host_us and w.frames.index(naks[0]) < w.frames.index(probe),
               "the NAK bad_crc came after the reply to the next command")
        expect(seq not in w.replies, f"a frame with a bad CRC was answered as seq {seq}")

    def _too_long(self):
        w = self.w
        n_un = len(w.unattributed)
        w.send_raw(b"\x00" + bytes([0x41]) * 100 + b"\x00")
        w.command(msg.STATUS_GET(), expect="STATUS")
        w.quiet()
        naks = w.unattributed[n_un:]
        expect(len(naks) == 1, f"{len(naks)} NAKs for one 100-byte run without delimiter, expected exactly 1")
        expect_nak(naks[0], 0xFF, 0xFFFF, "frame_too_long")

    def _noise(self):
        w = self.w
        n = len(w.frames)
        cobs_error = bytes([0x09, 0x01, 0x02]) + b"\x00"          # a code byte pointing past the end
        short = cobs_encode(bytes([0x10, 0x05, 0x01, 0x00, 0x07])) + b"\x00"   # 5 decoded bytes < 10
        w.send_raw(cobs_error + short)
        r = w.command(msg.STATUS_GET(), expect="STATUS")
        w.quiet()
        other = [f for f in w.frames[n:] if f is not r and f.msg.KIND == "reply"]
        expect(not other, f"line noise was answered: {', '.join(_show(f) for f in other)}")

    def _resync(self):
        w = self.w
        garbage = bytes([0x55, 0xAA, 0x13, 0x37] * 5)
        seq = w.next_seq()
        w.send_raw(garbage + b"\x00" + encode(msg.STATUS_GET(), seq, 0), {seq: ("STATUS_GET", 5)})
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "STATUS", "no STATUS for a STATUS_GET after garbage + delimiter")
        partial = encode(msg.CONFIG_GET(param=1), w.next_seq(), 0)[:7]
        seq = w.next_seq()
        w.send_raw(partial + b"\x00" + encode(msg.STATUS_GET(), seq, 0), {seq: ("STATUS_GET", 5)})
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "STATUS", "no STATUS for a STATUS_GET after a partial frame "
                                                         "and a delimiter")

    def _header_version(self):
        w = self.w
        seq = w.next_seq()
        w.send_raw(raw_frame(msg.STATUS_GET.ID, b"", seq, version=0x20), {seq: ("STATUS_GET", msg.STATUS_GET.ID)})
        r = w.reply(seq)
        expect(r is not None, "no answer to a frame of protocol 2.0")
        expect_nak(r, msg.STATUS_GET.ID, seq, "bad_version", cat.MAJOR, "STATUS_GET with header version 0x20")

    def _unknown_type(self):
        w = self.w
        for type_id, what in ((0x3F, "unused command id 0x3F"), (msg.ACK.ID, "ACK (a reply) sent to the device"),
                              (msg.BOOT.ID, "BOOT (an event) sent to the device"), (0xEE, "unknown id 0xEE")):
            size = cat.BY_ID[type_id].size if type_id in cat.BY_ID else 0
            seq = w.next_seq()
            w.send_raw(raw_frame(type_id, bytes(size), seq), {seq: (what, type_id)})
            r = w.reply(seq)
            expect(r is not None, f"no answer to {what}")
            expect_nak(r, type_id, seq, "unknown_type", 0, what)

    def _bad_length(self):
        w = self.w
        done = []
        for mdef in cat.MESSAGES:
            if mdef.kind != "command":
                continue
            cases = [bytes(mdef.size + 1)] + ([bytes(mdef.size - 1)] if mdef.size else [])
            for payload in cases:
                seq = w.next_seq()
                w.send_raw(raw_frame(mdef.id, payload, seq), {seq: (mdef.name, mdef.id)})
                r = w.reply(seq)
                what = f"{mdef.name} with {len(payload)} payload bytes (expects {mdef.size})"
                expect(r is not None, f"no answer to {what}")
                expect_nak(r, mdef.id, seq, "bad_length", 0, what)
                done.append(what)
        # none of them was acted on: a RESET of the wrong length must not have reset anything
        return f"{len(done)} frames"

    # ---- 4.3 ----
    def _typed_replies(self):
        w = self.w
        k = self.recipe
        cases = [msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), msg.TIME_SYNC(t1_host_us=1),
                 msg.CONFIG_GET(param=1), msg.CONFIG_SET(param=1, value=self.boot_seed), msg.STATUS_GET(),
                 msg.EVENT_RESEND(first_seq=0, count=0), msg.INJECT_CANCEL(), msg.RESET(mode=0)]
        if self.has("host_input"):
            name, action, value = k["report"]
            cases.append(msg.INPUT(input=self.input_id(name), action=ACTION[action], value=value))
        if self.has("test_mode"):
            name, action, value = k["report"]
            cases.append(msg.INJECT(at_us=devtime.wrap(self.w.last_dev_time() + 5_000_000), input=self.input_id(name),
                                    action=ACTION[action], value=value))
        for m in cases:
            want = REPLY_OF[m.NAME]
            r = w.command(m)
            expect(r.msg.NAME == want, f"{m.NAME} answered {_show(r)}, expected {want}")
            if want == "ACK":
                expect(r.msg.cmd_type == m.ID, f"ACK of {m.NAME} names type {r.msg.cmd_type:#04x}")
        w.command(msg.INJECT_CANCEL(), expect="ACK")
        self.new_game()

    def _batch(self):
        w = self.w
        seqs = [w.next_seq() for _ in range(3)]
        cmds = [msg.STATUS_GET(), msg.CONFIG_GET(param=1), msg.TIME_SYNC(t1_host_us=7)]
        w.send_raw(b"".join(encode(m, s, 0) for m, s in zip(cmds, seqs)),
                   {s: (m.NAME, m.ID) for m, s in zip(cmds, seqs)})
        rs = [w.reply(s) for s in seqs]
        expect(all(rs), "not every command of a three-command write was answered")
        idx = [w.frames.index(r) for r in rs]
        expect(idx == sorted(idx), "the replies to three commands in one write came out of order")
        expect([r.msg.NAME for r in rs] == ["STATUS", "CONFIG_VALUE", "TIME_SYNC_REPLY"],
               f"replies {[_show(r) for r in rs]}")

    def _needs(self, cap: str):
        return None if self.has(cap) else ("skip", f"the unit does not have capability {cap}")

    def _input_ack_first(self):
        if (s := self._needs("host_input")):
            return s
        w = self.w
        name, action, value = self.recipe["report"]
        n = len(w.frames)
        r = w.command(msg.INPUT(input=self.input_id(name), action=ACTION[action], value=value), expect="ACK")
        expect(r.msg.value == 0, f"INPUT's ACK value {r.msg.value}, expected 0")
        seen = w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["host"], REPLY_TIMEOUT_US, n)
        expect(seen is not None, "no INPUT_SEEN (source host) after an INPUT")
        expect(w.frames.index(seen) > w.frames.index(r), "INPUT_SEEN came before the INPUT's ACK")
        expect(seen.msg.input == self.input_id(name) and seen.msg.action == ACTION[action],
               "INPUT_SEEN names another input or action")
        expect(devtime.diff(r.time_us, seen.time_us) >= 0, "INPUT_SEEN is later than the ACK that came first")

    def _input_unknown(self):
        if (s := self._needs("host_input")):
            return s
        w = self.w
        n_inputs = len(cat.ENUM_VALUES[f"{self.kind}_input"])
        n = len(w.frames)
        w.nak(msg.INPUT(input=0xEE, action=1, value=0), "bad_value", 0)
        w.nak(msg.INPUT(input=n_inputs, action=1, value=0), "bad_value", 0)
        w.nak(msg.INPUT(input=0, action=2, value=0), "bad_value", 0)
        w.quiet()
        seen = [f for f in w.frames[n:] if f.msg.NAME == "INPUT_SEEN"]
        expect(not seen, f"{len(seen)} INPUT_SEEN for inputs the unit does not have")

    def _refusal(self, steps, error: str):
        w = self.w
        self.new_game()
        n = len(w.frames)
        r = self.apply(steps)
        state = w.command(msg.STATUS_GET(), expect="STATUS").msg.state
        expect_nak(r, msg.INPUT.ID, r.msg.cmd_seq, error, state if error == "wrong_state" else 0,
                   f"INPUT {' '.join(map(str, steps[-1]))}")
        last = self.input_id(steps[-1][0])
        seen = w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.input == last
                      and f.msg.source == SOURCE["host"] and f.msg.disposition == DISPOSITION["refused"],
                      REPLY_TIMEOUT_US, n)
        expect(seen is not None, "no INPUT_SEEN (refused) after the NAK")
        expect(w.frames.index(seen) > w.frames.index(r), "the refused INPUT_SEEN came before the NAK")
        expect(seen.msg.detail == ERR[error], f"INPUT_SEEN.detail {seen.msg.detail}, expected {ERR[error]} ({error})")
        self.new_game()

    def _input_refused(self):
        if (s := self._needs("host_input")):
            return s
        self._refusal(self.recipe["refused"], "wrong_state")

    def _input_refused_value(self):
        if (s := self._needs("host_input")):
            return s
        if not self.recipe["refused_value"]:
            return ("skip", f"no bad_value refusal in the {self.kind} state table to provoke")
        self._refusal(self.recipe["refused_value"], "bad_value")

    def _unsupported(self):
        needs = {"test_mode": [msg.INJECT(at_us=1, input=0, action=1, value=0), msg.INJECT_CANCEL()],
                 "host_input": [msg.INPUT(input=0, action=1, value=0)], "time_sync": [msg.TIME_SYNC(t1_host_us=1)],
                 "event_resend": [msg.EVENT_RESEND(first_seq=0, count=1)],
                 "config_set": [msg.CONFIG_SET(param=1, value=1)]}
        missing = [c for c in needs if not self.has(c)]
        if not missing:
            return ("skip", "the unit has every capability")
        for cap in missing:
            for m in needs[cap]:
                self.w.nak(m, "unsupported", 0)
        return f"checked: {', '.join(missing)}"

    # ---- 4.7 ----
    def _params(self):
        return cat.params_for(self.kind)

    def _config_defaults(self):
        w = self.w
        bad = []
        for p in self._params():
            r = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE")
            want = self.boot_seed if p.name == "rng_seed" else p.default
            expect(r.msg.param == p.id, f"CONFIG_VALUE for {p.name} names param {r.msg.param:#04x}")
            if r.msg.value != want:
                bad.append(f"{p.name} = {r.msg.value}, default {want}")
        expect(not bad, "; ".join(bad))

    def _config_ranges(self):
        if (s := self._needs("config_set")):
            return s
        w = self.w
        config = {p.name: (self.boot_seed if p.name == "rng_seed" else p.default) for p in self._params()}
        problems = []
        for p in self._params():
            tries = [(p.min, True), (p.max, True)]
            if p.min > 0:
                tries.append((p.min - 1, False))
            if p.max < 0xFFFFFFFF:
                tries.append((p.max + 1, False))
            for value, in_range in tries:
                ok = in_range and cross_rules_ok(self.kind, dict(config, **{p.name: value}))
                r = w.command(msg.CONFIG_SET(param=p.id, value=value))
                if ok:
                    if r.msg.NAME != "CONFIG_VALUE" or r.msg.value != value:
                        problems.append(f"{p.name} = {value}: {_show(r)}, expected CONFIG_VALUE {value}")
                elif not (r.msg.NAME == "NAK" and r.msg.error == ERR["bad_value"]):
                    problems.append(f"{p.name} = {value}: {_show(r)}, expected NAK bad_value")
                back = w.command(msg.CONFIG_SET(param=p.id, value=config[p.name]))
                if back.msg.NAME != "CONFIG_VALUE":
                    problems.append(f"{p.name} back to {config[p.name]}: {_show(back)}")
        expect(not problems, "; ".join(problems[:6]) + (f" (+{len(problems) - 6} more)" if len(problems) > 6 else ""))
        return f"{len(self._params())} parameters"

    def _config_unknown(self):
        w = self.w
        mine = {p.id for p in self._params()}
        foreign = next((p for p in cat.PARAMS if p.id not in mine), None)
        for pid in (0xEE, foreign.id if foreign else 0xEF):
            w.nak(msg.CONFIG_GET(param=pid), "unknown_param", 0)
            w.nak(msg.CONFIG_SET(param=pid, value=0xFFFFFFFF), "unknown_param", 0)

    def _config_busy(self):
        if (s := self._needs("config_set")):
            return s
        if (s := self._needs("host_input")):
            return s
        w = self.w
        self.new_game()
        for name, value in self.recipe["busy_config"].items():
            w.command(msg.CONFIG_SET(param=cat.PARAMS_BY_NAME[name].id, value=value), expect="CONFIG_VALUE")
        try:
            r = self.apply(self.recipe["busy"])
            expect(r.msg.NAME == "ACK", f"the last input to leave the idle states answered {_show(r)}")
            state = w.command(msg.STATUS_GET(), expect="STATUS").msg.state
            p = next(p for p in self._params() if p.name != "rng_seed")
            w.nak(msg.CONFIG_SET(param=p.id, value=p.default), "wrong_state", state)
            if p.max < 0xFFFFFFFF:
                w.nak(msg.CONFIG_SET(param=p.id, value=p.max + 1), "wrong_state", state)   # precedence
            r = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE")     # reading is always allowed
        finally:
            self.new_game()
            for name in self.recipe["busy_config"]:
                prm = cat.PARAMS_BY_NAME[name]
                w.command(msg.CONFIG_SET(param=prm.id, value=prm.default))

    def _config_seed(self):
        if (s := self._needs("config_set")):
            return s
        w = self.w
        seed = 0x0BADCAFE
        w.command(msg.CONFIG_SET(param=1, value=seed), expect="CONFIG_VALUE")
        ident = w.command(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), expect="IDENTITY").msg
        expect(ident.seed == seed, f"IDENTITY.seed {ident.seed} after setting rng_seed {seed}")
        self.new_game()
        r = w.command(msg.CONFIG_GET(param=1), expect="CONFIG_VALUE")
        expect(r.msg.value == seed, f"rng_seed {r.msg.value} after RESET new_game, expected {seed} (kept)")
        w.command(msg.CONFIG_SET(param=1, value=self.boot_seed), expect="CONFIG_VALUE")

    # ---- 4.8 ----
    def _inject(self):
        if (s := self._needs("test_mode")):
            return s
        w = self.w
        self.new_game()
        name, action, value = self.recipe["stimulus"]
        inp = self.input_id(name)
        at = devtime.wrap(w.last_dev_time() + 200_000)
        n = len(w.frames)
        try:
            first = w.command(msg.INJECT(at_us=at, input=inp, action=ACTION[action], value=value), expect="ACK")
            second = w.command(msg.INJECT(at_us=devtime.wrap(at + 1000), input=inp, action=ACTION["release"],
                                          value=0), expect="ACK")
            expect(first.msg.value != 0, "stimulus id 0")
            expect(second.msg.value == first.msg.value % 0xFFFF + 1,
                   f"stimulus ids {first.msg.value} then {second.msg.value}: expected +1")
            seen = w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["injected"],
                          2 * REPLY_TIMEOUT_US, n)
            expect(seen is not None, "no INPUT_SEEN (source injected) within 1 s after the stimulus was due")
            expect(seen.time_us == at, f"INPUT_SEEN of the stimulus at {seen.time_us}, scheduled at {at} "
                                       f"({devtime.diff(seen.time_us, at):+d} us)")
            expect(seen.msg.input == inp and seen.msg.action == ACTION[action], "INPUT_SEEN names another input")
            w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["injected"]
                   and f.msg.action == ACTION["release"], REPLY_TIMEOUT_US, n)
        finally:
            self._clean()

    def _clean(self) -> None:
        """Leave the unit as a check found it: no stimuli pending, a new game."""
        self.w.command(msg.INJECT_CANCEL())
        self.new_game()

    def _inject_too_late(self):
        if (s := self._needs("test_mode")):
            return s
        w = self.w
        name, action, value = self.recipe["report"]
        inp = self.input_id(name)
        now = w.last_dev_time()
        for at, what in ((now - 1000, "1 ms in the past"), (now, "at the last reply's time"),
                         (now + (1 << 31) + 1_000_000, "2^31 us + 1 s ahead")):
            w.nak(msg.INJECT(at_us=devtime.wrap(at), input=inp, action=ACTION[action], value=value), "too_late", 0)
        st = w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(st.pending_injects == 0, f"{st.pending_injects} stimuli pending after refused INJECTs")

    def _inject_bad_value(self):
        if (s := self._needs("test_mode")):
            return s
        w = self.w
        past = devtime.wrap(w.last_dev_time() - 1000)
        w.nak(msg.INJECT(at_us=past, input=0xEE, action=1, value=0), "bad_value", 0)
        w.nak(msg.INJECT(at_us=past, input=0, action=7, value=0), "bad_value", 0)

    def _inject_queue(self):
        if (s := self._needs("test_mode")):
            return s
        w = self.w
        name, action, value = self.recipe["report"]
        inp = self.input_id(name)
        q = self.ident.inject_queue
        far = w.last_dev_time() + 600_000_000
        ids = []
        try:
            self._fill_queue(q, far, inp, action, value, ids)
        finally:
            w.command(msg.INJECT_CANCEL())

    def _fill_queue(self, q, far, inp, action, value, ids):
        w = self.w
        for i in range(q):
            ids.append(w.command(msg.INJECT(at_us=devtime.wrap(far + i), input=inp, action=ACTION[action],
                                            value=value), expect="ACK").msg.value)
        expect(all(b == a % 0xFFFF + 1 for a, b in zip(ids, ids[1:])), f"stimulus ids not consecutive: {ids}")
        st = w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(st.pending_injects == q, f"STATUS.pending_injects {st.pending_injects}, expected {q}")
        w.nak(msg.INJECT(at_us=devtime.wrap(far + q), input=inp, action=ACTION[action], value=value), "queue_full", 0)
        # precedence: too_late before queue_full
        w.nak(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() - 10), input=inp, action=ACTION[action], value=value),
              "too_late", 0)
        r = w.command(msg.INJECT_CANCEL(), expect="ACK")
        expect(r.msg.value == q, f"INJECT_CANCEL dropped {r.msg.value}, expected {q}")
        st = w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(st.pending_injects == 0, f"{st.pending_injects} stimuli pending after INJECT_CANCEL")
        r = w.command(msg.INJECT_CANCEL(), expect="ACK")
        expect(r.msg.value == 0, f"a second INJECT_CANCEL dropped {r.msg.value}")

    # ---- 4.9 ----
    def _reset_bad_mode(self):
        self.w.nak(msg.RESET(mode=7), "bad_value", 0)

    def _reset_new_game(self):
        w = self.w
        far = devtime.wrap(w.last_dev_time() + 600_000_000)
        name, action, value = self.recipe["report"]
        if self.has("test_mode"):
            w.command(msg.INJECT(at_us=far, input=self.input_id(name), action=ACTION[action], value=value),
                      expect="ACK")
        st0 = w.command(msg.STATUS_GET(), expect="STATUS").msg
        n = len(w.frames)
        r = w.command(msg.RESET(mode=0), expect="ACK")
        expect(r.msg.value == 0, f"RESET's ACK value {r.msg.value}")
        state = w.wait(lambda f: f.msg.NAME == "STATE", REPLY_TIMEOUT_US, n)
        expect(state is not None, "no STATE event after RESET new_game")
        expect(w.frames.index(state) > w.frames.index(r), "STATE came before the ACK of RESET new_game")
        want = self.state_id(POWER_ON[self.kind])
        expect(state.msg.state == want and state.msg.previous == st0.state,
               f"STATE({state.msg.state}, previous {state.msg.previous}), expected STATE({want}, previous {st0.state})")
        st = w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(st.boot_id == self.ident.boot_id, "RESET new_game changed the boot id")
        if self.has("test_mode"):
            expect(st.pending_injects == 1, f"RESET new_game left {st.pending_injects} stimuli pending, expected 1")
            w.command(msg.INJECT_CANCEL(), expect="ACK")

    def _reboot_restores(self):
        w = self.w
        if self.has("config_set"):
            p = next(p for p in self._params() if p.name != "rng_seed")
            value = p.max if cross_rules_ok(self.kind, {q.name: q.default for q in self._params()} | {p.name: p.max}) \
                else p.min
            w.command(msg.CONFIG_SET(param=p.id, value=value), expect="CONFIG_VALUE")
        if self.has("test_mode"):
            name, action, value = self.recipe["report"]
            w.command(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() + 600_000_000), input=self.input_id(name),
                                 action=ACTION[action], value=value), expect="ACK")
        self._reboot()
        st = w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(st.pending_injects == 0, f"{st.pending_injects} stimuli survived RESET reboot")
        if self.has("config_set"):
            r = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE")
            expect(r.msg.value == p.default, f"{p.name} = {r.msg.value} after RESET reboot, default {p.default}")
        if self.has("test_mode"):
            name, action, value = self.recipe["report"]
            r = w.command(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() + 600_000_000), input=self.input_id(name),
                                     action=ACTION[action], value=value), expect="ACK")
            expect(r.msg.value == 1, f"first stimulus id after a reboot is {r.msg.value}, expected 1")
            w.command(msg.INJECT_CANCEL(), expect="ACK")

    # ---- 4.5 ----
    def _originals(self) -> list[Frame]:
        """Events of the current boot as first sent (not resent copies)."""
        boot = max((i for i, f in enumerate(self.w.frames) if f.msg.NAME == "BOOT"), default=0)
        return [f for f in self.w.frames[boot:] if f.msg.KIND == "event" and id(f) not in self.w.resent]

    def _make_events(self, n: int) -> None:
        w = self.w
        name, action, value = self.recipe["report"]
        m = msg.INPUT(input=self.input_id(name), action=ACTION[action], value=value)
        for _ in range(n):
            w.command(m)
        w.quiet(20_000)

    def _resend(self):
        if (s := self._needs("event_resend")):
            return s
        if not self.has("host_input"):
            return ("skip", "needs host_input to make events")
        w = self.w
        self._make_events(6)
        orig = self._originals()
        expect(len(orig) >= 6, f"only {len(orig)} events to resend")
        want = orig[-5:]
        first = want[0].msg.event_seq
        seq = w.send(msg.EVENT_RESEND(first_seq=first, count=5))
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "ACK", f"EVENT_RESEND answered {_show(r) if r else 'nothing'}")
        expect(r.msg.value == 5, f"EVENT_RESEND of 5 buffered events: ACK value {r.msg.value}")
        i = w.frames.index(r)
        deadline = w.link.now_us() + REPLY_TIMEOUT_US
        while len([f for f in w.frames[i + 1:] if f.msg.KIND == "event"]) < 5 and w.link.now_us() < deadline:
            w.pump(deadline)
        got = [f for f in w.frames[i + 1:] if f.msg.KIND == "event"][:5]
        expect(len(got) == 5, f"{len(got)} events followed the ACK of EVENT_RESEND, expected 5")
        for a, b in zip(want, got):
            expect(b.msg == a.msg, f"resent event_seq {b.msg.event_seq}: {b.msg} differs from the original {a.msg}")
            expect(b.time_us == a.time_us, f"resent event_seq {a.msg.event_seq} has time {b.time_us}, "
                                           f"originally {a.time_us}")
            expect(b.seq != a.seq, f"resent event_seq {a.msg.event_seq} reuses header seq {a.seq}")

    def _resend_nothing(self):
        if (s := self._needs("event_resend")):
            return s
        w = self.w
        r = w.command(msg.EVENT_RESEND(first_seq=0, count=0), expect="ACK")
        expect(r.msg.value == 0, f"EVENT_RESEND count 0: ACK value {r.msg.value}")
        nxt = w.command(msg.STATUS_GET(), expect="STATUS").msg.next_event_seq
        r = w.command(msg.EVENT_RESEND(first_seq=nxt, count=10), expect="ACK")
        expect(r.msg.value == 0, f"EVENT_RESEND of events not yet sent: ACK value {r.msg.value}")
        later = [f for f in w.quiet() if f.msg.KIND == "event" and id(f) in w.resent]
        expect(not later, f"{len(later)} events resent for ACK 0")

    def _resend_buffer(self):
        if (s := self._needs("event_resend")):
            return s
        if not self.has("host_input"):
            return ("skip", "needs host_input to make events")
        w = self.w
        buf = self.ident.event_buffer
        nxt = w.command(msg.STATUS_GET(), expect="STATUS").msg.next_event_seq
        if nxt < buf + 10:
            self._make_events(buf + 10 - nxt)
        nxt = w.command(msg.STATUS_GET(), expect="STATUS").msg.next_event_seq
        first = max(0, nxt - 255)
        seq = w.send(msg.EVENT_RESEND(first_seq=first, count=255))
        r = w.reply(seq)
        expect(r is not None and r.msg.NAME == "ACK", f"EVENT_RESEND({first}, 255) not ACKed")
        n = r.msg.value
        expect(buf <= n <= nxt - first, f"EVENT_RESEND({first}, 255) with {nxt} events sent: ACK value {n}, "
                                        f"expected {buf}..{nxt - first} (event_buffer {buf})")
        i = w.frames.index(r)
        deadline = w.link.now_us() + 2 * REPLY_TIMEOUT_US
        while len([f for f in w.frames[i + 1:] if f.msg.KIND == "event"]) < n and w.link.now_us() < deadline:
            w.pump(deadline)
        got = [f.msg.event_seq for f in w.frames[i + 1:] if f.msg.KIND == "event"][:n]
        expect(got == list(range(nxt - n, nxt)), f"resent event_seqs {got[:3]}..{got[-3:]}, expected the newest "
                                                 f"{n}: {nxt - n}..{nxt - 1}")

    def _next_event_seq(self):
        w = self.w
        w.quiet(20_000)
        orig = self._originals()
        st = w.command(msg.STATUS_GET(), expect="STATUS").msg
        expect(orig, "no events this boot")
        expect(st.next_event_seq == (orig[-1].msg.event_seq + 1) & 0xFFFF,
               f"STATUS.next_event_seq {st.next_event_seq}, last event_seq {orig[-1].msg.event_seq}")

    # ---- 4.6 ----
    def _sync_once(self, t1: int) -> tuple[Frame, int]:
        r = self.w.command(msg.TIME_SYNC(t1_host_us=t1), expect="TIME_SYNC_REPLY")
        return r, r.host_us

    def _time_sync(self):
        if (s := self._needs("time_sync")):
            return s
        w = self.w
        r, _ = self._sync_once(0x0123456789ABCDEF)
        expect(r.msg.t1_host_us == 0x0123456789ABCDEF, f"t1 echoed as {r.msg.t1_host_us:#x}")
        worst = 0
        prev_t3 = None
        for _ in range(8):
            t1 = w.link.now_us()
            r, t4 = self._sync_once(t1)
            m = r.msg
            expect(m.t1_host_us == t1, "t1 not echoed")
            turn = devtime.diff(m.t3_us, m.t2_us)
            expect(turn >= 0, f"t2 {m.t2_us} after t3 {m.t3_us}")
            expect(m.t3_us == r.time_us, f"t3 {m.t3_us} differs from the header time {r.time_us}")
            if prev_t3 is not None:
                expect(devtime.diff(m.t2_us, prev_t3) >= 0, "t2 of an exchange before t3 of the one before")
            prev_t3 = m.t3_us
            worst = max(worst, turn)
            self.syncs.append((t1, m.t2_us, m.t3_us, t4))
        expect(worst <= TURNAROUND_MAX_US, f"turnaround t3 - t2 up to {worst} us (at most {TURNAROUND_MAX_US})")
        return f"turnaround up to {worst} us"

    def _clock_rate(self):
        if (s := self._needs("time_sync")):
            return s
        w = self.w
        if not self.syncs:
            return ("skip", "no time sync exchanges")
        first = min(self.syncs[-8:], key=lambda s: s[3] - s[0])
        w.quiet(300_000)
        last = None
        for _ in range(4):
            t1 = w.link.now_us()
            r, t4 = self._sync_once(t1)
            if last is None or t4 - t1 < last[3] - last[0]:
                last = (t1, r.msg.t2_us, r.msg.t3_us, t4)
        host = (last[0] + last[3]) / 2 - (first[0] + first[3]) / 2
        dev = (devtime.diff(last[1], first[1]) + devtime.diff(last[2], first[2])) / 2
        slack = (first[3] - first[0]) + (last[3] - last[0])
        expect(host > 0 and dev > 0, f"device time went {dev:+.0f} us while host time went {host:+.0f} us")
        expect(abs(dev - host) <= 0.01 * host + slack,
               f"device time advanced {dev:.0f} us in {host:.0f} us of host time ({(dev / host - 1) * 1e6:+.0f} ppm)")
        return f"{(dev / host - 1) * 1e6:+.0f} ppm over {host / 1000:.0f} ms"

    # ---- 10 ----
    def _usb_serial(self):
        s = self.link.serial
        want = f"{self.ident.serial:08X}"
        expect(s == want, f"iSerialNumber {s!r}, IDENTITY.serial {self.ident.serial} = {want!r} (SHOULD, 10.1)")

    # ---- global ----
    def _stream_clean(self):
        errs = self.w.stream_errors[self.w.origin_errors:]
        expect(not errs, f"{len(errs)} bad frame(s) from the device: " + ", ".join(e.kind for e in errs[:5]))

    def _boots(self) -> list[list[Frame]]:
        """Device frames split at each BOOT (a boot restarts seqs and time)."""
        out, cur = [], []
        for f in self.w.frames[self.w.origin:]:
            if f.msg.NAME == "BOOT" and cur:
                out.append(cur)
                cur = []
            cur.append(f)
        out.append(cur)
        return out

    def _header_seq(self):
        bad = []
        for frames in self._boots():
            for a, b in zip(frames, frames[1:]):
                if b.seq != (a.seq + 1) & 0xFFFF:
                    bad.append(f"{a.msg.NAME} seq {a.seq} then {b.msg.NAME} seq {b.seq}")
        expect(not bad, f"{len(bad)} gap(s): " + "; ".join(bad[:3]))
        return f"{len(self.w.frames) - self.w.origin} frames"

    def _reply_times(self):
        bad = []
        for frames in self._boots():
            replies = [f for f in frames if f.msg.KIND == "reply"]
            for a, b in zip(replies, replies[1:]):
                if devtime.diff(b.time_us, a.time_us) < 0:
                    bad.append(f"{a.msg.NAME} at {a.time_us} then {b.msg.NAME} at {b.time_us}")
        expect(not bad, f"device time went back {len(bad)} time(s): " + "; ".join(bad[:3]))

    def _one_reply_each(self):
        w = self.w
        none, dup, wrong = [], [], []
        for seq, (name, type_id) in w.sent.items():
            rs = w.replies.get(seq, [])
            if not rs:
                none.append(f"{name} (seq {seq})")
                continue
            if len(rs) > 1:
                dup.append(f"{name} (seq {seq}): {', '.join(_show(r) for r in rs)}")
            r = rs[0]
            want = REPLY_OF.get(name)
            if r.msg.NAME == "NAK" or r.msg.NAME == "ACK":
                if r.msg.cmd_type != type_id:
                    wrong.append(f"{name} (seq {seq}): {r.msg.NAME} names type {r.msg.cmd_type:#04x}")
            if r.msg.NAME != "NAK" and want is not None and r.msg.NAME != want:
                wrong.append(f"{name} (seq {seq}) answered {r.msg.NAME}")
        stray = [f"{_show(rs[0])} for seq {s}" for s, rs in w.replies.items() if s not in w.sent]
        parts = []
        if none:
            parts.append(f"{len(none)} command(s) never answered: {', '.join(none[:4])}")
        if dup:
            parts.append(f"{len(dup)} answered more than once: {'; '.join(dup[:3])}")
        if wrong:
            parts.append(f"{len(wrong)} wrong: {'; '.join(wrong[:3])}")
        if stray:
            parts.append(f"{len(stray)} replies to commands never sent: {', '.join(stray[:3])}")
        expect(not parts, ". ".join(parts))
        return f"{len(w.sent)} commands"

    def _reply_order(self):
        w = self.w
        order = {s: i for i, s in enumerate(w.sent)}
        got = [order[f.msg.cmd_seq] for f in w.frames if f.msg.KIND == "reply" and f.msg.cmd_seq in order
               and w.replies[f.msg.cmd_seq][0] is f]
        bad = sum(1 for a, b in zip(got, got[1:]) if b < a)
        expect(bad == 0, f"{bad} reply(ies) came before the reply to an earlier command")

    def _event_seq(self):
        bad = []
        for frames in self._boots():
            evs = [f for f in frames if f.msg.KIND == "event" and id(f) not in self.w.resent]
            for a, b in zip(evs, evs[1:]):
                if b.msg.event_seq != (a.msg.event_seq + 1) & 0xFFFF:
                    bad.append(f"{a.msg.NAME} {a.msg.event_seq} then {b.msg.NAME} {b.msg.event_seq}")
        expect(not bad, f"{len(bad)} gap(s): " + "; ".join(bad[:3]))

    # ---- sections 7-9: the scenario library ----
    def _scenarios(self) -> None:
        from .driver import Driver
        from .runner import Runner
        section = KIND_SECTION[self.kind]
        mine = [s for s in self.scenarios if s.unit == self.kind]
        if not mine:
            self.report.checks.append(CheckResult(section, "scenario library", "skip",
                                                  f"no {self.kind} scenarios selected"))
            return
        self.w.quiet(20_000)
        drv = Driver(self.link)
        drv.hello(expect_kind=self.kind)
        if drv.has_cap("time_sync"):
            drv.sync_clock()
        runner = Runner(drv)
        for sc in mine:
            t0 = time.perf_counter()
            res = runner.run(sc)
            lines = []
            for r in res.races:
                if r.status != "pass":
                    lines.append(f"race {r.index}: {r.status}" + (f": {r.error}" if r.error else ""))
                    lines += [f"  {x}" for x in r.failures[:5]]
            status = {"pass": "pass", "skipped": "skip", "fail": "fail"}.get(res.status, "error")
            detail = res.error if status == "skip" else "\n".join(lines[:12])
            cr = CheckResult(section, f"{sc.name} ({sc.file}:{sc.line})", status, detail, time.perf_counter() - t0)
            self.report.checks.append(cr)
            if self.progress is not None:
                self.progress(cr)


# ---- outputs ----

def junit_xml(report: Report) -> str:
    import xml.etree.ElementTree as ET
    root = ET.Element("testsuites", name="unohil conform", tests=str(len(report.checks)),
                      failures=str(sum(1 for c in report.checks if c.status == "fail")),
                      errors=str(sum(1 for c in report.checks if c.status == "error") + (1 if report.aborted else 0)),
                      time=f"{report.wall_s:.3f}")
    for key, checks in report.sections():
        title = SECTIONS.get(key, key)
        suite = ET.SubElement(root, "testsuite", name=title, tests=str(len(checks)),
                              failures=str(sum(1 for c in checks if c.status == "fail")),
                              errors=str(sum(1 for c in checks if c.status == "error")),
                              skipped=str(sum(1 for c in checks if c.status == "skip")),
                              time=f"{sum(c.seconds for c in checks):.6f}")
        for c in checks:
            case = ET.SubElement(suite, "testcase", classname=f"conform.{title}", name=c.name, time=f"{c.seconds:.6f}")
            if c.status == "fail":
                ET.SubElement(case, "failure", message=c.detail.split("\n")[0]).text = c.detail
            elif c.status == "error":
                ET.SubElement(case, "error", message=c.detail.split("\n")[0]).text = c.detail
            elif c.status == "skip":
                ET.SubElement(case, "skipped", message=c.detail)
    if report.aborted:
        suite = ET.SubElement(root, "testsuite", name="connection", tests="1", errors="1")
        case = ET.SubElement(suite, "testcase", classname="conform.connection", name="link")
        ET.SubElement(case, "error", message=report.aborted).text = report.aborted
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def summary_table(report: Report):
    from rich.table import Table
    t = Table(title=f"conformance of {report.device}")
    for col in ("section", "checks", "passed", "failed", "skipped", "result"):
        t.add_column(col, justify="left" if col in ("section", "result") else "right", no_wrap=True)
    for key, checks in report.sections():
        failed = sum(1 for c in checks if c.status in ("fail", "error"))
        skipped = sum(1 for c in checks if c.status == "skip")
        passed = len(checks) - failed - skipped
        t.add_row(SECTIONS.get(key, key), str(len(checks)), str(passed), str(failed), str(skipped),
                  "[red]FAIL[/]" if failed else "[green]pass[/]")
    return t


def default_scenario_paths(kind: str) -> list[str]:
    here = Path("fixtures/scenarios") / kind
    if here.is_dir():
        return [str(here)]
    packaged = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios" / kind
    return [str(packaged)] if packaged.is_dir() else []


def run(link, *, scenarios: list | None = None, progress=None) -> Report:
    return Conformance(link, scenarios=scenarios, progress=progress).run()


# ---- the command ----

def add_parser(sub) -> None:
    p = sub.add_parser("conform", help="firmware acceptance: protocol conformance by SPEC section, then the "
                                       "scenario library of the unit's kind")
    p.add_argument("--device", required=True, metavar="URL")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (one test suite per SPEC section)")
    p.add_argument("--scenarios", nargs="+", metavar="PATH",
                   help="scenario files or directories (default: fixtures/scenarios/<kind>)")
    p.add_argument("-k", metavar="EXPR", help="only scenarios whose name/file/tags match")
    p.add_argument("--no-scenarios", action="store_true", help="protocol checks only")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-check lines")
    p.set_defaults(func=main)


def main(args) -> int:
    import json
    import sys

    from rich.console import Console

    from .links import open_link
    from .outputs import check_writable, write_atomic
    from .scenario import ScenarioError, load_paths
    from .selection import matcher

    console = Console(highlight=False)
    try:
        if args.json:
            check_writable(args.json, "--json")
        if args.junit:
            check_writable(args.junit, "--junit")
        pick = matcher(args.k) if args.k else None
        preloaded = load_paths(args.scenarios) if args.scenarios and not args.no_scenarios else None
        link = open_link(args.device)
    except ScenarioError as exc:
        exc.print(" in the scenarios; nothing was run")
        return 2
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def progress(c: CheckResult) -> None:
        if args.quiet:
            return
        mark = {"pass": "[green]pass[/]", "fail": "[red]FAIL[/]", "skip": "[dim]skip[/]", "error": "[red]ERROR[/]"}
        console.print(f"{mark[c.status]}  {SECTIONS.get(c.section, c.section)}: {c.name}", soft_wrap=True)

    def scenarios(kind: str):
        if args.no_scenarios:
            return None
        chosen = preloaded if preloaded is not None else load_paths(default_scenario_paths(kind))
        return [s for s in chosen if pick is None or pick(s)]

    try:
        report = Conformance(link, scenarios=scenarios, progress=progress).run()
    except ScenarioError as exc:
        print(f"error: the scenario library does not load: {exc.problems[0]}", file=sys.stderr)
        return 2
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        link.close()
    console.print(summary_table(report))
    failed = [c for c in report.checks if c.status in ("fail", "error")]
    for c in failed:
        console.print(f"[red]{c.status.upper()}[/] {SECTIONS.get(c.section, c.section)}: {c.name}\n    "
                      + c.detail.replace("\n", "\n    "), soft_wrap=True)
    n_pass = sum(1 for c in report.checks if c.status == "pass")
    n_skip = sum(1 for c in report.checks if c.status == "skip")
    console.print(f"{n_pass} passed, {len(failed)} failed, {n_skip} skipped in {report.wall_s:.1f} s: "
                  + ("[green]CONFORMS[/]" if report.passed else "[red]DOES NOT CONFORM[/]"))
    if args.json:
        write_atomic(args.json, json.dumps(report.as_dict(), indent=2, default=str) + "\n")
    if args.junit:
        write_atomic(args.junit, junit_xml(report))
    if report.aborted:
        print(f"error: the link failed during the run: {report.aborted}", file=sys.stderr)
        return 2
    return 0 if report.passed else 1
