"""The device core through its byte interface, on the virtual clock: handshake, NAKs,
configuration, status, the event ring, INJECT, reset, the u32 wrap, determinism."""
from __future__ import annotations

import pytest

from unohil import protocol
from unohil.protocol import catalogue as cat
from unohil.protocol import ENUMS, NONE_U32, PARAMS_BY_NAME, encode, encode_raw, msg
from unohil.protocol.devtime import wrap
from unohil.protocol.framing import cobs_encode, crc16

from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
A, B, TIMER, LOAD = 0, 1, 2, 3
PRESS, RELEASE = 1, 0


def make(seed: int = 1, **kw) -> Probe:
    p = Probe(VirtualLink("showdown", seed, **kw))
    p.wait_event("BOOT")
    return p


def pid(name: str) -> int:
    return PARAMS_BY_NAME[name].id


def nak(frame, error: str):
    assert frame.name == "NAK", frame
    assert frame.msg.error == ERR[error], frame
    return frame.msg


def replies_to_raw(p: Probe, data: bytes, run_us: int = 0) -> list:
    start = len(p.frames)
    p.link.write(data)
    p.run_for(run_us)
    return p.frames[start:]


# ---- handshake ----

def test_boot_then_identity():
    p = make(seed=7, serial=42)
    boot = p.frames[0]
    assert boot.name == "BOOT" and boot.seq == 0 and boot.msg.event_seq == 0
    assert boot.msg.reason == ENUMS["boot_reason"].power_on
    ident = p.request(msg.HELLO(1, 0)).msg
    assert ident.NAME == "IDENTITY"
    assert ident.kind == ENUMS["unit_kind"].showdown
    assert (ident.proto_major, ident.proto_minor) == (1, 0)
    assert ident.catalog_crc == protocol.CATALOG_CRC
    assert ident.serial == 42 and ident.seed == 7
    assert ident.boot_id == boot.msg.boot_id != 0
    assert ident.card_capacity == 12 and ident.players == 2
    assert ident.event_buffer == 64 and ident.inject_queue == 16
    caps = ENUMS["capability"]
    # the Showdown has every capability of its kind: not the rig's (SPEC 13), nor the Flash base's forms (FL-20..22)
    assert ident.caps == sum(1 << caps[c] for c in cat.UNITS["showdown"].capabilities)
    assert "rig_lines" not in cat.UNITS["showdown"].capabilities


def test_card_capacity_option_in_identity():
    p = make(card_capacity=5)
    assert p.request(msg.HELLO(1, 0)).msg.card_capacity == 5


def test_unit_options_are_checked():
    with pytest.raises(TypeError):
        VirtualLink("showdown", colour="red")
    with pytest.raises(ValueError):
        VirtualLink("showdown", card_capacity=0)
    with pytest.raises(ValueError):
        VirtualLink("showdown", players=6)
    with pytest.raises(ValueError):
        VirtualLink("dice")


def test_hello_other_major_is_bad_version():
    p = make()
    m = nak(p.request(msg.HELLO(2, 0)), "bad_version")
    assert m.detail == 1 and m.cmd_type == msg.HELLO.ID


def test_reply_carries_cmd_seq_and_header_seq_counts_frames():
    p = make()
    r1 = p.request(msg.STATUS_GET(), seq=0x1234)
    r2 = p.request(msg.STATUS_GET(), seq=0xFFFF)
    assert r1.msg.cmd_seq == 0x1234 and r2.msg.cmd_seq == 0xFFFF
    assert [f.seq for f in p.frames] == [0, 1, 2]


# ---- NAKs for bad input ----

def test_bad_crc_gets_unattributed_nak():
    p = make()
    raw = bytearray(encode_raw(msg.STATUS_GET(), 5, 0))
    raw[-1] ^= 0x55
    (f,) = replies_to_raw(p, cobs_encode(bytes(raw)) + b"\0")
    m = nak(f, "bad_crc")
    assert (m.cmd_seq, m.cmd_type) == (0xFFFF, 0xFF)


def test_too_long_gets_unattributed_nak_once_and_resyncs():
    p = make()
    frames = replies_to_raw(p, b"\x01" * 200 + b"\0" + encode(msg.STATUS_GET(), 9, 0))
    assert [f.name for f in frames] == ["NAK", "STATUS"]
    m = nak(frames[0], "frame_too_long")
    assert (m.cmd_seq, m.cmd_type) == (0xFFFF, 0xFF)
    assert frames[1].msg.cmd_seq == 9


