"""Serving emulated units over ptys, TCP or a socketpair, on the real clock.

One thread, one loop, any number of units sharing one clock. The loop blocks in
select() until a byte arrives or until SPIN_US before the next due timer, then
busy-waits the last stretch (still watching for bytes) so timers (verdicts above
all) run within a few microseconds of their due time. Linux lets select() oversleep
by its timer slack: 50 us, or 0.1% of the timeout when that is more (a 400 ms wait
wakes up to 400 us late), so a long wait is cut short by SLACK and finished by a
second, short select. A virtual machine adds its own: a sleeping vCPU may be woken
milliseconds late; measured here, waking 200 us early left the p99 of the wait
0.3-1.1 ms late, waking 2 ms early 44-50 us (python -m emulator.bench --timer-floor).

With rehearse=True (a serving process's default), the spin before a due time
is spent replaying each unit's current game on a throwaway copy (rehearsal.py), so
the due timer's code is in the CPU's caches when it runs: after a sleep it runs
several times slower cold. A replay starts only while twice the median of the recent
ones is left before the due time, and output waiting to go is written first.

Each unit's byte stream is a Port. A pty keeps its slave end open in the server,
so a client may open, close and reopen the device path without the master
reporting a hang-up (output written while nobody listens waits in the pty, up to
a bound). A TCP port serves one client at a time: a new connection replaces the
old one, output while nobody is connected is dropped (EVENT_RESEND can recover
it), and the unit keeps running across connections.

A unit added with faults (emulator/faults.py) talks through a faulty line, in real
time: its output is delayed, stalled, mangled or lost on the way to the port, the
host's bytes on the way in. A disconnect fault hangs up a TCP client or the
in-process socket (a pty, which cannot hang up without losing its path, goes silent).
"""
from __future__ import annotations

import errno
import gc
import os
import select
import socket
import sys
import termios
import tty
from collections import deque

from . import faults as _faults
from .rehearsal import Rehearsal

SPIN_US = 2_000                # wake this long before a due time and spin the rest
IDLE_GC_US = 20_000           # collect garbage only when nothing is due for this long
GC_BATCH = 2_000              # ... and only once this many allocations have piled up
REHEARSAL_FIRST_GUESS_US = 500  # how long a replay is taken to last before one has been timed
SLACK = 0.998                 # sleep this fraction of a long wait, then wait again
READ_SIZE = 4096
MAX_PENDING = 256 * 1024      # output kept for a slow or absent reader; older bytes are dropped


def spin_until(clock, due: int, fds=()) -> bool:
    """Busy-wait until clock time due (True), or until one of fds is readable (False): bytes
    that arrive before a due time are handled before it, as a unit's receive interrupt would."""
    while clock.now() < due:
        if fds and select.select(fds, (), (), 0)[0]:
            return False
    return True


class Port:
    """One unit's byte stream, non-blocking, with an output queue."""

    name = ""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.reconnected = False     # set when a new peer appeared: the decoder restarts

    def read_fds(self) -> list[int]:
        raise NotImplementedError

    def on_readable(self, fd: int) -> bytes:
        raise NotImplementedError

    def write_fd(self) -> int | None:
        return None

    def _write(self, data) -> int:
        raise NotImplementedError

    def send(self, data: bytes) -> None:
        self.pending += data
        if len(self.pending) > MAX_PENDING:
            del self.pending[:len(self.pending) - MAX_PENDING]
        self.flush()

    def flush(self) -> None:
        while self.pending:
            try:
                n = self._write(self.pending)
            except BlockingIOError:
                return
            except OSError:
                self.pending.clear()
                return
            if n <= 0:
                return
            del self.pending[:n]

    def hang_up(self) -> None:
        """The line was cut (a disconnect fault)."""

    def close(self) -> None:
        pass


