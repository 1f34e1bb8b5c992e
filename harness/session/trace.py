"""JSON Lines traces: every frame in and out, enough to reconstruct a run without the device."""
from __future__ import annotations

import json
import os
from pathlib import Path

from protocol import Frame, FrameError
from protocol.catalogue import enum_name


def frame_record(direction: str, frame: Frame) -> dict:
    msg = frame.msg
    fields = msg.to_dict()
    names = {}
    for f in msg.DEF.fields:
        if f.enum and f.count == 1:
            names[f.name] = enum_name(f.enum, fields[f.name])
    rec = {"host_us": frame.host_us, "dev_us": frame.dev_us, "dev_raw": frame.time_us, "dir": direction,
           "seq": frame.seq, "type": msg.NAME, "fields": fields}
    if names:
        rec["names"] = names
    return rec


class TraceWriter:
    """Writes to NAME.jsonl.part and renames on close, so a trace is whole or absent."""

    def __init__(self, directory: str | os.PathLike, name: str):
        self.dir = Path(directory)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        self.path = self.dir / f"{safe}.jsonl"
        self._part = self.dir / f"{safe}.jsonl.part"
        self._fh = open(self._part, "w", encoding="utf-8", buffering=1 << 16)
        self.records = 0

    def write(self, rec: dict) -> None:
        self._fh.write(json.dumps(rec, separators=(",", ":")))
        self._fh.write("\n")
        self.records += 1

    def frame(self, direction: str, frame: Frame) -> None:
        self.write(frame_record(direction, frame))

    def error(self, host_us: int, err: FrameError) -> None:
        self.write({"host_us": host_us, "dir": "rx", "error": err.kind, "detail": err.detail, "bytes": err.raw_len})

    def note(self, host_us: int, text: str, **extra) -> None:
        self.write({"host_us": host_us, "dir": "note", "text": text, **extra})

    def close(self) -> None:
        if self._fh.closed:
            return
        self._fh.close()
        os.replace(self._part, self.path)
