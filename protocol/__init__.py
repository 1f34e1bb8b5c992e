"""uno-hil protocol 1.0: catalogue, framing and codec. Pure: bytes in, messages out."""
from . import catalogue
from .catalogue import (BY_ID, BY_NAME, CATALOG_CRC, ENUMS, MAJOR, MESSAGES, MINOR, NONE_I32, NONE_U8,
                        NONE_U16, NONE_U32, PARAMS, PARAMS_BY_ID, PARAMS_BY_NAME)
from .codec import DecoderStats, Frame, FrameError, StreamDecoder, decode, decode_raw, encode, encode_raw
from .devtime import Unwrapper

#: message classes by name: protocol.msg.HELLO(host_major=1, host_minor=0)
msg = type("msg", (), {m.name: m.cls for m in MESSAGES})

__all__ = [
    "catalogue", "BY_ID", "BY_NAME", "CATALOG_CRC", "ENUMS", "MAJOR", "MESSAGES", "MINOR", "NONE_I32",
    "NONE_U8", "NONE_U16", "NONE_U32", "PARAMS", "PARAMS_BY_ID", "PARAMS_BY_NAME", "DecoderStats", "Frame",
    "FrameError", "StreamDecoder", "decode", "decode_raw", "encode", "encode_raw", "Unwrapper", "msg",
]