def _frame(type_id: int, seq: int, payload: bytes, version: int = 0x10) -> bytes:
    body = bytes([version, type_id]) + seq.to_bytes(2, "little") + bytes(4) + payload
    return cobs_encode(body + crc16(body).to_bytes(2, "little")) + b"\0"


def test_unknown_type_is_attributed():
    p = make()
    (f,) = replies_to_raw(p, _frame(0x3F, 77, b""))
    m = nak(f, "unknown_type")
    assert (m.cmd_seq, m.cmd_type) == (77, 0x3F)


def test_non_command_type_is_unknown_type():
    p = make()
    (f,) = replies_to_raw(p, encode(msg.ACK(1, 2, 3), 78, 0))
    m = nak(f, "unknown_type")
    assert (m.cmd_seq, m.cmd_type) == (78, msg.ACK.ID)


def test_bad_length_is_attributed():
    p = make()
    (f,) = replies_to_raw(p, _frame(msg.INPUT.ID, 79, b"\x00\x01"))    # 2 bytes, INPUT has 3
    m = nak(f, "bad_length")
    assert (m.cmd_seq, m.cmd_type) == (79, msg.INPUT.ID)


def test_longer_payload_of_a_newer_minor_is_accepted():
    p = make()
    (f,) = replies_to_raw(p, _frame(msg.STATUS_GET.ID, 80, b"\x99", version=0x11))
    assert f.name == "STATUS" and f.msg.cmd_seq == 80


def test_other_major_in_header_is_bad_version():
    p = make()
    (f,) = replies_to_raw(p, _frame(msg.STATUS_GET.ID, 81, b"", version=0x20))
    m = nak(f, "bad_version")
    assert (m.cmd_seq, m.cmd_type, m.detail) == (81, msg.STATUS_GET.ID, 1)


def test_garbage_and_cobs_errors_are_dropped_silently():
    p = make()
    frames = replies_to_raw(p, b"\x05\x01\0" + b"\x02\x03\0" + b"\0\0" + encode(msg.STATUS_GET(), 3, 0))
    assert [f.name for f in frames] == ["STATUS"]
    assert p.link.device.dropped_frames == 2


def test_input_bad_value_and_wrong_state():
    p = make()
    nak(p.request(msg.INPUT(9, PRESS, 0)), "bad_value")          # no such input
    nak(p.request(msg.INPUT(A, 2, 0)), "bad_value")              # no such action
    m = nak(p.request(msg.INPUT(TIMER, PRESS, 0)), "wrong_state")
    assert m.detail == ENUMS["showdown_state"].empty
    seen = p.wait_event("INPUT_SEEN").msg
    assert (seen.input, seen.disposition, seen.detail, seen.source) == (TIMER, DISP.refused, ERR.wrong_state,
                                                                        SRC.host)
    assert len(p.events("INPUT_SEEN")) == 1                      # unknown inputs are not input edges


def test_input_ack_comes_before_its_input_seen():
    p = make()
    ack = p.request(msg.INPUT(A, PRESS, 0))
    seen = p.wait_event("INPUT_SEEN")
    assert ack.name == "ACK" and ack.msg.value == 0
    assert p.frames.index(ack) < p.frames.index(seen)            # the reply before the events


# ---- time sync ----

def test_time_sync_echoes_and_stamps():
    p = make(boot_time_us=1000)
    p.run_for(12_345)
    r = p.request(msg.TIME_SYNC(0xDEADBEEF12345678))
    assert r.msg.t1_host_us == 0xDEADBEEF12345678
    assert r.msg.t2_us == r.msg.t3_us == r.time_us == 1000 + 12_345


# ---- configuration ----

def test_config_get_defaults_and_unknown_param():
    p = make(seed=99)
    for param in protocol.catalogue.params_for("showdown"):
        r = p.request(msg.CONFIG_GET(param.id))
        assert r.name == "CONFIG_VALUE" and r.msg.param == param.id
        assert r.msg.value == (99 if param.name == "rng_seed" else param.default)
    nak(p.request(msg.CONFIG_GET(pid("turn_short_us"))), "unknown_param")     # a Flash parameter
    nak(p.request(msg.CONFIG_GET(0x99)), "unknown_param")
    nak(p.request(msg.CONFIG_SET(pid("burst_max"), 3)), "unknown_param")