class PtyPort(Port):
    def __init__(self) -> None:
        super().__init__()
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.name = os.ttyname(self.slave)

    def read_fds(self):
        return [self.master]

    def on_readable(self, fd):
        try:
            return os.read(self.master, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            self._hold_again()      # our slave end was hung up: without a new one select spins on EIO
            return b""

    def _hold_again(self) -> None:
        try:
            os.close(self.slave)
        except OSError:
            pass
        self.slave = os.open(self.name, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.slave, termios.TCSANOW)

    def write_fd(self):
        return self.master if self.pending else None

    def _write(self, data):
        return os.write(self.master, data)

    def close(self):
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


class SocketPort(Port):
    """A connected stream socket (one end of a socketpair)."""

    def __init__(self, sock: socket.socket, name: str) -> None:
        super().__init__()
        self.sock: socket.socket | None = sock
        sock.setblocking(False)
        self.name = name

    def read_fds(self):
        return [self.sock.fileno()] if self.sock is not None else []

    def on_readable(self, fd):
        try:
            data = self.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError:
            data = b""
        if not data:
            self._lost()
        return data

    def _lost(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.pending.clear()

    def hang_up(self):
        self._lost()

    def write_fd(self):
        return self.sock.fileno() if self.sock is not None and self.pending else None

    def _write(self, data):
        if self.sock is None:
            self.pending.clear()
            return 0
        return self.sock.send(data)

    def close(self):
        self._lost()


class TcpPort(SocketPort):
    def __init__(self, host: str, port: int) -> None:
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(4)
        listener.setblocking(False)
        self.listener = listener
        bound = listener.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        Port.__init__(self)
        self.sock = None
        self.address = (bound[0], bound[1])
        self.name = f"socket://{shown}:{bound[1]}"
        self.log = None             # a text file: one line per connection (emulate --connection-log)

    def _peer_closed(self) -> bool:
        """The connected client has hung up (only its EOF is left to read): a new one replaces nobody."""
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def _log(self, what: str, peer, replaced: bool = False) -> None:
        import time
        self.log.write(f"{time.monotonic_ns() // 1000} {self.name} {what} {peer[0]}:{peer[1]}"
                       + (" replacing a connected client" if replaced else "") + "\n")
        self.log.flush()

    def _lost(self) -> None:
        if self.sock is not None and self.log is not None:
            try:
                self._log("disconnect", self.sock.getpeername())
            except OSError:
                self._log("disconnect", ("?", "?"))
        super()._lost()

    def read_fds(self):
        return [self.listener.fileno()] + super().read_fds()

    def on_readable(self, fd):
        if fd != self.listener.fileno():
            return super().on_readable(fd)
        try:
            conn, peer = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return b""
        if self.log is not None:
            self._log("connect", peer, replaced=self.sock is not None and not self._peer_closed())
        self._lost()
        conn.setblocking(False)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = conn
        self.reconnected = True
        return b""

    def close(self):
        super().close()
        self.listener.close()


class Server:
    def __init__(self, clock, rehearse: bool = False) -> None:
        self.clock = clock
        self.rehearse = rehearse
        self.rehearsals: list = []
        self._rehearsal_us: deque[int] = deque([REHEARSAL_FIRST_GUESS_US], maxlen=8)   # recent replay times
        self.units: list[tuple[object, Port]] = []
        self.lines: dict[Port, _faults.Line] = {}     # the faulty lines of units added with faults
        self._stopping = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def add(self, device, port: Port, faults: _faults.FaultSpec | None = None) -> None:
        self.units.append((device, port))
        if self.rehearse:
            self.rehearsals.append(Rehearsal(device))
        if faults is not None:
            self.lines[port] = _faults.Line(faults, _faults.seed_text(device.seed, device.serial))

    def stop(self) -> None:
        """Safe from a signal handler or another thread."""
        self._stopping = True
        try:
            os.write(self._wake_w, b"\0")
        except OSError:
            pass

    def run(self) -> None:
        clock = self.clock
        # The collector runs only while the loop is idle (nothing due for IDLE_GC_US): a
        # collection in the middle of a race would make a verdict milliseconds late.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._run(clock)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _run(self, clock) -> None:
        while not self._stopping:
            self._drain()
            readers: dict[int, tuple] = {self._wake_r: (None, None)}
            writers: dict[int, Port] = {}
            for device, port in self.units:
                for fd in port.read_fds():
                    readers[fd] = (device, port)
                wfd = port.write_fd()
                if wfd is not None:
                    writers[wfd] = port
            due = clock.next_due()
            if (due is None or due - clock.now() > IDLE_GC_US) and gc.get_count()[0] > GC_BATCH:
                gc.collect()
                due = clock.next_due()
            timeout = None if due is None else max(0, due - clock.now() - SPIN_US) * SLACK / 1e6
            if self.lines:
                timeout = self._delivery_timeout(timeout)
            try:
                readable, writable, _ = select.select(list(readers), list(writers), [], timeout)
            except InterruptedError:
                continue
            for fd in readable:
                device, port = readers[fd]
                if device is None:
                    self._drain_wake()
                    continue
                data = port.on_readable(fd)
                if port.reconnected:
                    port.reconnected = False
                    device.decoder.reset()
                    if port in self.lines:
                        self.lines[port].cut = False        # a new connection on a cut line works
                if data and self.lines and port in self.lines:
                    data = self.lines[port].into(data)
                if data:
                    clock.run_due()         # what was due before these bytes came happened first
                    device.receive(data)
            for fd in writable:
                writers[fd].flush()
            due = clock.next_due()
            if due is not None and due - clock.now() <= SPIN_US:
                fds = list(readers)
                if self.rehearsals:
                    self._drain()
                    self._rehearse_until(due, fds)
                spin_until(clock, due, fds)
            clock.run_due()
        self._drain()

    def _rehearse_until(self, due: int, fds: list[int]) -> None:
        """Replay the units' games while another replay fits before due; stop when bytes arrive."""
        clock = self.clock
        took = self._rehearsal_us
        # the median of the recent replays: one the machine stalled must not stop them for good
        while due - clock.now() > 2 * sorted(took)[len(took) // 2]:
            began = clock.now()
            try:
                replayed = sum(r.run(due) for r in self.rehearsals)
            except Exception as exc:        # a replay is only ever an optimisation: never fatal to the units
                print(f"emulator: rehearsals stopped: {exc!r}", file=sys.stderr)
                self.rehearsals.clear()
                return
            if not replayed:
                return
            took.append(clock.now() - began)
            if fds and select.select(fds, (), (), 0)[0]:
                return

    def _drain(self) -> None:
        lines = self.lines
        for device, port in self.units:
            out = device.take_output()
            if lines and port in lines:
                self._through_line(device, port, lines[port], out)
            elif out:
                port.send(out)

    def _through_line(self, device, port: Port, line: _faults.Line, out: bytes) -> None:
        now = self.clock.now()
        while out:
            cut = line.cut
            line.out(out, now)
            if line.cut and not cut:
                port.hang_up()
            if not line.reboot:
                break
            line.reboot = False
            _faults.reboot(device)
            out = device.take_output()
        data = line.take(now)
        if data:
            port.send(data)

    def _delivery_timeout(self, timeout: float | None) -> float | None:
        now = self.clock.now()
        for line in self.lines.values():
            t = line.next_delivery()
            if t is not None:
                wait = max(0, t - now) / 1e6
                timeout = wait if timeout is None else min(timeout, wait)
        return timeout

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 64):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        for _device, port in self.units:
            port.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
