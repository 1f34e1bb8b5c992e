"""Typed messages <-> bytes. Pure: no I/O, no threads, no clocks."""
from __future__ import annotations

import struct
from typing import Any

from . import catalogue as cat
from .framing import CobsError, cobs_decode, cobs_encode
from binascii import crc_hqx as _crc_hqx

_HEADER = struct.Struct("<BBHI")
_CRC = struct.Struct("<H")
_HDR = cat.HEADER_SIZE
_CRCN = cat.CRC_SIZE
_MIN_FRAME = _HDR + _CRCN
_MAX_FRAME = cat.MAX_FRAME
_MAX_RUN = cat.MAX_ENCODED - 1          # encoded bytes before the delimiter
_BY_ID = cat.BY_ID
_cobs_decode = cobs_decode.__globals__["_cobs"].decode


class FrameError(Exception):
    """A frame that cannot be decoded. The only exception the decoders raise.

    kind is one of: cobs, too_short, too_long, bad_crc, bad_version, unknown_type,
    bad_length. seq and type_id are set when the header is trustworthy (CRC passed).
    """

    KINDS = ("cobs", "too_short", "too_long", "bad_crc", "bad_version", "unknown_type", "bad_length")

    def __init__(self, kind: str, detail: str = "", seq: int | None = None, type_id: int | None = None,
                 raw_len: int = 0):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.seq = seq
        self.type_id = type_id
        self.crc_swapped = False    # bad_crc only: the frame's CRC is the right one, bytes swapped
        self.raw_len = raw_len

    #: NAK code a device answers with, when it answers at all
    @property
    def nak_code(self) -> int:
        return _NAK_CODES.get(self.kind, 1)

    @property
    def nak(self) -> tuple[int, int, int, int] | None:
        """(cmd_seq, cmd_type, error, detail) of the NAK a device answers this frame with (SPEC.md,
        "Receiver behaviour on bad input"); None when the frame is dropped without an answer
        (COBS errors and too-short frames: line noise)."""
        if self.kind in ("bad_crc", "too_long"):
            return (0xFFFF, 0xFF, _NAK_CODES[self.kind], 0)
        if self.kind in ("unknown_type", "bad_length", "bad_version") and self.seq is not None:
            return (self.seq, self.type_id, _NAK_CODES[self.kind], cat.MAJOR if self.kind == "bad_version" else 0)
        return None


_NAK_CODES = {k: cat.ENUM_VALUES["error"][e] for k, e in (
    ("bad_crc", "bad_crc"), ("unknown_type", "unknown_type"), ("bad_length", "bad_length"),
    ("bad_version", "bad_version"), ("too_long", "frame_too_long"))}


class Frame:
    """A decoded frame: header fields plus the typed message.

    host_us and dev_us are left for a receiver to fill in: the host time of the
    read that completed the frame, and the unwrapped device time.

    raw is the frame as read (header, payload, CRC; no COBS), b"" for one made by hand. A frame an
    in-process unit handed over as an object (handed()) was never bytes: its raw is encoded when
    first asked for (a finished race's frames are packed from it), never on the way to the waiter.
    """

    __slots__ = ("version", "seq", "time_us", "msg", "host_us", "dev_us", "_raw")

    def __init__(self, version: int, seq: int, time_us: int, msg: Any, raw: bytes = b"",
                 host_us: int | None = None):
        self.version = version
        self.seq = seq
        self.time_us = time_us
        self.msg = msg
        self.host_us = host_us
        self.dev_us: int | None = None
        self._raw = raw

    @property
    def raw(self) -> bytes:
        raw = self._raw
        if raw is None:
            raw = self._raw = encode_raw(self.msg, self.seq, self.time_us, self.version)
        return raw

    @property
    def name(self) -> str:
        return self.msg.NAME

    def __repr__(self) -> str:
        return f"Frame(seq={self.seq}, t={self.time_us}, {self.msg!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Frame) and self.seq == other.seq and self.time_us == other.time_us
                and self.msg == other.msg and self.version == other.version)


def _flatten(msg: Any) -> tuple:
    out: list = []
    for v in msg:
        if isinstance(v, (tuple, list)):
            out.extend(v)
        else:
            out.append(v)
    return tuple(out)


def _regroup(mdef: cat.MessageDef, flat: tuple) -> tuple:
    out: list = []
    i = 0
    for f in mdef.fields:
        if f.count > 1:
            out.append(tuple(flat[i:i + f.count]))
            i += f.count
        else:
            out.append(flat[i])
            i += 1
    return tuple(out)


# ---- compiled per-message tables (built once from the catalogue) ----------------------------------
#
# _ENC: message class -> (pack of header + payload, has_arrays)
# _DEC: type id -> (decoded length incl. CRC, unpack_from of the whole frame: version, type, seq,
#       time, payload..., CRC; message class; MessageDef if it has arrays)
# A frame that does not match _DEC exactly (other version byte, other length, bad CRC, ...) goes the
# slow way, through decode_raw, which classifies the error.
_ENC: dict = {}
_DEC: dict = {}
for _m in cat.MESSAGES:
    _ENC[_m.cls] = (struct.Struct("<BBHI" + _m.struct.format[1:]).pack, _m.has_arrays)
    _DEC[_m.id] = (_HDR + _m.size + _CRCN, struct.Struct("<BBHI" + _m.struct.format[1:] + "H").unpack_from,
                   _m.cls, _m if _m.has_arrays else None)