@pytest.mark.parametrize("name", ["countdown_min_us", "beep_interval_us", "tie_window_us", "go_timeout_us"])
def test_config_set_range_both_ends(name):
    p = make()
    param = PARAMS_BY_NAME[name]
    nak(p.request(msg.CONFIG_SET(param.id, param.min - 1)), "bad_value")
    assert p.request(msg.CONFIG_SET(param.id, param.min)).msg.value == param.min
    top = min(param.max, 999_999) if name == "tie_window_us" else param.max
    if name == "countdown_min_us":
        p.request(msg.CONFIG_SET(pid("countdown_max_us"), param.max))
    nak(p.request(msg.CONFIG_SET(param.id, param.max + 1)), "bad_value")
    assert p.request(msg.CONFIG_SET(param.id, top)).msg.value == top
    assert p.request(msg.CONFIG_GET(param.id)).msg.value == top


def test_config_cross_rules():
    p = make()
    nak(p.request(msg.CONFIG_SET(pid("countdown_min_us"), 6_000_001)), "bad_value")   # > max 6 s
    assert p.request(msg.CONFIG_SET(pid("countdown_min_us"), 6_000_000)).name == "CONFIG_VALUE"
    nak(p.request(msg.CONFIG_SET(pid("countdown_max_us"), 5_999_999)), "bad_value")
    nak(p.request(msg.CONFIG_SET(pid("flight_us"), 1000)), "bad_value")      # must exceed W = 1000
    assert p.request(msg.CONFIG_SET(pid("flight_us"), 1001)).name == "CONFIG_VALUE"
    nak(p.request(msg.CONFIG_SET(pid("tie_window_us"), 1001)), "bad_value")


def test_config_set_only_when_idle():
    p = make()
    p.request(msg.INPUT(LOAD, PRESS, 1))
    assert p.request(msg.CONFIG_SET(pid("go_timeout_us"), 200_000)).name == "CONFIG_VALUE"   # loaded: idle
    p.request(msg.INPUT(TIMER, PRESS, 0))
    m = nak(p.request(msg.CONFIG_SET(pid("go_timeout_us"), 300_000)), "wrong_state")
    assert m.detail == ENUMS["showdown_state"].countdown
    nak(p.request(msg.CONFIG_SET(0x99, 1)), "unknown_param")     # unknown_param wins over wrong_state


def _first_countdown_green(p: Probe) -> int:
    p.request(msg.INPUT(LOAD, PRESS, 1))
    t0 = p.request(msg.INPUT(TIMER, PRESS, 0)).time_us
    return p.wait_event("SD_GREEN").time_us - t0


def test_rng_seed_set_restarts_the_generator():
    fresh = _first_countdown_green(make(seed=1234))
    p = make(seed=5)
    assert p.request(msg.CONFIG_SET(pid("rng_seed"), 1234)).msg.value == 1234
    assert p.request(msg.HELLO(1, 0)).msg.seed == 1234
    assert _first_countdown_green(p) == fresh


# ---- status ----

def test_status_fields():
    p = make()
    p.request(msg.INPUT(LOAD, PRESS, 3))
    p.request(msg.INJECT(5_000_000, A, PRESS, 0))
    s = p.request(msg.STATUS_GET()).msg
    assert s.state == ENUMS["showdown_state"].loaded and s.cards == 3
    assert s.next_event_seq == 4        # BOOT, INPUT_SEEN, SD_CARDS, STATE
    assert s.pending_injects == 1
    assert s.boot_id == p.frames[0].msg.boot_id


# ---- the event ring ----

def _many_events(p: Probe, n_inputs: int) -> None:
    for _ in range(n_inputs):
        p.request(msg.INPUT(A, RELEASE, 0))     # one INPUT_SEEN each, no other effect


