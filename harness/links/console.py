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
MAX_WAITING = 2_000            # lines kept waiting for a clock sync; beyond it the oldest are given up on


@dataclass(frozen=True)
class ConsoleLine:
    host_us: int
    text: str


class ConsoleReader:
    """Reads `source` (a socket, or a function returning the next bytes, b"" at the end) until it ends;
    lines() gives the lines so far, oldest first. `now_us` is the host clock it stamps with: the monotonic
    clock real links use, unless given (a virtual link's)."""

    def __init__(self, source, name: str, on_close=None, now_us=None):
        self.name = name
        self._now_us = now_us or (lambda: time.monotonic_ns() // 1000)
        self._read = source.recv if isinstance(source, socket.socket) else source
        self._on_close = on_close
        self._lines: deque[ConsoleLine] = deque(maxlen=MAX_LINES)
        self._partial = b""
        self._total = 0             # lines ever taken in: a consumer's cursor counts in these
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"console {name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                data = self._read(4096)
            except OSError:
                return
            if not data:
                return
            self._take(data, self._now_us())

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

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
                    self._total += 1

    def after(self, cursor: int) -> tuple[list[ConsoleLine], int]:
        """The lines after the first `cursor` ever read (those still kept), and the new cursor."""
        with self._lock:
            fresh = min(self._total - cursor, len(self._lines))
            return (list(self._lines)[len(self._lines) - fresh:] if fresh > 0 else []), self._total

    def lines(self, since_us: int | None = None) -> list[ConsoleLine]:
        with self._lock:
            return [ln for ln in self._lines if since_us is None or ln.host_us >= since_us]


class ConsoleTimes:
    """Console lines placed on the unit's clock. Each line becomes a record {"host_us", "dev_us", "text"}
    (plus `fields`). A line read while there is no clock sync (the unit's banner and the handshake, before
    the first sync; a reboot's, before the next) waits with dev_us None; once there is a sync (a whole one:
    the caller says when), it places that line too, in the same record, so whoever already holds the
    record (a driver's console log) sees its time. A line whose device time would be negative was read before the boot the sync
    belongs to: it keeps None (no clock of that boot exists to place it on)."""

    def __init__(self, **fields):
        self.fields = fields
        self._waiting: list[dict] = []

    def take(self, lines: list[ConsoleLine], estimate) -> tuple[list[dict], list[dict]]:
        """(records of `lines`, records whose placement is now final, in read order: all that waited and
        these when there is an `estimate` (a ClockEstimate, or None), else what waited too long)."""
        new = [{"host_us": ln.host_us, "dev_us": None, **self.fields, "text": ln.text} for ln in lines]
        self._waiting += new
        if estimate is None:
            if len(self._waiting) <= MAX_WAITING:
                return new, []
            settled, self._waiting = self._waiting[:-MAX_WAITING], self._waiting[-MAX_WAITING:]
            return new, settled
        return new, self.give_up(estimate)

    def give_up(self, estimate=None) -> list[dict]:
        """The records still waiting, placed through `estimate` when there is one, else left at None: final."""
        settled, self._waiting = self._waiting, []
        if estimate is not None:
            for rec in settled:
                dev = int(estimate.to_device(rec["host_us"]))
                rec["dev_us"] = dev if dev >= 0 else None
        return settled


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


def open_console(url: str) -> ConsoleReader:
    """--console URL: socket://HOST:PORT (a ser2net port, a board's debug bridge) or the path of a serial
    port, pty or FIFO the text arrives on. DeviceURLError when it cannot be opened."""
    import os
    from unohil.harness.errors import DeviceURLError
    if url.lower().startswith("socket://"):
        from unohil.harness.links.serial import CONNECT_TIMEOUT_S, _host_port
        host, port = _host_port(url, "socket")
        try:
            sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise DeviceURLError(f"--console {url}: cannot connect: {exc.strerror or exc}") from None
        sock.settimeout(None)
        return ConsoleReader(sock, url, on_close=sock.close)
    if "://" in url:
        raise DeviceURLError(f"--console {url}: give socket://HOST:PORT or the path of a serial port, pty or FIFO")
    try:
        fd = os.open(url, os.O_RDONLY | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise DeviceURLError(f"--console {url}: cannot open: {exc.strerror}") from None
    if os.isatty(fd):
        import termios
        import tty
        try:
            tty.setraw(fd)          # the text as the unit sent it: no echo, no line discipline
        except termios.error:
            pass
    return ConsoleReader(lambda n: os.read(fd, n), url, on_close=lambda: os.close(fd))
