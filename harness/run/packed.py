"""A finished race's frames, packed into one bytes object until someone reads them.

A long run keeps every race until it ends (its scenarios' comparisons, the results files), and a
race's frames as objects cost ~8 KB (twenty-odd Frames, their messages, their raw bytes): most of
the memory a race holds. Packed, each is its raw bytes and two times, ~40 bytes; reading them (a
report, `unohil replay`, a comparison across races) decodes them again, which costs microseconds.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence

from unohil.protocol import Frame
from unohil.protocol.codec import decode_raw

_HEAD = struct.Struct("<qqH")       # host_us, dev_us, length of the raw frame
_NONE = -(1 << 63)                  # a time not filled in


class PackedFrames(Sequence):
    __slots__ = ("_blob", "_n")

    def __init__(self, frames: list[Frame]):
        parts = []
        for f in frames:
            parts.append(_HEAD.pack(_NONE if f.host_us is None else f.host_us,
                                    _NONE if f.dev_us is None else f.dev_us, len(f.raw)))
            parts.append(f.raw)
        self._blob = b"".join(parts)
        self._n = len(frames)

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        blob, at = self._blob, 0
        while at < len(blob):
            host_us, dev_us, n = _HEAD.unpack_from(blob, at)
            at += _HEAD.size
            f = decode_raw(blob[at:at + n])
            at += n
            f.host_us = None if host_us == _NONE else host_us
            f.dev_us = None if dev_us == _NONE else dev_us
            yield f

    def __getitem__(self, i):
        return list(self)[i]


def pack(frames) -> Sequence:
    """frames packed, when each can be decoded again from its raw bytes (else as they are)."""
    if isinstance(frames, PackedFrames) or not all(f.raw for f in frames):
        return frames
    return PackedFrames(frames)