def test_event_resend_returns_buffered_events_with_original_times():
    p = make()
    _many_events(p, 3)
    p.run_for(1000)
    originals = {f.msg.event_seq: f for f in p.events()}
    ack = p.request(msg.EVENT_RESEND(1, 2))
    assert ack.name == "ACK" and ack.msg.value == 2
    p.run_for(0)
    resent = p.frames[p.frames.index(ack) + 1:]
    assert [f.msg for f in resent] == [originals[1].msg, originals[2].msg]
    assert [f.time_us for f in resent] == [originals[1].time_us, originals[2].time_us]
    assert [f.seq for f in resent] == [ack.seq + 1, ack.seq + 2]        # new header seq


def test_event_resend_only_the_last_64():
    p = make()
    _many_events(p, 80)                           # events 0..80 exist, 17..80 are buffered
    ack = p.request(msg.EVENT_RESEND(0, 40))
    assert ack.msg.value == 40 - 17
    p.run_for(0)
    resent = [f.msg.event_seq for f in p.frames[p.frames.index(ack) + 1:]]
    assert resent == list(range(17, 40))
    assert p.request(msg.EVENT_RESEND(81, 5)).msg.value == 0        # not yet happened
    assert p.request(msg.EVENT_RESEND(3, 0)).msg.value == 0


def test_event_resend_range_wraps_the_u16():
    p = make()
    p.link.device._event_seq = 0xFFFE         # as after a long session: BOOT long gone
    p.link.device._ring.clear()
    _many_events(p, 4)                        # event seqs FFFE, FFFF, 0, 1
    ack = p.request(msg.EVENT_RESEND(0xFFFF, 2))
    assert ack.msg.value == 2
    p.run_for(0)
    assert [f.msg.event_seq for f in p.frames[p.frames.index(ack) + 1:]] == [0xFFFF, 0]


def test_dropped_event_is_recovered_by_resend():
    p = make()
    p.link.device.drop_next_events(1, "SD_CARDS")
    p.request(msg.INPUT(LOAD, PRESS, 2))
    p.run_for(0)
    seqs = [f.msg.event_seq for f in p.events()]
    assert seqs == [0, 1, 3]                  # 2 (SD_CARDS) never came
    assert p.request(msg.EVENT_RESEND(2, 1)).msg.value == 1
    p.run_for(0)
    assert p.frames[-1].name == "SD_CARDS" and p.frames[-1].msg.cards == 2
    p.request(msg.INPUT(LOAD, PRESS, 1))
    p.run_for(0)
    assert p.events("SD_CARDS")[-1].msg.cards == 3      # dropped once only


def test_drop_next_events_any_name():
    p = make()
    p.link.device.drop_next_events(2)
    p.request(msg.INPUT(LOAD, PRESS, 2))
    p.run_for(0)
    assert [f.name for f in p.events()] == ["BOOT", "STATE"]


# ---- INJECT ----

def test_inject_too_late_boundary():
    p = make()
    p.run_for(1_000)
    now = p.link.device.now()
    nak(p.request(msg.INJECT(now - 1, A, PRESS, 0)), "too_late")
    nak(p.request(msg.INJECT(now, A, PRESS, 0)), "too_late")
    assert p.request(msg.INJECT(now + 1, A, PRESS, 0)).name == "ACK"
    nak(p.request(msg.INJECT(wrap(now + (1 << 31)), A, PRESS, 0)), "too_late")   # half a wrap: the past
    assert p.request(msg.INJECT(wrap(now + (1 << 31) - 1), A, PRESS, 0)).name == "ACK"


def test_inject_applies_at_its_time_as_injected():
    p = make()
    ack = p.request(msg.INJECT(777, A, PRESS, 0))
    assert ack.msg.value == 1
    seen = p.wait_event("INPUT_SEEN")
    assert seen.time_us == 777 and seen.msg.source == SRC.injected and seen.msg.disposition == DISP.reported


def test_inject_refusal_is_reported_in_input_seen():
    p = make()
    assert p.request(msg.INJECT(100, TIMER, PRESS, 0)).name == "ACK"     # accepted: judged at its time
    seen = p.wait_event("INPUT_SEEN").msg
    assert (seen.disposition, seen.detail, seen.source) == (DISP.refused, ERR.wrong_state, SRC.injected)


