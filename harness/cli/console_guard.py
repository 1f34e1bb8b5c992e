"""A console that fails stops only the console.

`unohil run ... | head -1` closes the pipe after one line (EPIPE); `> /dev/full` or a full disk fails
every write (ENOSPC). Either used to end the command with a traceback or a silent exit 1, before
the results files were written. Here stdout is wrapped once, for the whole command: the first
write or flush that fails is remembered, everything after it is dropped, and the command goes on
to write its files; app.py then says on stderr what happened to the console and exits 2 (an output
that could not be written), unless a signal's status says more.
"""
from __future__ import annotations

import errno
import os
import sys


class GuardedStream:
    """A text stream whose write and flush never raise OSError: the first failure stops it."""

    def __init__(self, stream):
        self._stream = stream
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if self.failure is None:
            try:
                self._stream.flush()
            except OSError as exc:
                self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self.failure = exc
        # What the stream still buffers would fail again when the interpreter flushes it at exit
        # ("Exception ignored ... BrokenPipeError"): from now on its descriptor leads nowhere.
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass        # a stream with no descriptor (a test's capture): nothing is flushed at exit

    def __getattr__(self, name: str):
        return getattr(self._stream, name)      # isatty, fileno, encoding: what rich and print ask


def describe(exc: OSError) -> str:
    code = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno is not None else "?"
    why = exc.strerror or str(exc)
    if exc.errno == errno.EPIPE:
        why += ": its reader went away (`| head`)"
    return f"{why} [{code}]"


def install() -> GuardedStream | None:
    """Wrap sys.stdout (once); the guard, to ask afterwards whether the console failed."""
    if isinstance(sys.stdout, GuardedStream) or sys.stdout is None:
        return None
    sys.stdout = GuardedStream(sys.stdout)
    return sys.stdout


def uninstall(guard: GuardedStream | None) -> None:
    if guard is not None and sys.stdout is guard:
        sys.stdout = guard._stream


def console_failure(guard: GuardedStream | None) -> str | None:
    """One line for stderr when the console failed, else None."""
    if guard is None or guard.failure is None:
        return None
    return (f"error: stdout: {describe(guard.failure)}; the console output stopped there, the command went on "
            f"and wrote its results files")
