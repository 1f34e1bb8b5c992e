"""Serving emulated units over ptys, TCP or a socketpair, on the real clock.

One thread, one loop, any number of units sharing one clock. The loop blocks in a
selector (epoll on Linux) until a byte arrives or until SPIN_US before the next due
timer, then busy-waits the last stretch (still watching for bytes) so timers
(verdicts above all) run within a few microseconds of their due time. Linux lets a
wait oversleep by its timer slack: 50 us, or 0.1% of the timeout when that is more
(a 400 ms wait wakes up to 400 us late), so a long wait is cut short by SLACK and
finished by a second, short one. epoll counts whole milliseconds and Python rounds
its timeout up, so a wait is asked for in whole milliseconds rounded down
(selector_timeout): it ends up to 1 ms (rarely 2) earlier than SPIN_US before the due
time, never later, and the spin takes the rest (no more of it than that: a longer
spin, on a busy machine, is likelier to be preempted). A virtual machine adds its
own: a sleeping vCPU may be woken milliseconds late; measured here, waking 200 us
early left the p99 of the wait 0.3-1.1 ms late, waking 2 ms early 44-50 us
(python -m unohil.emulator.bench --timer-floor).

The work of one pass is that of the units that did something: each port's
descriptors stay registered with the selector (changed only when the port's own
change: a new TCP client, output waiting to go), and output is collected only from
the units that received bytes or whose timers ran. The only limit on the number of
units is the process's descriptors (RLIMIT_NOFILE): FDS_PER_UNIT each, see
ensure_fd_limit.

With rehearse=True (a serving process's default), the spin before a due time
is spent replaying the current game of the unit due next on a throwaway copy
(rehearsal.py), so the due timer's code is in the CPU's caches when it runs: after
a sleep it runs several times slower cold. A replay starts only while twice the
median of the recent ones is left before the due time, and output waiting to go is
written first.

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
import math
import os
import selectors
import socket
import sys
from collections import deque

from . import clock as _clock, faults as _faults
from .rehearsal import Rehearsal

SPIN_US = 2_000                # wake this long before a due time and spin the rest
IDLE_GC_US = 20_000           # collect garbage only when nothing is due for this long
GC_BATCH = 2_000              # ... and only once this many allocations have piled up
REHEARSAL_FIRST_GUESS_US = 500  # how long a replay is taken to last before one has been timed
SLACK = 0.998                 # sleep this fraction of a long wait, then wait again
READ_SIZE = 4096
MAX_PENDING = 256 * 1024      # output kept for a slow or absent reader; older bytes are dropped
FDS_PER_UNIT = 2              # a pty's master and the slave end the server holds; a TCP listener and its client
FDS_SPARE = 16                # the loop's own (wake pipe, epoll) and a new TCP client accepted before the old closes


def _epoll_ms(seconds: float) -> int:
    """The milliseconds epoll_wait is given for a selector timeout: selectors rounds up to whole
    milliseconds (times 1e-3), and epoll's conversion to nanoseconds and then to milliseconds rounds
    up again, which turns some of those (9 ms, 13 ms, ...) into one more."""
    ns = math.ceil(math.ceil(seconds * 1e3) * 1e-3 * 1e9)
    return -(-ns // 1_000_000)


def selector_timeout(us: float) -> float:
    """A selector timeout (s) that ends a wait at most us microseconds from now: less than a
    millisecond sooner, or two for the few that _epoll_ms makes one more. 0 (a poll) when none is left."""
    ms = int(us) // 1000
    # half a millisecond under: selectors' rounding up lands on ms itself; only epoll's may add one
    for k in (ms, ms - 1):
        if k > 0 and _epoll_ms((k - 0.5) / 1000) <= ms:
            return (k - 0.5) / 1000
    return 0


def sleep_before(clock, due: int | None) -> float | None:
    """How long (s) the loop may block waiting for clock time due (None: until bytes come):
    until SPIN_US before it, cut by SLACK."""
    if due is None:
        return None
    return selector_timeout((due - clock.now() - SPIN_US) * SLACK)


def spin_until(clock, due: int, selector: selectors.BaseSelector | None = None) -> bool:
    """Busy-wait until clock time due (True), or until the selector has a descriptor ready (False):
    bytes that arrive before a due time are handled before it, as a unit's receive interrupt would."""
    while clock.now() < due:
        if selector is not None and selector.select(0):
            return False
    return True