def test_inject_bad_input_and_queue_full_and_cancel():
    p = make()
    nak(p.request(msg.INJECT(100, 4, PRESS, 0)), "bad_value")
    nak(p.request(msg.INJECT(100, A, 7, 0)), "bad_value")
    ids = [p.request(msg.INJECT(1000 + i, A, PRESS, 0)).msg.value for i in range(16)]
    assert ids == list(range(1, 17))
    nak(p.request(msg.INJECT(5000, A, PRESS, 0)), "queue_full")
    assert p.request(msg.STATUS_GET()).msg.pending_injects == 16
    p.run_for(1000)                             # 1000 is due at 1000: one applied, 15 left
    assert p.request(msg.STATUS_GET()).msg.pending_injects == 15
    assert p.request(msg.INJECT(5000, A, PRESS, 0)).msg.value == 17
    assert p.request(msg.INJECT_CANCEL()).msg.value == 16
    assert p.request(msg.STATUS_GET()).msg.pending_injects == 0
    p.run_for(10_000)
    assert len(p.events("INPUT_SEEN")) == 1
    assert p.request(msg.INJECT_CANCEL()).msg.value == 0


def test_inject_at_same_time_keep_their_order():
    p = make()
    p.request(msg.INJECT(500, B, PRESS, 0))
    p.request(msg.INJECT(500, A, PRESS, 0))
    p.request(msg.INJECT(500, B, RELEASE, 0))
    p.run_for(1000)
    assert [(f.msg.input, f.msg.action) for f in p.events("INPUT_SEEN")] == [(B, 1), (A, 1), (B, 0)]


# ---- reset ----

def test_reset_new_game_keeps_identity_and_config():
    p = make()
    p.request(msg.CONFIG_SET(pid("go_timeout_us"), 200_000))
    p.request(msg.INPUT(LOAD, PRESS, 4))
    boot_id = p.frames[0].msg.boot_id
    ack = p.request(msg.RESET(ENUMS["reset_mode"].new_game))
    assert ack.name == "ACK"
    state = p.wait(lambda f: f.name == "STATE" and f.seq > ack.seq).msg
    assert (state.state, state.previous) == (0, 1)
    s = p.request(msg.STATUS_GET()).msg
    assert (s.state, s.cards, s.boot_id) == (0, 0, boot_id)
    assert p.request(msg.CONFIG_GET(pid("go_timeout_us"))).msg.value == 200_000


def test_reset_new_game_during_countdown_turns_lights_off_and_stops():
    p = make()
    p.request(msg.INPUT(LOAD, PRESS, 1))
    p.request(msg.INPUT(TIMER, PRESS, 0))
    p.run_for(1_200_000)
    ack = p.request(msg.RESET(0))
    p.run_for(10_000_000)
    after = [f for f in p.frames if f.seq > ack.seq]
    assert [(f.name, f.msg[1:]) for f in after] == [("SD_CARDS", (0,)),      # the count of the tray goes
                                                    ("LIGHT", (ENUMS["showdown_light"].red, 0, 255)),
                                                    ("STATE", (0, 2))]


def test_reset_reboot_new_boot_id_sequences_and_defaults():
    p = make(seed=3, boot_time_us=500)
    old_id = p.frames[0].msg.boot_id
    p.request(msg.CONFIG_SET(pid("rng_seed"), 99))
    p.request(msg.CONFIG_SET(pid("tie_window_us"), 77))
    p.request(msg.INJECT(10_000_000, A, PRESS, 0))
    p.run_for(2_000_000)
    ack = p.request(msg.RESET(ENUMS["reset_mode"].reboot))
    boot = p.wait_event("BOOT")
    assert ack.name == "ACK" and p.frames.index(ack) + 1 == p.frames.index(boot)
    assert boot.seq == 0 and boot.msg.event_seq == 0 and boot.msg.reason == ENUMS["boot_reason"].reset_command
    assert boot.msg.boot_id != old_id
    assert boot.time_us == 500                 # the counter restarted
    ident = p.request(msg.HELLO(1, 0))
    assert ident.seq == 1 and ident.msg.boot_id == boot.msg.boot_id and ident.msg.seed == 3
    assert p.request(msg.CONFIG_GET(pid("tie_window_us"))).msg.value == 1000
    assert p.request(msg.STATUS_GET()).msg.pending_injects == 0
    p.request(msg.RESET(1))
    assert len({f.msg.boot_id for f in p.events("BOOT")}) == 3


