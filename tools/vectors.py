"""Golden test vectors of uno-hil protocol 1.0: fixtures/vectors/, generated from the catalogue.

    python -m tools.vectors --write    regenerate fixtures/vectors/{vectors.json,vectors.h}
    python -m tools.vectors --check    exit 1 if the files differ from what the catalogue gives

vectors.json holds
- frames: at least three per message type (typical values chosen by hand, all-zero, all-0xFF,
  and signed minimums where a message has signed fields): fields, seq, time_us, the decoded frame
  (header + payload + CRC) and the wire bytes (COBS + delimiter), both in hex;
- streams: byte streams with the exact output a receiver must produce: frames, errors of a given
  kind, and the NAK (if any) a device answers each error with;
- algorithms: tables for the integer algorithms of SPEC.md section 6 (burst distribution, fire
  chance, line model) so that another implementation can check itself;
- crc_check: CRC-16/CCITT-FALSE of b"123456789".
vectors.h is the same frames and streams as C arrays, plus the payload size of every type id.

The algorithms' tables come from protocol/algorithms.py, the normative integer algorithms of SPEC.md
section 6 that the emulator runs.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from unohil.protocol import catalogue as cat
from unohil.protocol.algorithms import Pcg32, burst_total, burst_weights, cards_on_b, fire_chance
from unohil.protocol.catalogue import NONE_I32, NONE_U8, NONE_U32
from unohil.protocol.codec import Frame, StreamDecoder, encode, encode_raw
from unohil.protocol.framing import cobs_encode, crc16
from tools import generated

VECTORS_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "vectors"
JSON_PATH = VECTORS_DIR / "vectors.json"
HEADER_PATH = VECTORS_DIR / "vectors.h"


# ---- good frames ------------------------------------------------------------------------------------

BOOT_ID = 0x9E3779B9

#: (label, message, seq, time_us, fields): one hand-written vector per message type, values a real
#: session could carry. Fields not named are 0.
TYPICAL: list[tuple[str, str, int, int, dict]] = [
    ("hello", "HELLO", 1, 0, {"host_major": 1, "host_minor": 0}),
    ("time_sync", "TIME_SYNC", 2, 0, {"t1_host_us": 1_700_000_123_456_789}),
    ("config_get_tie_window", "CONFIG_GET", 3, 0, {"param": 0x13}),
    ("config_set_countdown_min", "CONFIG_SET", 4, 0, {"param": 0x10, "value": 2_500_000}),
    ("status_get", "STATUS_GET", 5, 0, {}),
    ("event_resend_across_wrap", "EVENT_RESEND", 6, 0, {"first_seq": 65530, "count": 12}),
    ("input_paddle_a_press", "INPUT", 7, 0, {"input": 0, "action": 1, "value": 0}),
    ("inject_near_wrap", "INJECT", 8, 0, {"at_us": 0xFFFFFF00, "input": 1, "action": 1, "value": 0}),
    ("inject_cancel", "INJECT_CANCEL", 9, 0, {}),
    ("reset_reboot", "RESET", 10, 0, {"mode": 1}),
    ("rig_wire_red_b", "RIG_WIRE", 11, 0, {"line": 18, "signal": 1, "id": 1, "target": 1, "polarity": 1}),
    ("rig_edge_paddle_b_near_wrap", "RIG_EDGE", 12, 0, {"at_us": 0xFFFFFF00, "line": 1, "action": 1, "value": 0}),
    ("rig_edge_feeder_ten_cards", "RIG_EDGE", 13, 0, {"at_us": 2_000_000, "line": 3, "action": 1, "value": 10}),
    ("rig_wire_loopback", "RIG_WIRE", 14, 0, {"line": 31, "signal": 5, "id": 15, "target": 0, "polarity": 1}),
    ("ack_inject", "ACK", 0x1234, 0x0001E240, {"cmd_seq": 8, "cmd_type": 0x08, "value": 7}),
    ("nak_unattributed_bad_crc", "NAK", 0x1235, 0x0001E241,
     {"cmd_seq": 0xFFFF, "cmd_type": 0xFF, "error": 1, "detail": 0}),
    ("nak_wrong_state", "NAK", 0x1236, 0x0001E242, {"cmd_seq": 4, "cmd_type": 0x04, "error": 5, "detail": 2}),
    ("identity_showdown", "IDENTITY", 0, 1_500,
     {"cmd_seq": 1, "kind": 1, "proto_major": 1, "proto_minor": 0, "fw_major": 0, "fw_minor": 1, "fw_patch": 0,
      "serial": 0x00C0FFEE, "boot_id": BOOT_ID, "caps": 0x3F, "catalog_crc": cat.CATALOG_CRC,
      "card_capacity": 12, "players": 2, "event_buffer": 64, "inject_queue": 16, "seed": 1}),
    ("time_sync_reply_across_wrap", "TIME_SYNC_REPLY", 1, 0x00000010,
     {"cmd_seq": 2, "t1_host_us": 1_700_000_123_456_789, "t2_us": 0xFFFFFFF0, "t3_us": 0x00000010}),
    ("config_value", "CONFIG_VALUE", 2, 2_000, {"cmd_seq": 3, "param": 0x13, "value": 1_000}),
    ("status_countdown", "STATUS", 3, 2_500,
     {"cmd_seq": 5, "state": 2, "cards": 3, "next_event_seq": 300, "pending_injects": 2, "boot_id": BOOT_ID}),
    ("boot_power_on", "BOOT", 0, 0, {"event_seq": 0, "boot_id": BOOT_ID, "reason": 0}),
    ("input_seen_refused_injected", "INPUT_SEEN", 17, 3_000_000,
     {"event_seq": 17, "input": 3, "action": 1, "value": 2, "source": 2, "disposition": 2, "detail": 4}),
    ("light_red_flash_none", "LIGHT", 18, 3_000_000, {"event_seq": 18, "light": 1, "mode": 2, "target": NONE_U8}),
    ("sound_beep_3", "SOUND", 19, 4_500_000, {"event_seq": 19, "sound": 0, "arg": 3}),
    ("state_countdown", "STATE", 20, 3_000_000, {"event_seq": 20, "state": 2, "previous": 1}),
    ("sd_cards", "SD_CARDS", 21, 2_900_000, {"event_seq": 21, "cards": 3}),
    ("sd_countdown", "SD_COUNTDOWN", 22, 3_000_000, {"event_seq": 22, "cards": 3}),
    ("sd_beep_7", "SD_BEEP", 23, 6_500_000, {"event_seq": 23, "index": 7}),
    ("sd_green", "SD_GREEN", 24, 7_250_000, {"event_seq": 24}),
    ("sd_launch_toward_b", "SD_LAUNCH", 25, 7_430_000, {"event_seq": 25, "toward": 1, "cards": 3}),
    ("sd_landing", "SD_LANDING", 26, 7_680_000, {"event_seq": 26, "landed_a": 1, "landed_b": 2}),
    ("sd_verdict_false_start", "SD_VERDICT", 27, 4_000_000,
     {"event_seq": 27, "loser": 0, "reason": 2, "cards": 3, "landed_a": NONE_U8, "landed_b": NONE_U8,
      "press_a_us": 4_000_000, "press_b_us": NONE_U32, "reaction_a_us": -250_000, "reaction_b_us": NONE_I32,
      "green_us": 4_250_000, "decisive_us": 4_000_000, "knowable_us": 4_000_000}),
    ("sd_verdict_line_tiebreak_across_wrap", "SD_VERDICT", 28, 0x0003D170,
     {"event_seq": 28, "loser": 1, "reason": 3, "cards": 3, "landed_a": 1, "landed_b": 2,
      "press_a_us": 0x00000000, "press_b_us": 0x000000C8, "reaction_a_us": 180_000, "reaction_b_us": 180_200,
      "green_us": 0xFFFD40E0, "decisive_us": 0x000000C8, "knowable_us": 0x0003D090}),
    ("fl_registered", "FL_REGISTERED", 5, 1_000_000, {"event_seq": 5, "player": 3, "count": 2}),
    ("fl_game_start", "FL_GAME_START", 9, 5_000_000, {"event_seq": 9, "players_mask": 0b00101011, "count": 4}),
    ("fl_selected", "FL_SELECTED", 10, 5_000_000,
     {"event_seq": 10, "player": 5, "turn": 1, "turn_time_us": 4_000_000, "reason": 0}),
    ("fl_turn_end", "FL_TURN_END", 14, 8_999_999,
     {"event_seq": 14, "player": 5, "turn": 1, "elapsed_us": 3_999_999}),
    ("fl_timeout", "FL_TIMEOUT", 40, 60_000_000, {"event_seq": 40, "player": 1, "turn": 9}),
    ("fl_penalty_timeout", "FL_PENALTY", 41, 60_000_000, {"event_seq": 41, "player": 1, "cards": 2, "reason": 1}),
    ("fl_buzzer", "FL_BUZZER", 50, 10_000_000, {"event_seq": 50, "player": 0, "opponents_mask": 0b00111110}),
    ("fl_buzzer_verdict_tie", "FL_BUZZER_VERDICT", 57, 10_512_345,
     {"event_seq": 57, "slowest": 4, "reason": 2, "tied_mask": 0b00010100, "buzzer_us": 10_000_000,
      "decisive_us": 10_512_345, "knowable_us": 10_512_345,
      "reaction_us": [NONE_I32, 301_000, 512_000, 287_500, 512_345, 199_999, NONE_I32, NONE_I32]}),
    ("fl_buzzer_cancel", "FL_BUZZER_CANCEL", 60, 12_000_000, {"event_seq": 60, "player": 2}),
    ("fl_pause", "FL_PAUSE", 61, 13_000_000, {"event_seq": 61, "paused": 1, "remaining_us": 2_345_678}),
    ("fl_sleep", "FL_SLEEP", 62, 313_000_000, {"event_seq": 62, "asleep": 1}),
    ("fl_reset", "FL_RESET", 63, 320_000_000, {"event_seq": 63, "held_us": 3_000_000}),
    ("fl_speed", "FL_SPEED", 64, 321_000_000, {"event_seq": 64, "speed": 2, "turn_time_us": 4_000_000}),
    ("la_door_closed", "LA_DOOR", 3, 20_000_000, {"event_seq": 3, "open": 0, "inside": 40}),
    ("la_loaded", "LA_LOADED", 2, 19_000_000,
     {"event_seq": 2, "added": 40, "inside": 40, "loaded_total": 100, "fired_total": 60}),
    ("la_ding", "LA_DING", 30, 55_000_000, {"event_seq": 30, "press": 12, "empty_streak": 3, "chance_permille": 700}),
    ("la_card", "LA_CARD", 31, 55_150_000, {"event_seq": 31, "index": 0, "inside": 39, "fired_total": 61}),
    ("la_result_fired", "LA_RESULT", 36, 55_310_000,
     {"event_seq": 36, "press": 12, "press_us": 55_000_000, "planned": 5, "fired": 5, "inside": 35,
      "fired_total": 65, "loaded_total": 100, "knowable_us": 55_310_000}),
    ("la_empty", "LA_EMPTY", 90, 99_000_000, {"event_seq": 90, "fired_total": 100}),
    ("rig_capture_driven", "RIG_CAPTURE", 40, 7_430_000,
     {"event_seq": 40, "line": 1, "action": 1, "origin": 0, "stimulus": 9}),
    ("rig_capture_watched_red_b", "RIG_CAPTURE", 41, 7_435_250,
     {"event_seq": 41, "line": 18, "action": 1, "origin": 1, "stimulus": 0}),
    ("rig_capture_loopback", "RIG_CAPTURE", 42, 7_500_003,
     {"event_seq": 42, "line": 31, "action": 1, "origin": 1, "stimulus": 0}),
]


def _fill(mdef: cat.MessageDef, how: str) -> dict:
    out = {}
    for f in mdef.fields:
        lo, hi = f.range
        if how == "zeros":
            v = 0
        elif how == "ones":               # every byte 0xFF: unsigned maximum, signed -1
            v = hi if lo == 0 else -1
        else:                             # "min": signed minimum, unsigned 0
            v = lo
        out[f.name] = [v] * f.count if f.count > 1 else v
    return out


def _make(mdef: cat.MessageDef, fields: dict):
    unknown = set(fields) - {f.name for f in mdef.fields}
    if unknown:
        raise KeyError(f"{mdef.name}: no field(s) {sorted(unknown)}")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return mdef.cls(**kw)


def fields_of(msg) -> dict:
    return {f.name: (list(v) if isinstance(v, tuple) else v) for f, v in zip(msg.DEF.fields, msg)}


def _frame_vector(label: str, mdef: cat.MessageDef, seq: int, time_us: int, fields: dict,
                  version: int = cat.VERSION_BYTE) -> dict:
    m = _make(mdef, fields)
    raw = encode_raw(m, seq, time_us, version)
    return {"label": label, "message": mdef.name, "id": mdef.id, "seq": seq, "time_us": time_us,
            "fields": fields_of(m), "raw_hex": raw.hex(), "wire_hex": encode(m, seq, time_us, version).hex()}


def good_frames() -> list[dict]:
    typical = {}
    for label, name, seq, t, fields in TYPICAL:
        typical.setdefault(name, []).append((label, seq, t, fields))
    missing = [m.name for m in cat.MESSAGES if m.name not in typical]
    if missing:
        raise ValueError(f"tools/vectors.py: no typical vector for {', '.join(missing)}")
    out = []
    for mdef in cat.MESSAGES:
        for label, seq, t, fields in typical[mdef.name]:
            out.append(_frame_vector(label, mdef, seq, t, fields))
        base = mdef.name.lower()
        out.append(_frame_vector(f"{base}_zeros", mdef, 0, 0, _fill(mdef, "zeros")))
        out.append(_frame_vector(f"{base}_ones", mdef, 0xFFFF, 0xFFFFFFFF, _fill(mdef, "ones")))
        if any(f.range[0] < 0 for f in mdef.fields):
            out.append(_frame_vector(f"{base}_signed_min", mdef, 0x8000, 0x80000000, _fill(mdef, "min")))
    return out


# ---- streams: bad input and resynchronisation ---------------------------------------------------------

def _with_crc(body: bytes) -> bytes:
    return body + crc16(body).to_bytes(2, "little")


def _wire(raw: bytes) -> bytes:
    return cobs_encode(raw) + b"\x00"


def _header(version: int, type_id: int, seq: int, time_us: int) -> bytes:
    return bytes((version, type_id)) + seq.to_bytes(2, "little") + time_us.to_bytes(4, "little")


def _msg_wire(name: str, seq: int, time_us: int, **fields) -> bytes:
    return encode(_make(cat.BY_NAME[name], fields), seq, time_us)


def _msg_raw(name: str, seq: int, time_us: int, **fields) -> bytes:
    return encode_raw(_make(cat.BY_NAME[name], fields), seq, time_us)


def stream_cases() -> list[tuple[str, str, bytes]]:
    """(label, what it shows, stream bytes)."""
    hello = _msg_wire("HELLO", 1, 0, host_major=1, host_minor=0)
    hello_raw = _msg_raw("HELLO", 1, 0, host_major=1, host_minor=0)
    status_get = _msg_wire("STATUS_GET", 2, 0)
    event = _msg_wire("INPUT_SEEN", 9, 1_234_567, event_seq=9, input=0, action=1, value=0, source=0,
                      disposition=0, detail=0)
    event_raw = _msg_raw("INPUT_SEEN", 9, 1_234_567, event_seq=9, input=0, action=1, value=0, source=0,
                         disposition=0, detail=0)
    verdict_raw = _msg_raw("FL_BUZZER_VERDICT", 7, 99, event_seq=7, slowest=1, reason=1, tied_mask=2,
                           buzzer_us=1, decisive_us=2, knowable_us=3, reaction_us=(NONE_I32,) * 8)

    bad_crc = bytearray(hello_raw)
    bad_crc[-2] ^= 0x01
    flipped = bytearray(event_raw)
    flipped[9] ^= 0x10                               # a payload bit
    too_long_raw = _with_crc(_header(0x10, 0x01, 3, 0) + bytes(range(1, 54)))   # 63 decoded bytes
    assert len(too_long_raw) == cat.MAX_FRAME + 1
    return [
        ("good_single", "one well-formed frame", hello),
        ("good_leading_delimiter", "a sender may put a 0x00 before a frame: empty frames are ignored",
         b"\x00" + hello),
        ("good_back_to_back", "frames back to back", hello + status_get + event),
        ("doubled_delimiters", "runs of delimiters between and after frames are ignored",
         b"\x00\x00" + hello + b"\x00\x00" + event + b"\x00\x00\x00"),
        ("only_delimiters", "nothing but delimiters: no output", b"\x00" * 10),
        ("bad_crc", "a CRC byte flipped: unattributed NAK bad_crc", _wire(bytes(bad_crc))),
        ("bad_crc_payload_bit", "a payload bit flipped", _wire(bytes(flipped))),
        ("bad_crc_then_good", "a bad frame, then a good one: the good one decodes", _wire(bytes(bad_crc)) + event),
        ("too_short_empty", "COBS of nothing: a 0-byte frame, dropped without NAK", b"\x01\x00" + hello),
        ("too_short_one_byte", "1 decoded byte", b"\x02\x10\x00" + hello),
        ("too_short_nine_bytes", "9 decoded bytes (header + 1), CRC valid over them",
         _wire(_with_crc(_header(0x10, 0x05, 3, 0)[:7])) + hello),
        ("too_long_encoded", "63 decoded bytes = 64 encoded: unattributed NAK frame_too_long",
         _wire(too_long_raw) + hello),
        ("too_long_run", "200 bytes without a delimiter: one error, then resync at the next delimiter",
         bytes([0x55]) * 200 + b"\x00" + hello),
        ("cobs_code_past_end", "a COBS code byte pointing past the end of the frame: dropped, no NAK",
         b"\x05\x11\x22\x00" + hello),
        ("garbage_before_first_delimiter", "a receiver that starts mid-stream: junk up to the first "
         "delimiter is one bad frame, then frames decode", bytes.fromhex("deadbeef") + b"\x00" + hello),
        ("mid_frame_start", "the last 6 bytes of a frame, then good frames",
         event[-6:] + hello + status_get),
        ("truncated_then_good", "a frame cut short (sender reset mid-frame), then a good one",
         event[:7] + b"\x00" + hello),
        ("zero_inside_frame", "a 0x00 injected inside a frame splits it in two bad frames; the next decodes",
         event[:5] + b"\x00" + event[5:] + hello),
        ("unknown_type", "valid CRC, type 0x3F not in the catalogue: NAK unknown_type with seq and type",
         _wire(_with_crc(_header(0x10, 0x3F, 0x0203, 0))) + hello),
        ("bad_length_long", "HELLO with a 3-byte payload at the same minor version: NAK bad_length",
         _wire(_with_crc(_header(0x10, 0x01, 0x0304, 0) + b"\x01\x00\x07")) + hello),
        ("bad_length_short", "CONFIG_SET with a 4-byte payload: NAK bad_length",
         _wire(_with_crc(_header(0x10, 0x04, 0x0305, 0) + b"\x10\x00\x00\x00")) + hello),
        ("bad_version_major_2", "version byte 0x20: NAK bad_version, detail = the device's major",
         _wire(_with_crc(_header(0x20, 0x01, 0x0406, 0) + b"\x02\x00")) + hello),
        ("bad_version_major_0", "version byte 0x00", _wire(_with_crc(_header(0x00, 0x01, 0x0407, 0) + b"\x01\x00"))
         + hello),
        ("newer_minor_appended_field", "version 1.1 HELLO with one appended byte: decoded, the byte ignored",
         _wire(_with_crc(_header(0x11, 0x01, 0x0508, 0) + b"\x01\x01\x2A"))),
        ("newer_minor_max_frame", "version 1.1 FL_BUZZER_VERDICT with 3 appended bytes: 62 decoded bytes, "
         "64 on the wire, the largest frame", _wire(_with_crc(b"\x11" + verdict_raw[1:-2] + b"\xAA\xBB\xCC"))),
        ("newer_minor_short", "version 1.1 HELLO with a 1-byte payload: still bad_length",
         _wire(_with_crc(_header(0x11, 0x01, 0x0509, 0) + b"\x01"))),
        ("unterminated_tail", "a frame, then 5 bytes and no delimiter yet: they stay pending",
         hello + bytes.fromhex("0410010101")),
    ]


def _expect_item(item) -> dict:
    if isinstance(item, Frame):
        return {"frame": {"message": item.msg.NAME, "version": item.version, "seq": item.seq,
                          "time_us": item.time_us, "fields": fields_of(item.msg)}}
    nak = item.nak
    return {"error": item.kind,
            "nak": None if nak is None else dict(zip(("cmd_seq", "cmd_type", "error", "detail"), nak))}


def streams() -> list[dict]:
    out = []
    for label, doc, data in stream_cases():
        dec = StreamDecoder()
        items = dec.feed(data)
        out.append({"label": label, "doc": doc, "stream_hex": data.hex(),
                    "expect": [_expect_item(i) for i in items], "pending": dec.pending})
    return out


# ---- algorithm tables ----------------------------------------------------------------------------------

BURST_CASES = [(1, 4, 12), (1, 1, 1), (1, 1, 12), (1, 12, 12), (3, 3, 8), (5, 20, 40), (1, 1, 40), (40, 40, 40),
               (2, 7, 9)]
LINE_CASES = [(1000, d) for d in (-1000, -600, -500, -499, -250, -1, 0, 1, 250, 499, 500, 999)] + \
             [(1, 0), (1, 1), (1, -1), (3, 1)]


RNG_SEEDS = [0, 1, 2, 42, 1000, 0x7FFFFFFF, 0xFFFFFFFF]
RNG_OUTPUTS = 8
# n = 2^31 + 1 rejects almost half of all outputs: an implementation that skips the rejection fails it
UNIFORM_NS = [1, 2, 3, 6, 1000, 234, 0x80000001, 0xFFFFFFFF]
UNIFORM_DRAWS = 6


def generator() -> dict:
    """The reference generator (SPEC 6.0): raw outputs by rng_seed, U(n) sequences by (seed, n), and
    the PCG project's own seeding for a check against its published demo output."""
    def outputs(g: Pcg32, k: int) -> list[int]:
        return [g.next32() for _ in range(k)]
    cases = [{"rng_seed": seed, "next32": outputs(Pcg32(seed), RNG_OUTPUTS)} for seed in RNG_SEEDS]
    uniform = []
    for seed in (1, 42):
        for n in UNIFORM_NS:
            g = Pcg32(seed)
            uniform.append({"rng_seed": seed, "n": n, "draws": [g.randrange(n) for _ in range(UNIFORM_DRAWS)]})
    return {"doc": "PCG32 XSH RR 64/32 seeded pcg32_srandom(rng_seed, RNG_STREAM); U(n) rejects "
                   "outputs below 2^32 mod n, then x mod n; each U(n) case starts from a fresh seed",
            "rng_stream": cat.RNG_STREAM,
            "pcg_demo": {"initstate": 42, "initseq": 54, "next32": outputs(Pcg32(42, 54), 6)},
            "cases": cases, "uniform": uniform}


