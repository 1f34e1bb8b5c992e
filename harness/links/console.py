"""A unit's debug console: the text a firmware prints on a second UART, read beside the protocol link.

A ConsoleReader reads a byte stream on a thread of its own, so a console nobody looks at never backs up
into the firmware (a UART transmitter that waits on a full host buffer stalls the unit). Each line is
stamped with the host time, in µs, of the read that completed it, the stamp the protocol link gives its
bytes, so the two streams can be laid side by side and, through the clock sync, on device time.
"""
from __future__ import annotations

import socket
import threading
import time
from collections import deque
from dataclasses import dataclass

MAX_LINES = 20_000             # the oldest lines go first; a race's worth of log is a few dozen
MAX_LINE = 1000                # a line without a newline is cut here


@dataclass(frozen=True)
class ConsoleLine:
    host_us: int
    text: str


class ConsoleReader:
    """Reads `sock` until it closes; lines() gives the lines so far, oldest first."""

    def __init__(self, sock: socket.socket, name: str):
        self.name = name
        self._sock = sock
        self._lines: deque[ConsoleLine] = deque(maxlen=MAX_LINES)
        self._partial = b""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"console {name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                return
            if not data:
                return
            self._take(data, time.monotonic_ns() // 1000)

    def _take(self, data: bytes, host_us: int) -> None:
        text = self._partial + data
        *complete, self._partial = text.split(b"\n")
        if len(self._partial) > MAX_LINE:
            complete.append(self._partial)
            self._partial = b""
        with self._lock:
            for raw in complete:
                line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
                if line:
                    self._lines.append(ConsoleLine(host_us, line))

    def lines(self, since_us: int | None = None) -> list[ConsoleLine]:
        with self._lock:
            return [ln for ln in self._lines if since_us is None or ln.host_us >= since_us]


def last_words(link, since_us: int) -> str:
    """For a message about a unit that did not answer: the last line its console printed since since_us
    (host µs), as "; the unit's console said last: '...'", or "" for a link without a console or a
    console that said nothing. A firmware that knows why it failed (a ring overrun, a fault) says so there."""
    console = getattr(link, "console", None)
    if console is None:
        return ""
    lines = console.lines(since_us)
    if not lines:
        return ""
    return f"; the unit's console said last: {lines[-1].text[:200]!r}"
