"""Writing result files: whole or not at all."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.errors import OutputError


def check_writable(path: str | os.PathLike, what: str, directory: bool = False) -> Path:
    """Fail before anything runs if an output cannot be written."""
    p = Path(path)
    target_dir = p if directory else (p.parent if str(p.parent) else Path("."))
    if directory:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{what} {p}: cannot create the directory: {exc.strerror}") from None
    if not target_dir.is_dir():
        raise OutputError(f"{what} {p}: the directory {target_dir} does not exist")
    if p.is_dir() and not directory:
        raise OutputError(f"{what} {p}: is a directory, give a file name")
    try:
        fd, probe = tempfile.mkstemp(dir=target_dir, prefix=".unohil-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"{what} {p}: cannot write in {target_dir}: {exc.strerror}") from None
    return p


def write_atomic(path: str | os.PathLike, text: str) -> None:
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
