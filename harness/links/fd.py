"""FdLink: a pty, tty or socket read with blocking system calls, stamped with host time as each read returns."""
from __future__ import annotations

import errno
import os
import select
import socket
import struct
import time
from typing import Callable

from unohil.harness.errors import LinkClosed, LinkError

try:
    import termios
except ImportError:        # Windows: no ttys, COM ports go through pyserial (SerialLink)
    termios = None

READ_SIZE = 4096


FD_SETSIZE = 1024           # select() takes no descriptor at or above this ("filedescriptor out of range")


def _ready(fd: int, event: int, timeout_us: int) -> bool:
    """Whether fd is ready to read (POLLIN) or write (POLLOUT) within timeout_us. select() where it can take
    the descriptor, for its microsecond timeout; poll() for the descriptors of a run with hundreds of units,
    whose millisecond timeout is rounded up, so the wait never ends before its deadline."""
    timeout_us = max(0, timeout_us)
    if fd < FD_SETSIZE:
        want = ((fd,), (), ()) if event == select.POLLIN else ((), (fd,), ())
        return any(select.select(*want, timeout_us / 1e6))
    poller = select.poll()
    poller.register(fd, event)
    return bool(poller.poll(-(-timeout_us // 1000)))


def raise_fd_limit(units: int, per_unit: int = 4, spare: int = 64) -> str | None:
    """Let this process open `units` units: the soft RLIMIT_NOFILE raised to the hard limit when it is lower
    than they need. Returns what to tell the user when even the hard limit is too low (None: enough)."""
    try:
        import resource
    except ImportError:         # Windows: no RLIMIT_NOFILE
        return None
    need = units * per_unit + spare
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    if soft == resource.RLIM_INFINITY or need <= soft:
        return None
    return (f"{units} units may need about {need} file descriptors ({per_unit} each and the run's own), but this "
            f"process may open only {soft} (RLIMIT_NOFILE's hard limit): the units past that fail to open; raise "
            "the hard limit (ulimit -Hn, limits.conf, LimitNOFILE=) or give fewer --device")


class FdLink:
    """A pty, serial device or socket, read with a blocking os.read / recv.

    The read blocks in the kernel with a timeout of its own, SLICE_US at most (a tty's
    VMIN=0/VTIME, a socket's SO_RCVTIMEO), so the bytes that wake it are read by the same
    system call: no select() first and no second call after. A wait longer than a slice
    takes several; the last stretch waits in select(), which has microsecond timeouts (the
    kernel rounds a slice up to its tick, so no slice is started within SLICE_MARGIN_US of
    the deadline). Descriptors that are neither a raw tty nor a socket always use select(), and so
    does every link of a process driving many units (one_of_many): a slice that runs out wakes its
    thread for nothing.

    A tty read this way has to be blocking, so its writes wait (WRITE_TIMEOUT_US at most)
    for a device that is slow to drain instead of failing at once.
    """

    virtual = False
    SLICE_US = 100_000          # VTIME counts tenths of a second: one is the shortest kernel timeout
    SLICE_MARGIN_US = 10_000    # a kernel tick at HZ=100
    WRITE_TIMEOUT_US = 1_000_000
    # Set by a rack of many units (run/parallel.py) for the links of this process. A slice that runs out
    # wakes its thread, which takes the GIL to start the next: 10 wake-ups a second per waiting unit, which
    # with 2,000 units kept hundreds of threads queued for the GIL (a thread waiting for it wakes every
    # 5 ms to ask again): the process spent most of its time in the kernel and up to a fifth of the races
    # sent their stimuli too late (docs/performance.md, "Many units in one run").
    one_of_many = False

    def __init__(self, url: str, fd: int | None = None, sock: socket.socket | None = None,
                 owner: object = None, on_close: Callable[[], None] | None = None):
        self.url = url
        self._sock = sock
        self._fd = sock.fileno() if sock is not None else fd
        self._owner = owner          # keeps the pyserial object (and its lock) alive
        self._on_close = on_close
        self.closed = False
        self._tty = False
        self._sliced = self._set_kernel_timeout()

    def _set_kernel_timeout(self) -> bool:
        fd = self._fd
        if termios is None:
            return False        # not POSIX (Windows): a socket is no file descriptor there
        try:
            if self._sock is not None:
                self._sock.setblocking(True)
                secs, usecs = divmod(self.SLICE_US, 1_000_000)
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("@ll", secs, usecs))
                return True
            if not os.isatty(fd) or os.ttyname(fd) == "/dev/ptmx":
                return False        # a pty master's reads do not honour VTIME
            attrs = termios.tcgetattr(fd)
            if attrs[3] & termios.ICANON:
                return False        # a line-mode tty ignores VMIN/VTIME
            attrs[6][termios.VMIN] = 0
            attrs[6][termios.VTIME] = self.SLICE_US // 100_000
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
            os.set_blocking(fd, True)
            self._tty = True
            return True
        except (OSError, termios.error):
            return False

    def now_us(self) -> int:
        return time.monotonic_ns() // 1000

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        if self.closed:
            raise LinkClosed(f"{self.url}: link is closed")
        fd = self._fd
        try:
            longest = self.SLICE_US + self.SLICE_MARGIN_US
            if self._sliced and timeout_us >= longest and not FdLink.one_of_many:
                deadline = time.monotonic_ns() // 1000 + timeout_us
                while True:
                    started = time.monotonic_ns() // 1000
                    try:
                        data = os.read(fd, READ_SIZE)
                    except BlockingIOError:
                        if self._tty:
                            break       # made non-blocking behind our back: select below
                        data = None     # a socket's slice ran out
                    host_us = time.monotonic_ns() // 1000
                    if data:
                        return data, host_us
                    timeout_us = deadline - host_us
                    if data is not None and (self._sock is not None or host_us - started < self.SLICE_US // 2):
                        break       # end of file, not a slice run out: select below tells which
                    if timeout_us < longest:
                        break
            if not _ready(fd, select.POLLIN, timeout_us):
                return b"", time.monotonic_ns() // 1000
            data = os.read(fd, READ_SIZE)
        except OSError as exc:
            if exc.errno == errno.EIO:   # pty whose other side went away
                raise LinkClosed(f"{self.url}: the device went away (EIO)") from None
            if exc.errno in (errno.ECONNRESET, errno.ENOTCONN):     # a server or unit that went away
                raise LinkClosed(f"{self.url}: the connection was lost: {exc.strerror}") from None
            raise LinkError(f"{self.url}: read failed: {exc}") from None
        host_us = time.monotonic_ns() // 1000
        if not data:
            raise LinkClosed(f"{self.url}: the device closed the connection")
        return data, host_us

    def write(self, data: bytes) -> None:
        if self.closed:
            raise LinkClosed(f"{self.url}: link is closed")
        try:
            if self._sock is not None:
                self._sock.sendall(data)
                return
            if self._tty:
                self._write_bounded(data)
                return
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            raise LinkClosed(f"{self.url}: write failed: {exc}") from None

    def _write_bounded(self, data: bytes) -> None:
        """Write to a tty that is blocking for reads without ever blocking for good."""
        fd = self._fd
        view = memoryview(data)
        deadline = time.monotonic_ns() // 1000 + self.WRITE_TIMEOUT_US
        os.set_blocking(fd, False)
        try:
            while view:
                try:
                    view = view[os.write(fd, view):]
                    continue
                except BlockingIOError:
                    pass
                left = deadline - time.monotonic_ns() // 1000
                if left <= 0 or not _ready(fd, select.POLLOUT, left):
                    raise LinkClosed(f"{self.url}: write timed out: the device has not taken bytes for "
                                     f"{self.WRITE_TIMEOUT_US // 1000} ms (is it still reading?)")
        finally:
            os.set_blocking(fd, True)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self._owner is not None:
                self._owner.close()
            elif self._sock is not None:
                self._sock.close()
        finally:
            if self._on_close is not None:
                self._on_close()