def algorithms() -> dict:
    bursts = []
    for lo, mode, hi in BURST_CASES:
        w = burst_weights(lo, mode, hi)
        bursts.append({"lo": lo, "mode": mode, "hi": hi, "weights": w, "total": burst_total(lo, mode, hi)})
    chance = [{"base": b, "step": s, "chance_by_streak": [fire_chance(b, s, k) for k in range(8)]}
              for b, s in ((250, 150), (0, 0), (1000, 0), (0, 1), (999, 1))]
    line = [{"window": w, "d": d, "draws": 2 * w, "b_draws": cards_on_b(w, d)} for w, d in LINE_CASES]
    return {
        "generator": generator(),
        "burst_triangular": {
            "doc": "w(k) = (k-lo+1)*(hi-mode+1) for k <= mode, (hi-k+1)*(mode-lo+1) for k > mode; "
                   "r = U(total); k = first size whose cumulative weight exceeds r",
            "cases": bursts},
        "fire_chance": {"doc": "chance = min(1000, base + streak*step); fires iff U(1000) < chance",
                        "cases": chance},
        "line_model": {"doc": "d = t_b - t_a; card on B's side iff U(2W) < W + 2d; b_draws = how many of "
                              "the 2W draws put it there", "cases": line},
    }


# ---- the files ---------------------------------------------------------------------------------------

