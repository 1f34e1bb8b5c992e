"""Frame layer: CRC-16/CCITT-FALSE, COBS, limits, and the codec's error classification."""
from __future__ import annotations

import pytest

from unohil import protocol
from unohil.protocol import catalogue as cat
from unohil.protocol.codec import FrameError, StreamDecoder, decode, decode_raw, encode, encode_raw
from unohil.protocol.framing import cobs_decode, cobs_encode, crc16

M = protocol.msg


def crc16_bitwise(data: bytes) -> int:
    """The textbook bit-at-a-time CRC of SPEC.md section 2.2, for comparison."""
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def test_crc_check_value():
    assert crc16(b"123456789") == 0x29B1
    assert crc16_bitwise(b"123456789") == 0x29B1


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff" * 62, bytes(range(62)), b"uno-hil"])
def test_crc_matches_the_bitwise_definition(data):
    assert crc16(data) == crc16_bitwise(data)


def test_crc_is_appended_little_endian():
    raw = encode_raw(M.STATUS_GET(), 0x0102, 0x03040506)
    assert raw[:8] == bytes([0x10, 0x05, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03])
    assert raw[8:] == crc16(raw[:8]).to_bytes(2, "little")


# COBS examples from Cheshire & Baker and the Wikipedia article
@pytest.mark.parametrize("plain, coded", [
    (b"", b"\x01"),
    (b"\x00", b"\x01\x01"),
    (b"\x00\x00", b"\x01\x01\x01"),
    (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
    (b"\x11\x22\x33\x44", b"\x05\x11\x22\x33\x44"),
    (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
    (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255))),      # a full group ends the frame
])
def test_cobs_examples(plain, coded):
    assert cobs_encode(plain) == coded
    assert cobs_decode(coded) == plain


def test_worked_example_of_the_spec():
    wire = encode(M.HELLO(host_major=1, host_minor=0), 1, 0)
    assert wire.hex(" ").upper() == "04 10 01 01 01 01 01 01 02 01 03 6E EA 00"


def test_largest_frame_fits_one_usb_packet():
    biggest = max(cat.MESSAGES, key=lambda m: m.size)
    assert biggest.size <= cat.MAX_PAYLOAD
    assert cat.HEADER_SIZE + cat.MAX_PAYLOAD + cat.CRC_SIZE == cat.MAX_FRAME == 62
    # a 62-byte decoded frame with no zero byte is the worst case: 63 COBS bytes + delimiter
    assert len(cobs_encode(b"\x01" * cat.MAX_FRAME)) + 1 == cat.MAX_ENCODED == 64


def test_version_byte():
    assert cat.VERSION_BYTE == 0x10 == (cat.MAJOR << 4) | cat.MINOR


@pytest.mark.parametrize("wire, kind", [
    (b"", "too_short"),
    (b"\x00", "too_short"),
    (b"\x01", "too_short"),
    (b"\x05\x11\x22", "cobs"),
    (b"\x01" * 64, "too_long"),
])
def test_decode_error_kinds(wire, kind):
    with pytest.raises(FrameError) as exc:
        decode(wire)
    assert exc.value.kind == kind


def test_decode_raw_limits():
    with pytest.raises(FrameError) as exc:
        decode_raw(b"\x10" * 9)
    assert exc.value.kind == "too_short"
    with pytest.raises(FrameError) as exc:
        decode_raw(b"\x10" * 63)
    assert exc.value.kind == "too_long"


def test_errors_after_a_good_crc_carry_seq_and_type():
    body = bytes([0x10, 0x3F, 0x34, 0x12, 0, 0, 0, 0])
    with pytest.raises(FrameError) as exc:
        decode_raw(body + crc16(body).to_bytes(2, "little"))
    e = exc.value
    assert (e.kind, e.seq, e.type_id) == ("unknown_type", 0x1234, 0x3F)
    assert e.nak == (0x1234, 0x3F, cat.ENUM_VALUES["error"]["unknown_type"], 0)


