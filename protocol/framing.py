"""Frame layer: CRC-16/CCITT-FALSE and COBS with a 0x00 delimiter.

A frame on the wire is COBS(header + payload + CRC16-LE) followed by 0x00.
"""
from __future__ import annotations

import binascii

from cobs import cobs as _cobs

CobsError = _cobs.DecodeError


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no final xor."""
    return binascii.crc_hqx(data, crc)


def cobs_encode(data: bytes) -> bytes:
    return _cobs.encode(data)


def cobs_decode(data: bytes) -> bytes:
    """Raises CobsError on a malformed block."""
    return _cobs.decode(data)