def build() -> dict:
    return {
        "protocol": f"{cat.MAJOR}.{cat.MINOR}",
        "catalog_crc": cat.CATALOG_CRC,
        "generator": "python -m tools.vectors --write (from protocol/messages.yaml)",
        "crc_check": {"algorithm": "CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no xorout",
                      "input_ascii": "123456789", "crc": crc16(b"123456789")},
        "frames": good_frames(),
        "streams": streams(),
        "algorithms": algorithms(),
    }


def render_json(data: dict | None = None) -> str:
    return json.dumps(build() if data is None else data, indent=1, ensure_ascii=False) + "\n"


def _c_bytes(b: bytes) -> str:
    if not b:
        return "{0}"
    rows = []
    for i in range(0, len(b), 16):
        rows.append("    " + ", ".join(f"0x{x:02X}" for x in b[i:i + 16]))
    return "{\n" + ",\n".join(rows) + "\n}"


def render_header(data: dict | None = None) -> str:
    data = build() if data is None else data
    sizes = [-1] * 256
    for m in cat.MESSAGES:
        sizes[m.id] = m.size
    out = [
        "/* uno-hil protocol %s golden vectors. Generated by python -m tools.vectors --write" % data["protocol"],
        " * from protocol/messages.yaml; do not edit. */",
        "#ifndef UHIL_VECTORS_H",
        "#define UHIL_VECTORS_H",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        f"#define UHIL_CATALOG_CRC 0x{cat.CATALOG_CRC:04X}u",
        f"#define UHIL_VERSION_BYTE 0x{cat.VERSION_BYTE:02X}u",
        "",
        "/* payload size of each type id; -1 = not a message of this version */",
        "static const int16_t uhil_payload_size[256] = {",
    ]
    for i in range(0, 256, 16):
        out.append("    " + ", ".join(f"{s:2d}" for s in sizes[i:i + 16]) + ",")
    out += ["};", "",
            "/* streams: expect[] lists what a receiver reports for each non-empty frame of the stream, in",
            " * order: \"frame\" for a good frame, else the error kind (SPEC.md section 2.6) */",
            "struct uhil_frame_vector { const char *label; uint8_t type; const uint8_t *raw; size_t raw_len;",
            "                           const uint8_t *wire; size_t wire_len; };",
            "struct uhil_stream_vector { const char *label; const uint8_t *stream; size_t stream_len;",
            "                            const char *const *expect; size_t n_expect; size_t pending; };", ""]
    for i, v in enumerate(data["frames"]):
        raw, wire = bytes.fromhex(v["raw_hex"]), bytes.fromhex(v["wire_hex"])
        out.append(f"static const uint8_t uhil_f{i}_raw[{len(raw)}] = {_c_bytes(raw)};")
        out.append(f"static const uint8_t uhil_f{i}_wire[{len(wire)}] = {_c_bytes(wire)};")
    out.append("static const struct uhil_frame_vector uhil_frame_vectors[] = {")
    for i, v in enumerate(data["frames"]):
        out.append(f'    {{"{v["label"]}", 0x{v["id"]:02X}, uhil_f{i}_raw, sizeof uhil_f{i}_raw, '
                   f'uhil_f{i}_wire, sizeof uhil_f{i}_wire}},')
    out += ["};", f"#define UHIL_N_FRAME_VECTORS {len(data['frames'])}", ""]
    for i, s in enumerate(data["streams"]):
        stream = bytes.fromhex(s["stream_hex"])
        kinds = [f'"{e.get("error", "frame")}"' for e in s["expect"]]
        out.append(f"/* {s['label']}: {s['doc']} */")
        out.append(f"static const uint8_t uhil_s{i}[{len(stream)}] = {_c_bytes(stream)};")
        out.append(f"static const char *const uhil_s{i}_expect[{max(1, len(kinds))}] = "
                   f"{{{', '.join(kinds) or '0'}}};")
    out.append("static const struct uhil_stream_vector uhil_stream_vectors[] = {")
    for i, s in enumerate(data["streams"]):
        out.append(f'    {{"{s["label"]}", uhil_s{i}, sizeof uhil_s{i}, uhil_s{i}_expect, {len(s["expect"])}, '
                   f'{s["pending"]}}},')
    out += ["};", f"#define UHIL_N_STREAM_VECTORS {len(data['streams'])}", ""]
    out += _generator_header(data["algorithms"]["generator"])
    out += ["#endif", ""]
    return "\n".join(out)