def test_nak_rules():
    """SPEC.md 2.6: which bad frames a device answers, and how."""
    errors = cat.ENUM_VALUES["error"]
    assert FrameError("cobs").nak is None
    assert FrameError("too_short").nak is None
    assert FrameError("bad_crc").nak == (0xFFFF, 0xFF, errors["bad_crc"], 0)
    assert FrameError("too_long").nak == (0xFFFF, 0xFF, errors["frame_too_long"], 0)
    assert FrameError("bad_version", seq=5, type_id=1).nak == (5, 1, errors["bad_version"], cat.MAJOR)
    assert FrameError("bad_length", seq=5, type_id=4).nak == (5, 4, errors["bad_length"], 0)
    for kind in ("bad_crc", "unknown_type", "bad_length", "bad_version", "too_long"):
        assert FrameError(kind).nak_code == errors[{"too_long": "frame_too_long"}.get(kind, kind)]


def test_newer_minor_may_append_fields_older_may_not_shorten():
    body = bytes([0x11, 0x01, 1, 0, 0, 0, 0, 0, 1, 1, 0x2A])
    f = decode_raw(body + crc16(body).to_bytes(2, "little"))
    assert f.msg == M.HELLO(1, 1) and f.version == 0x11
    same_minor = bytes([0x10]) + body[1:]
    with pytest.raises(FrameError) as exc:
        decode_raw(same_minor + crc16(same_minor).to_bytes(2, "little"))
    assert exc.value.kind == "bad_length"


def test_encode_rejects_out_of_range_fields():
    with pytest.raises(ValueError, match="HELLO"):
        encode(M.HELLO(host_major=256, host_minor=0), 0, 0)
    with pytest.raises(ValueError, match="SD_VERDICT"):
        encode(M.SD_VERDICT(reaction_a_us=2**31), 0, 0)
    with pytest.raises(ValueError, match="FL_BUZZER_VERDICT"):
        encode(M.FL_BUZZER_VERDICT(reaction_us=(0,) * 7 + (-(2**31) - 1,)), 0, 0)


def test_encode_wraps_seq_and_time():
    f = decode(encode(M.STATUS_GET(), 0x10001, 2**32 + 5))
    assert (f.seq, f.time_us) == (1, 5)


def test_frame_attributes_and_equality():
    m = M.SOUND(event_seq=3, sound=0, arg=2)
    f = decode(encode(m, 9, 1000))
    assert (f.version, f.seq, f.time_us, f.msg, f.host_us, f.dev_us) == (0x10, 9, 1000, m, None, None)
    assert f.name == "SOUND" and f.raw == encode_raw(m, 9, 1000)
    f.host_us, f.dev_us = 1, 2                       # receivers fill these in
    assert f == decode(encode(m, 9, 1000))
    assert isinstance(f.msg, M.SOUND) and f.msg.to_dict() == {"event_seq": 3, "sound": 0, "arg": 2}


def test_array_fields_decode_as_tuples():
    r = tuple(range(-4, 4))
    f = decode(encode(M.FL_BUZZER_VERDICT(reaction_us=r), 0, 0))
    assert f.msg.reaction_us == r


def test_stream_decoder_stats():
    good = encode(M.STATUS_GET(), 1, 1)
    dec = StreamDecoder()
    out = dec.feed(b"\x00" + good + b"\x05\x11\x00" + good + b"\x01\x02")
    assert [getattr(i, "kind", "frame") for i in out] == ["frame", "cobs", "frame"]
    s = dec.stats
    assert (s.frames, s.bad_frames, s.errors["cobs"], s.dropped_bytes) == (2, 1, 1, 3)
    assert s.bytes_in == 1 + 2 * len(good) + 3 + 2
    assert dec.pending == 2
    dec.reset()
    assert dec.pending == 0


def test_pending_never_exceeds_one_frame():
    dec = StreamDecoder()
    for _ in range(1000):
        dec.feed(b"\x42")
        assert dec.pending <= cat.MAX_ENCODED - 1
    assert dec.stats.errors["too_long"] == 1
    out = dec.feed(b"\x00" + encode(M.STATUS_GET(), 2, 2))
    assert len(out) == 1 and out[0].seq == 2