def fds_needed(units: int) -> int:
    """Descriptors a process serving units units needs: those open now, FDS_PER_UNIT each, and spares."""
    try:
        open_now = len(os.listdir("/proc/self/fd")) - 1     # less the one listing it
    except OSError:
        open_now = 3
    return open_now + FDS_PER_UNIT * units + FDS_SPARE


def ensure_fd_limit(need: int, what: str) -> None:
    """Make sure this process may open need descriptors: raise the soft RLIMIT_NOFILE up to the hard
    limit when that is enough, else ValueError saying what (e.g. "2000 units") needs how many."""
    try:
        import resource
    except ImportError:         # Windows: no RLIMIT_NOFILE to raise
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard != resource.RLIM_INFINITY and need > hard:
        raise ValueError(f"{what} need {need} file descriptors, but this process may open only {hard} "
                         f"(RLIMIT_NOFILE, hard limit; the soft limit is {soft}): serve fewer units per "
                         f"process, or raise the hard limit (ulimit -Hn, limits.conf, LimitNOFILE=)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else hard, hard))


class Port:
    """One unit's byte stream, non-blocking, with an output queue."""

    name = ""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.reconnected = False     # set when a new peer appeared: the decoder restarts
        self.fds_changed = 0         # counts changes of read_fds(): the server registers them again

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
        import tty      # here, not at the top: a unit served on TCP needs no tty (nor Windows, which has none)
        super().__init__()
        try:
            self.master, self.slave = os.openpty()
        except OSError as exc:
            raise OSError(exc.errno, f"no pty to be had ({exc.strerror}; the system allows "
                                     f"{_pty_max()} in all, /proc/sys/kernel/pty/max)") from None
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
            self._hold_again()      # our slave end was hung up: without a new one the selector spins on EIO
            return b""

    def _hold_again(self) -> None:
        try:
            os.close(self.slave)
        except OSError:
            pass
        import termios
        import tty
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


def _pty_max() -> str:
    try:
        with open("/proc/sys/kernel/pty/max") as fh:
            return fh.read().strip()
    except OSError:
        return "a limited number"


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
            self.fds_changed += 1
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
        self.fds_changed += 1
        self.reconnected = True
        return b""

    def close(self):
        super().close()
        self.listener.close()


class Server:
    def __init__(self, clock, rehearse: bool = False) -> None:
        self.clock = clock
        self.rehearse = rehearse
        self.rehearsals: dict = {}                    # device -> its Rehearsal
        self._rehearsal_us: deque[int] = deque([REHEARSAL_FIRST_GUESS_US], maxlen=8)   # recent replay times
        self.units: list[tuple[object, Port]] = []
        self.lines: dict[Port, _faults.Line] = {}     # the faulty lines of units added with faults
        self._port_of: dict = {}                      # device -> its port
        self._device_of: dict[Port, object] = {}
        self._watched: dict[Port, dict[int, int]] = {}   # each port's descriptors in the selector, with their events
        self._watch_state: dict[Port, tuple[int, bool]] = {}  # (fds_changed, output waiting) when registered
        self._acted: set = set()                      # devices that may have output waiting
        self._stopping = False
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._readers: dict[int, object] = {}         # extra descriptors (a terminal's keys) -> fn() when readable

    def add_reader(self, fd: int, fn) -> None:
        """Call fn() in the loop whenever fd is readable (the interactive unit's terminal, emulator/terminal.py)."""
        self._readers[fd] = fn
        self._selector.register(fd, selectors.EVENT_READ, None)

    def add(self, device, port: Port, faults: _faults.FaultSpec | None = None) -> None:
        self.units.append((device, port))
        self._port_of[device] = port
        self._device_of[port] = device
        self._acted.add(device)
        if self.rehearse:
            self.rehearsals[device] = Rehearsal(device)
        if faults is not None:
            self.lines[port] = _faults.Line(faults, _faults.seed_text(device.seed, device.serial))
        self._watch(port)

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
            while not self._stopping:
                self._pass(clock)
            self._drain()
        finally:
            if gc_was_enabled:
                gc.enable()

    def _pass(self, clock) -> None:
        """One turn of the loop: output out, wait for bytes or the next due time, run what is due."""
        self._drain()
        due = clock.next_due()
        if (due is None or due - clock.now() > IDLE_GC_US) and gc.get_count()[0] > GC_BATCH:
            gc.collect()
            due = clock.next_due()
        timeout = sleep_before(clock, due)
        if self.lines:
            timeout = self._delivery_timeout(timeout)
        watched = self._watched
        for key, events in self._selector.select(timeout):
            port = key.data
            if port is None:
                if key.fd in self._readers:
                    self._readers[key.fd]()
                else:
                    self._drain_wake()
                continue
            if key.fd not in watched[port]:
                continue            # closed earlier in this pass (a TCP client replaced by a new one)
            if events & selectors.EVENT_READ:
                self._receive(port, key.fd)
            if events & selectors.EVENT_WRITE:
                port.flush()
            self._watch(port)
        due = clock.next_due()
        if due is not None and due - clock.now() <= SPIN_US:
            if self.rehearsals:
                self._drain()
                self._rehearse_until(due, self._rehearsals_due())
            spin_until(clock, due, self._selector)
        self._run_due()

    def _receive(self, port: Port, fd: int) -> None:
        data = port.on_readable(fd)
        device = self._device_of[port]
        line = self.lines.get(port) if self.lines else None
        if port.reconnected:
            port.reconnected = False
            device.decoder.reset()
            if line is not None:
                line.cut = False        # a new connection on a cut line works
        if data and line is not None:
            if line.paces_input:
                # each frame reaches the unit when its delimiter has crossed the wire at the line's baud rate
                for t, frame in line.into_at(data, self.clock.now()):
                    self.clock.call_at(t, device.receive, frame, priority=_clock.INPUT)
                return
            data = line.into(data)
        if data:
            self._run_due()         # what was due before these bytes came happened first
            device.receive(data)
            self._acted.add(device)

    def _run_due(self) -> None:
        ran: list = []
        if not self.clock.run_due(ran):
            return
        for fn in ran:
            device = getattr(fn, "__self__", None)    # a unit's timers and stimuli are its bound methods
            if device in self._port_of:
                self._acted.add(device)
            else:
                self._acted.update(self._port_of)    # someone else's entry: any unit may have acted

    def _watch(self, port: Port) -> None:
        """Register the port's descriptors as they are now; called after whatever may change them."""
        state = (port.fds_changed, not port.pending)
        if self._watch_state.get(port) == state:
            return
        self._watch_state[port] = state
        want = dict.fromkeys(port.read_fds(), selectors.EVENT_READ)
        wfd = port.write_fd()
        if wfd is not None:
            want[wfd] = want.get(wfd, 0) | selectors.EVENT_WRITE
        have = self._watched.get(port, {})
        if want == have:
            return
        selector = self._selector
        for fd in have.keys() - want.keys():
            selector.unregister(fd)             # a closed descriptor too: the selector forgets it
        for fd, events in want.items():
            if fd not in have:
                selector.register(fd, events, port)
            elif events != have[fd]:
                selector.modify(fd, events, port)
        self._watched[port] = want

    def _rehearsals_due(self) -> list:
        """The rehearsal of the unit whose entry is due next (every unit's, if it is no unit's)."""
        handle = self.clock.next_handle()
        mine = self.rehearsals.get(getattr(handle.fn, "__self__", None)) if handle is not None else None
        return [mine] if mine is not None else list(self.rehearsals.values())

    def _rehearse_until(self, due: int, rehearsals: list) -> None:
        """Replay these units' games while another replay fits before due; stop when bytes arrive."""
        clock = self.clock
        took = self._rehearsal_us
        # the median of the recent replays: one the machine stalled must not stop them for good
        while due - clock.now() > 2 * sorted(took)[len(took) // 2]:
            began = clock.now()
            try:
                replayed = sum(r.run(due) for r in rehearsals)
            except Exception as exc:        # a replay is only ever an optimisation: never fatal to the units
                print(f"emulator: rehearsals stopped: {exc!r}", file=sys.stderr)
                self.rehearsals.clear()
                return
            if not replayed:
                return
            took.append(clock.now() - began)
            if self._selector.select(0):
                return

    def _drain(self) -> None:
        lines = self.lines
        if not self._acted and not lines:
            return
        acted, self._acted = self._acted, set()
        for device in acted:
            port = self._port_of[device]
            if port not in lines:
                out = device.take_output()
                if out:
                    port.send(out)
                    self._watch(port)
        for port, line in lines.items():    # a faulty line delivers what it held, whether its unit acted or not
            device = self._device_of[port]
            self._through_line(device, port, line, device.take_output())
            self._watch(port)

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
                wait = selector_timeout(t - now)
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
        self._selector.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
