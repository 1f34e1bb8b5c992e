"""An exclusive lock on an open file that the OS drops with its holder, on any platform.

- fcntl.flock on the whole file, where there is fcntl (POSIX);
- msvcrt.locking on Windows, on one byte at LOCK_OFFSET, past anything written into the file:
  Windows byte-range locks are mandatory, and a lock on the text itself would keep the next opener
  from reading who holds it;
- os.lockf (no fcntl module needed) on a POSIX Python without fcntl. Its locks belong to the
  process, not the descriptor: there a process does not refuse itself a lock it holds.
Either way a process that dies holding the lock loses it, so a crashed run never leaves a unit
claimed. The file's text is read and written by position (read_text, write_text): os.pread and
os.pwrite do not exist on Windows.
"""
from __future__ import annotations

import os

LOCK_OFFSET = 1 << 20          # the holder's text is a few hundred bytes

try:
    import fcntl
except ImportError:
    fcntl = None


def _flock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _msvcrt_lock(fd: int) -> None:
    import msvcrt
    os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)          # msvcrt.locking locks from the current position
    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)


def _lockf(fd: int) -> None:
    os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
    os.lockf(fd, os.F_TLOCK, 1)


_lock = _flock if fcntl is not None else _msvcrt_lock if os.name == "nt" else _lockf


def try_lock(fd: int) -> bool:
    """Take the lock without waiting: True if taken, False if another process holds it."""
    try:
        _lock(fd)
    except OSError:
        return False
    return True


def read_text(fd: int, limit: int = 4096) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, limit).decode("utf-8", "replace")


def write_text(fd: int, text: str) -> None:
    """Replace the file's text (the lock, held elsewhere in or on the file, stays)."""
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, text.encode())