def test_reset_bad_mode():
    nak(make().request(msg.RESET(7)), "bad_value")


# ---- the u32 device time ----

def test_race_across_the_u32_wrap():
    start = (1 << 32) - 2_000_000
    p = make(boot_time_us=start)
    p.request(msg.CONFIG_SET(pid("countdown_min_us"), 3_000_000))
    p.request(msg.CONFIG_SET(pid("countdown_max_us"), 3_000_000))
    p.request(msg.INPUT(LOAD, PRESS, 1))
    timer_at = start + 10
    green = timer_at + 3_000_000                 # past the wrap
    p.request(msg.INJECT(timer_at, TIMER, PRESS, 0))
    ack = p.request(msg.INJECT(wrap(green + 250), B, PRESS, 0))   # a small number: after the wrap
    assert ack.name == "ACK"
    v = p.wait_event("SD_VERDICT")
    assert v.msg.green_us == wrap(green) == 1_000_010
    assert v.msg.press_b_us == wrap(green + 250) and v.msg.reaction_b_us == 250
    assert v.msg.press_a_us == NONE_U32 and v.msg.loser == 0
    assert v.time_us == v.msg.knowable_us == wrap(green + 250 + 1000)
    beeps = [f.time_us for f in p.events("SD_BEEP")]
    assert beeps == [wrap(timer_at + k * 500_000) for k in range(6)]
    assert beeps[4] < beeps[3]                   # the wrap fell between beeps 3 and 4


def test_inject_across_the_wrap_too_late_uses_modular_time():
    p = make(boot_time_us=(1 << 32) - 10)
    nak(p.request(msg.INJECT((1 << 32) - 11, A, PRESS, 0)), "too_late")
    assert p.request(msg.INJECT(5, A, PRESS, 0)).name == "ACK"
    assert p.wait_event("INPUT_SEEN").time_us == 5


# ---- determinism and the virtual link ----

def _script(seed: int) -> bytes:
    p = make(seed=seed)
    p.request(msg.HELLO(1, 0))
    for _ in range(5):
        p.request(msg.INPUT(LOAD, PRESS, 3))
        p.request(msg.INPUT(TIMER, PRESS, 0))
        g = p.wait_event("SD_GREEN").time_us
        p.request(msg.INJECT(g + 1000, A, PRESS, 0))
        p.request(msg.INJECT(g + 1400, B, PRESS, 0))
        p.wait_event("SD_VERDICT")
    return bytes(p.raw)


def test_same_seed_same_bytes():
    assert _script(11) == _script(11)
    assert _script(11) != _script(12)


def test_read_timeout_advances_exactly():
    link = VirtualLink("showdown", host_offset_us=1_000)
    data, host = link.read(0)
    assert data and host == 1_000                     # BOOT was waiting
    assert link.read(250) == (b"", 1_250)
    assert link.now_us() == 1_250 and link.device.now() == 250


def test_read_stops_at_the_next_activity():
    link = VirtualLink("showdown", host_offset_us=0)
    link.read(0)
    link.write(encode(msg.INJECT(4_000, A, PRESS, 0), 0, 0))
    data, host = link.read(0)
    assert data and host == 0                         # the ACK, at once
    data, host = link.read(1_000_000)
    assert data and host == 4_000                     # the INPUT_SEEN, at its time


def test_true_offset_without_and_with_drift():
    link = VirtualLink("showdown", host_offset_us=5_000_000_000, boot_time_us=100)
    assert link.true_offset_us(5_000_000_000) == 100 - 5_000_000_000
    fast = VirtualLink("showdown", host_offset_us=1_000_000, drift_ppm=100.0)
    fast.read(0)
    fast.read(10_000_000)
    assert fast.now_us() == 11_000_000
    assert fast.device.now() == 10_001_000            # 100 ppm fast over 10 s of host time
    assert fast.device_time_at(11_000_000) == 10_001_000
    assert fast.true_offset_us(11_000_000) == 10_001_000 - 11_000_000


