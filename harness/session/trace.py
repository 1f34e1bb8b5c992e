"""JSON Lines traces: every frame in and out, enough to reconstruct a run without the device."""
from __future__ import annotations

import itertools
import json
import os
import threading
from pathlib import Path

from unohil.protocol import Frame, FrameError
from unohil.protocol.catalogue import enum_name

from unohil.harness.session.trace_cut import close_cut_trace


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
    """Writes to NAME.jsonl.part and renames on close, so a trace under its name is whole, or cut
    short by a failed write (a full disk) and then kept to its last whole record (trace_cut.py).

    Each writer has a file of its own: two devices with the same URL, two processes tracing into
    one directory or a device opened again get NAME-2, NAME-3, ... rather than one file written by
    both. A write that fails (a full disk) stops this trace, never the run: what reached the disk is
    kept, and failure says why, for the run to report."""

    _claimed: set[Path] = set()         # the traces this process has written or is writing
    _claim_lock = threading.Lock()

    def __init__(self, directory: str | os.PathLike, name: str):
        self.dir = Path(directory)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        self.path, self._part, fd = self._claim(safe)
        self._fh = open(fd, "w", encoding="utf-8", buffering=1 << 16)
        self.records = 0
        self._last_host_us: int | None = None      # the closing record of a cut trace is stamped with it
        self.failure: str | None = None     # "<part file>: <OS error>" once a write failed

    def _claim(self, safe: str) -> tuple[Path, Path, int]:
        with TraceWriter._claim_lock:
            for n in itertools.count(1):
                stem = safe if n == 1 else f"{safe}-{n}"
                path, part = self.dir / f"{stem}.jsonl", self.dir / f"{stem}.jsonl.part"
                if path in TraceWriter._claimed:
                    continue
                try:        # O_EXCL: a .part held by another writer (or left by a killed run) is not ours
                    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                except FileExistsError:
                    continue
                TraceWriter._claimed.add(path)
                return path, part, fd
        raise AssertionError("unreachable")

    def write(self, rec: dict) -> None:
        if self.failure is not None:
            return
        self._last_host_us = rec.get("host_us", self._last_host_us)
        try:
            self._fh.write(json.dumps(rec, separators=(",", ":")))
            self._fh.write("\n")
        except OSError as exc:
            self._fail(exc)
            return
        self.records += 1

    def _fail(self, exc: OSError) -> None:
        why = exc.strerror or str(exc)
        try:
            self._fh.close()
        except OSError:
            pass            # the rest of the buffer cannot be written either
        try:
            kept, fitted = close_cut_trace(self._part, self.path, why, self._last_host_us)
        except OSError as again:
            self.failure = f"{self._part}: {why} (the trace stopped; it could not be kept: {again.strerror})"
            return
        self.records = kept
        self.failure = (f"{self.path}: {why} (the trace stopped; kept to its last whole record, {kept} records"
                        + (", and a closing record says why)" if fitted else "; no room left to say why in it)"))

    def frame(self, direction: str, frame: Frame) -> None:
        self.write(frame_record(direction, frame))

    def error(self, host_us: int, err: FrameError) -> None:
        self.write({"host_us": host_us, "dir": "rx", "error": err.kind, "detail": err.detail, "bytes": err.raw_len})

    def note(self, host_us: int, text: str, **extra) -> None:
        self.write({"host_us": host_us, "dir": "note", "text": text, **extra})

    def close(self) -> None:
        if self._fh.closed:
            return
        try:
            self._fh.close()
            os.replace(self._part, self.path)
        except OSError as exc:
            self._fail(exc)