del _m
_VERSION = cat.VERSION_BYTE
# COBS adds one byte to a run of up to 254 bytes, and no frame is longer: on the wire every frame of a
# message is its header, payload and CRC, one byte of COBS and the delimiter.
assert _MAX_FRAME < 254
WIRE_SIZE = {_m.cls: _HDR + _m.size + _CRCN + 2 for _m in cat.MESSAGES}
_tuple_new = tuple.__new__
_crc_pack = _CRC.pack
_new_frame = object.__new__
_cobs_encode = cobs_encode.__globals__["_cobs"].encode


def encode_payload(msg: Any) -> bytes:
    mdef = msg.DEF
    try:
        return mdef.struct.pack(*(_flatten(msg) if mdef.has_arrays else msg))
    except struct.error as exc:
        raise ValueError(f"{mdef.name}: a field is out of range or mistyped: {exc} ({msg!r})") from None


def encode(msg: Any, seq: int, time_us: int, version: int = cat.VERSION_BYTE) -> bytes:
    """The bytes to put on the wire for one frame, delimiter included."""
    return _cobs_encode(encode_raw(msg, seq, time_us, version)) + b"\x00"


def encode_raw(msg: Any, seq: int, time_us: int, version: int = cat.VERSION_BYTE) -> bytes:
    """header + payload + CRC, not yet COBS-encoded."""
    try:
        pack, has_arrays = _ENC[msg.__class__]
        body = pack(version, msg.ID, seq & 0xFFFF, time_us & 0xFFFFFFFF, *(_flatten(msg) if has_arrays else msg))
    except (KeyError, struct.error):
        body = _HEADER.pack(version, msg.ID, seq & 0xFFFF, time_us & 0xFFFFFFFF) + encode_payload(msg)
    return body + _crc_pack(_crc_hqx(body, 0xFFFF))


def handed(msg: Any, seq: int, time_us: int) -> Frame:
    """The frame an in-process unit hands over as an object instead of its bytes (no encoding, no
    decoding: raw is encoded only if asked for). time_us is the header's u32 device time."""
    f = _new_frame(Frame)
    f.version, f.seq, f.time_us, f.msg, f.host_us, f.dev_us, f._raw = _VERSION, seq, time_us, msg, None, None, None
    return f


def decode_raw(raw: bytes) -> Frame:
    """Decode header + payload + CRC (already COBS-decoded). Raises FrameError."""
    n = len(raw)
    if n < _MIN_FRAME:
        raise FrameError("too_short", f"{n} bytes, the minimum is {_MIN_FRAME}", raw_len=n)
    if n > _MAX_FRAME:
        raise FrameError("too_long", f"{n} bytes, the maximum is {_MAX_FRAME}", raw_len=n)
    body = raw[:-_CRCN]
    want = raw[-2] | (raw[-1] << 8)
    got = _crc_hqx(body, 0xFFFF)
    if got != want:
        err = FrameError("bad_crc", f"computed 0x{got:04X}, frame says 0x{want:04X}", raw_len=n)
        err.crc_swapped = want == ((got >> 8) | (got & 0xFF) << 8)   # the CRC sent big-endian
        raise err
    version, type_id, seq, time_us = _HEADER.unpack_from(body)
    if version >> 4 != cat.MAJOR:
        raise FrameError("bad_version", f"protocol {version >> 4}.{version & 15}, expected {cat.MAJOR}.x",
                         seq=seq, type_id=type_id, raw_len=n)
    mdef = _BY_ID.get(type_id)
    if mdef is None:
        raise FrameError("unknown_type", f"type 0x{type_id:02X}", seq=seq, type_id=type_id, raw_len=n)
    plen = n - _HDR - _CRCN
    if plen != mdef.size:
        # A newer minor version may append fields; older receivers ignore them.
        if not (plen > mdef.size and (version & 15) > cat.MINOR):
            raise FrameError("bad_length", f"{mdef.name} payload {plen} bytes, expected {mdef.size}",
                             seq=seq, type_id=type_id, raw_len=n)
    values = mdef.struct.unpack_from(body, _HDR)
    if mdef.has_arrays:
        values = _regroup(mdef, values)
    return Frame(version, seq, time_us, _tuple_new(mdef.cls, values), raw)


