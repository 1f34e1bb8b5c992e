"""A trace whose writes failed (a full disk) is kept to its last whole record, not lost.

The records up to the failure are what someone needs to see why the run went as it did. What the
file holds past its last newline is half a record (a buffer flushed in part): it is cut off, and a
closing record says why the trace stopped, when the disk leaves room for those few bytes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

_CHUNK = 1 << 16


def cut_to_last_record(path: Path) -> int:
    """Truncate path after its last newline; how many whole records (lines) it keeps."""
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - _CHUNK)
            fh.seek(start)
            at = fh.read(end - start).rfind(b"\n")
            if at >= 0:
                end = start + at + 1
                break
            end = start
        if end != size:
            fh.truncate(end)
        fh.seek(0)
        lines = 0
        while fh.tell() < end:
            lines += fh.read(min(_CHUNK, end - fh.tell())).count(b"\n")
        return lines


def close_cut_trace(part: Path, final: Path, why: str, host_us: int | None) -> tuple[int, bool]:
    """Keep the .part file at its final name, ending with a record saying why it stopped.
    Returns the records kept (the closing one not counted) and whether the closing record fit."""
    kept = cut_to_last_record(part)
    closing = json.dumps({"host_us": host_us, "dir": "note", "text": f"the trace stopped here: {why}",
                          "stopped": why, "records": kept}, separators=(",", ":")) + "\n"
    fitted = True
    try:
        fd = os.open(part, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, closing.encode())
        finally:
            os.close(fd)
    except OSError:
        fitted = False
        cut_to_last_record(part)        # half a closing record is no record
    os.replace(part, final)
    return kept, fitted