def _generator_header(gen: dict) -> list[str]:
    def words(xs) -> str:
        return "{" + ", ".join(f"0x{x:08X}u" for x in xs) + "}"
    out = ["/* the reference generator (SPEC.md 6.0): first outputs by rng_seed, and U(n) draws from a fresh",
           " * seed per case */",
           f"#define UHIL_RNG_STREAM 0x{gen['rng_stream']:08X}u",
           "struct uhil_rng_vector { uint32_t rng_seed; uint32_t next32[%d]; };" % RNG_OUTPUTS,
           "static const struct uhil_rng_vector uhil_rng_vectors[] = {"]
    out += [f"    {{0x{c['rng_seed']:08X}u, {words(c['next32'])}}}," for c in gen["cases"]]
    out += ["};", f"#define UHIL_N_RNG_VECTORS {len(gen['cases'])}",
            "struct uhil_uniform_vector { uint32_t rng_seed; uint32_t n; uint32_t draws[%d]; };" % UNIFORM_DRAWS,
            "static const struct uhil_uniform_vector uhil_uniform_vectors[] = {"]
    out += [f"    {{0x{c['rng_seed']:08X}u, 0x{c['n']:08X}u, {words(c['draws'])}}}," for c in gen["uniform"]]
    out += ["};", f"#define UHIL_N_UNIFORM_VECTORS {len(gen['uniform'])}", ""]
    return out


def outputs() -> dict[Path, str]:
    data = build()
    return {JSON_PATH: render_json(data), HEADER_PATH: render_header(data)}


def check() -> list[str]:
    return generated.stale(outputs())


def main(argv: list[str] | None = None) -> int:
    return generated.cli(argv, "tools.vectors", __doc__, outputs, check, VECTORS_DIR)


if __name__ == "__main__":
    sys.exit(main())