def _decode_fast(raw: bytes) -> Frame | None:
    """The common case: a well-formed frame of exactly this protocol version. None otherwise
    (decode_raw then classifies the error, or accepts a newer minor version)."""
    entry = _DEC.get(raw[1]) if len(raw) > 1 else None
    if entry is None or len(raw) != entry[0]:
        return None
    v = entry[1](raw)
    if v[0] != _VERSION or _crc_hqx(raw[:-2], 0xFFFF) != v[-1]:
        return None
    values = v[4:-1] if entry[3] is None else _regroup(entry[3], v[4:-1])
    return Frame(_VERSION, v[2], v[3], _tuple_new(entry[2], values), raw)


def decode(encoded: bytes) -> Frame:
    """Decode one wire frame (with or without its trailing delimiter). Raises FrameError."""
    if encoded[-1:] == b"\x00":
        encoded = encoded[:-1]
    if len(encoded) > _MAX_RUN:
        raise FrameError("too_long", f"{len(encoded)} encoded bytes, the maximum is {_MAX_RUN}",
                         raw_len=len(encoded))
    try:
        raw = _cobs_decode(encoded)
    except CobsError as exc:
        raise FrameError("cobs", str(exc), raw_len=len(encoded)) from None
    frame = _decode_fast(raw)
    return frame if frame is not None else decode_raw(raw)


class DecoderStats:
    __slots__ = ("frames", "bad_frames", "dropped_bytes", "bytes_in", "errors")

    def __init__(self) -> None:
        self.frames = 0
        self.bad_frames = 0
        self.dropped_bytes = 0
        self.bytes_in = 0
        self.errors: dict[str, int] = {k: 0 for k in FrameError.KINDS}

    def as_dict(self) -> dict:
        return {"frames": self.frames, "bad_frames": self.bad_frames, "dropped_bytes": self.dropped_bytes,
                "bytes_in": self.bytes_in, "errors": dict(self.errors)}


class StreamDecoder:
    """Feed arbitrary chunks, get frames and errors back, in stream order.

    Memory is bounded: at most one maximum-size frame is held between calls;
    a run of bytes longer than that is discarded up to the next delimiter.
    feed() never raises.
    """

    __slots__ = ("_buf", "_discarding", "stats")

    def __init__(self) -> None:
        self._buf = b""
        self._discarding = False
        self.stats = DecoderStats()

    def feed(self, data: bytes, host_us: int | None = None) -> list:
        """Return a list of Frame and FrameError objects completed by data.
        host_us: the host time of the read that returned data, put in each Frame."""
        stats = self.stats
        stats.bytes_in += len(data)
        if self._buf:
            data = self._buf + data
        parts = data.split(b"\x00")
        rest = parts.pop()
        out: list = []
        if parts:
            if self._discarding:
                # the tail of an over-long run: drop it up to its delimiter
                self._discarding = False
                stats.dropped_bytes += len(parts[0]) + 1
                parts[0] = b""
            append = out.append
            cobs_decode_, dec_get, crc, new, new_frame = (_cobs_decode, _DEC.get, _crc_hqx, _tuple_new,
                                                          object.__new__)
            good = 0
            for part in parts:
                if not part:
                    continue                  # empty frame: a leading or doubled delimiter
                # Fast path, _decode_fast inlined: a well-formed frame of this protocol version.
                # Anything else (a COBS error, a short or over-long frame, another version, a bad
                # CRC) goes the slow way below, which classifies it.
                try:
                    raw = cobs_decode_(part)
                    entry = dec_get(raw[1])
                except (CobsError, IndexError):
                    entry = None
                if entry is not None and len(raw) == entry[0]:
                    v = entry[1](raw)         # version, type, seq, time, payload..., crc
                    if v[0] == _VERSION and crc(raw[:-2], 0xFFFF) == v[-1]:
                        values = v[4:-1]
                        if entry[3] is not None:
                            values = _regroup(entry[3], values)
                        # Frame(...) without the call to __init__: a third cheaper, once per frame
                        f = new_frame(Frame)
                        f.version, f.seq, f.time_us, f.msg, f.host_us, f.dev_us, f._raw = (
                            _VERSION, v[2], v[3], new(entry[2], values), host_us, None, raw)
                        append(f)
                        good += 1
                        continue
                try:                          # the slow way: classifies the error
                    frame = decode(part)
                except FrameError as err:
                    stats.bad_frames += 1
                    stats.errors[err.kind] += 1
                    stats.dropped_bytes += len(part) + 1
                    append(err)
                    continue
                good += 1
                frame.host_us = host_us
                append(frame)
            stats.frames += good
        if len(rest) > _MAX_RUN:
            if not self._discarding:
                err = FrameError("too_long", f"more than {_MAX_RUN} bytes without a delimiter",
                                 raw_len=len(rest))
                stats.bad_frames += 1
                stats.errors["too_long"] += 1
                out.append(err)
            self._discarding = True
            stats.dropped_bytes += len(rest)
            rest = b""
        elif self._discarding:
            stats.dropped_bytes += len(rest)
            rest = b""
        self._buf = rest
        return out

    @property
    def pending(self) -> int:
        """Bytes held waiting for a delimiter."""
        return len(self._buf)

    def reset(self) -> None:
        self._buf = b""
        self._discarding = False