def test_input_written_at_a_timeout_instant_comes_after_injects_and_before_timers():
    p = make()
    p.request(msg.INPUT(LOAD, PRESS, 1))
    p.request(msg.CONFIG_SET(pid("countdown_min_us"), 500_000))
    p.request(msg.CONFIG_SET(pid("countdown_max_us"), 500_000))
    p.request(msg.INPUT(TIMER, PRESS, 0))             # green at 500_000
    p.request(msg.INJECT(500_000, B, RELEASE, 0))
    assert p.read(500_000) == []                      # times out exactly at green
    assert p.link.device.now() == 500_000 and not p.events("SD_GREEN")
    p.request(msg.INPUT(A, RELEASE, 0))
    p.run_for(0)
    order = [(f.name, f.msg.input if f.name == "INPUT_SEEN" else None) for f in p.events() if f.time_us == 500_000]
    assert order[:3] == [("INPUT_SEEN", B), ("INPUT_SEEN", A), ("LIGHT", None)]
    assert p.events("SD_GREEN")[0].time_us == 500_000


# ---- PR-3, PR-4, PR-5 ----

@pytest.mark.parametrize("kind, inp", [("showdown", A), ("showdown", TIMER), ("flash", 8), ("launcher", 0)])
def test_a_value_on_an_input_that_takes_none_is_refused_bad_value(kind, inp):
    """PR-3: INPUT: NAK bad_value then INPUT_SEEN refused with the value sent; INJECT: INPUT_SEEN
    refused at its time. The unit does nothing with the edge."""
    p = Probe(VirtualLink(kind, 1))
    p.wait_event("BOOT")
    nak(p.request(msg.INPUT(inp, PRESS, 3)), "bad_value")
    t = p.link.device.now() + 100
    assert p.request(msg.INJECT(t, inp, PRESS, 1)).name == "ACK"
    p.run_for(1000)
    seen = [f for f in p.events("INPUT_SEEN")]
    assert [(f.msg.value, f.msg.source, f.msg.disposition, f.msg.detail) for f in seen] == [
        (3, SRC.host, DISP.refused, ERR.bad_value), (1, SRC.injected, DISP.refused, ERR.bad_value)]
    assert [f.name for f in p.events()] == ["BOOT", "INPUT_SEEN", "INPUT_SEEN"]
    assert p.request(msg.INPUT(inp, PRESS, 0)).name in ("ACK", "NAK")      # value 0: the unit's own rules


def test_values_still_count_cards_and_speeds():
    p = make()
    assert p.request(msg.INPUT(LOAD, PRESS, 3)).name == "ACK"
    f = Probe(VirtualLink("flash", 1))
    assert f.request(msg.INPUT(10, PRESS, 2)).name == "ACK"                  # speed_switch: four_seconds


@pytest.mark.parametrize("cap", ["landing_sensor", "false_start_launch"])
@pytest.mark.parametrize("kind", ["flash", "launcher"])
def test_showdown_forms_are_showdown_capabilities_only(kind, cap):
    """PR-4: a unit of another kind keeps the bit clear, and the emulator has no such option for it."""
    ident = Probe(VirtualLink(kind, 1)).request(msg.HELLO(1, 0)).msg
    assert not ident.caps & (1 << ENUMS["capability"][cap])
    with pytest.raises(TypeError, match=cap):
        VirtualLink(kind, 1, **{cap: 1})


def test_reset_new_game_turns_lights_off_in_light_then_target_order():
    """PR-5: the Flash buzzer player's light was lit before the opponents'; off, they go by button."""
    p = Probe(VirtualLink("flash", 4))                                          # seed 4 selects player 2
    p.wait_event("BOOT")
    for i in (0, 1, 2):
        p.request(msg.INPUT(i, PRESS, 0))
    p.request(msg.INPUT(8, PRESS, 0))
    p.request(msg.INPUT(8, RELEASE, 0))
    current = p.events("FL_SELECTED")[-1].msg.player
    p.request(msg.INPUT(9, PRESS, 0))                                          # BUZZER: opponents flash
    lit = [f.msg.target for f in p.events("LIGHT")]
    assert lit == [2, 0, 1] and current == 2
    ack = p.request(msg.RESET(0))
    p.run_for(1000)
    after = [(f.name, f.msg.target if f.name == "LIGHT" else None) for f in p.frames if f.seq > ack.seq]
    assert after == [("LIGHT", 0), ("LIGHT", 1), ("LIGHT", 2), ("STATE", None)]
