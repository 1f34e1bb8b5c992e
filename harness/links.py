"""Links: one byte stream to one device, named by a URL.

A link reads by blocking in the OS (in the read itself on a file descriptor, see
FdLink, or in pyserial's own blocking read for transports that have no descriptor)
and stamps each chunk with host time in microseconds at the moment the read returns.

Schemes are looked up in a registry, so a package can add its own (as pyserial's
protocol_handler_packages does):
  emu://KIND?seed=..&clock=virtual|real   an in-process emulator (the emulator package)
  anything pyserial's serial_for_url opens: /dev/ttyACM0, COM3, socket://h:p, rfc2217://h:p, loop://
"""
from __future__ import annotations

import errno
import os
import select
import socket
import struct
import time
from typing import Callable, Protocol
from urllib.parse import parse_qsl, urlsplit

from .errors import DeviceURLError, LinkClosed, LinkError

try:
    import termios
except ImportError:        # Windows: no ttys, COM ports go through pyserial (SerialLink)
    termios = None

READ_SIZE = 4096


def host_now_us() -> int:
    return time.monotonic_ns() // 1000


class Link(Protocol):
    url: str
    virtual: bool

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        """Bytes that arrived (b"" on timeout) and the host time the read returned."""

    def write(self, data: bytes) -> None: ...

    def now_us(self) -> int: ...

    def close(self) -> None: ...


class FdLink:
    """A pty, serial device or socket, read with a blocking os.read / recv.

    The read blocks in the kernel with a timeout of its own, SLICE_US at most (a tty's
    VMIN=0/VTIME, a socket's SO_RCVTIMEO), so the bytes that wake it are read by the same
    system call: no select() first and no second call after. A wait longer than a slice
    takes several; the last stretch waits in select(), which has microsecond timeouts (the
    kernel rounds a slice up to its tick, so no slice is started within SLICE_MARGIN_US of
    the deadline). Descriptors that are neither a raw tty nor a socket always use select().

    A tty read this way has to be blocking, so its writes wait (WRITE_TIMEOUT_US at most)
    for a device that is slow to drain instead of failing at once.
    """

    virtual = False
    SLICE_US = 100_000          # VTIME counts tenths of a second: one is the shortest kernel timeout
    SLICE_MARGIN_US = 10_000    # a kernel tick at HZ=100
    WRITE_TIMEOUT_US = 1_000_000

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
            if self._sliced and timeout_us >= longest:
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
            ready, _, _ = select.select((fd,), (), (), max(0, timeout_us) / 1e6)
            if not ready:
                return b"", time.monotonic_ns() // 1000
            data = os.read(fd, READ_SIZE)
        except OSError as exc:
            if exc.errno == errno.EIO:   # pty whose other side went away
                raise LinkClosed(f"{self.url}: the device went away (EIO)") from None
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
                if left <= 0 or not select.select((), (fd,), (), left / 1e6)[1]:
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


class SerialLink:
    """Any pyserial object without a usable descriptor (rfc2217://, loop://, ...).

    The read timeout is set once: pyserial's RFC 2217 client renegotiates the port
    settings with the server whenever the timeout changes, which costs a network
    round trip per read. Reads block in pyserial (a queue wait, not a sleep) for at
    most SLICE_S at a time until the caller's deadline.
    """

    virtual = False
    SLICE_S = 0.01

    def __init__(self, url: str, ser):
        self.url = url
        self._ser = ser
        self._ser.timeout = self.SLICE_S
        self.closed = False

    def now_us(self) -> int:
        return time.monotonic_ns() // 1000

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        import serial
        deadline = time.monotonic_ns() // 1000 + max(0, timeout_us)
        try:
            while True:
                data = self._ser.read(1)
                if data:
                    waiting = self._ser.in_waiting
                    if waiting:
                        data += self._ser.read(waiting)
                    return data, time.monotonic_ns() // 1000
                now = time.monotonic_ns() // 1000
                if now >= deadline:
                    return b"", now
        except (serial.SerialException, OSError) as exc:
            raise LinkClosed(f"{self.url}: read failed: {exc}") from None

    def write(self, data: bytes) -> None:
        import serial
        try:
            self._ser.write(data)
        except (serial.SerialException, OSError) as exc:
            raise LinkClosed(f"{self.url}: write failed: {exc}") from None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._ser.close()


# ---- the registry ----

_OPENERS: dict[str, Callable[[str], Link]] = {}


def register_scheme(scheme: str, opener: Callable[[str], Link]) -> None:
    _OPENERS[scheme] = opener


def schemes() -> list[str]:
    return sorted(set(_OPENERS) | {"socket", "rfc2217", "loop", "serial port path"})


def open_link(url: str) -> Link:
    """Open the device URL, or raise DeviceURLError saying what is wrong and what to do."""
    if not isinstance(url, str) or not url.strip():
        raise DeviceURLError("empty device URL: give a serial port (/dev/ttyACM0), socket://HOST:PORT, "
                             "rfc2217://HOST:PORT, usb://VID:PID or emu://showdown")
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    opener = _OPENERS.get(scheme)
    if opener is not None:
        return opener(url)
    return _open_pyserial(url)


def query_options(url: str, allowed: dict[str, Callable[[str], object]]) -> dict:
    """Parse ?k=v options of a URL; unknown keys and bad values are errors naming the URL."""
    parts = urlsplit(url)
    out: dict = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        conv = allowed.get(key)
        if conv is None:
            raise DeviceURLError(f"{url}: unknown option {key!r}; allowed: {', '.join(sorted(allowed))}")
        try:
            out[key] = conv(value)
        except (TypeError, ValueError):
            raise DeviceURLError(f"{url}: bad value {value!r} for option {key!r}") from None
    return out


def _open_pyserial(url: str) -> Link:
    import serial

    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme and scheme not in ("socket", "rfc2217", "loop", "spy", "hwgrep", "alt", "cp2110"):
        raise DeviceURLError(f"{url}: unknown scheme {scheme!r}; use a serial port path, socket://, "
                             f"rfc2217://, usb:// or emu://")
    if scheme in ("socket", "rfc2217"):
        # pyserial's own words for these are about its logging options or a None comparison
        try:
            port = urlsplit(url).port
        except ValueError:
            port = -1
        if port is None or not 1 <= port <= 65535 or not urlsplit(url).hostname:
            raise DeviceURLError(f"{url}: give a host and a port from 1 to 65535, e.g. {scheme}://rig-3:7000")
    try:
        ser = serial.serial_for_url(url, do_not_open=True, baudrate=115200)
        if not scheme and hasattr(ser, "exclusive"):
            ser.exclusive = True    # a second harness on the same port fails instead of stealing bytes
        ser.open()
    except serial.SerialException as exc:
        raise DeviceURLError(_explain_open_error(url, exc)) from None
    except (ValueError, OSError) as exc:
        raise DeviceURLError(f"{url}: cannot open: {exc}") from None
    fd_sock = getattr(ser, "_socket", None)
    if scheme == "socket" and fd_sock is not None:
        fd_sock.setblocking(True)
        return FdLink(url, sock=fd_sock, owner=ser)
    if not scheme and hasattr(ser, "fd") and ser.fd is not None:
        return FdLink(url, fd=ser.fd, owner=ser)
    return SerialLink(url, ser)


def _explain_open_error(url: str, exc: Exception) -> str:
    text = str(exc)
    code = getattr(exc, "errno", None)
    low = text.lower()
    if code == errno.ENOENT or "no such file" in low or "could not open port" in low and "errno 2]" in low:
        return f"{url}: no such port. Check the cable and the name (`unohil ports` lists what is attached)."
    if code == errno.EACCES or "permission denied" in low or "errno 13]" in low:
        return (f"{url}: permission denied. Add your user to the group owning the port "
                f"(usually `dialout`) or fix the udev rule, then log in again.")
    if code in (errno.EBUSY, errno.EAGAIN) or "exclusively lock" in low or "busy" in low:
        return f"{url}: port in use by another program (close it, or find it with `fuser {url}`)."
    if "connection refused" in low or "errno 111]" in low:
        return f"{url}: connection refused: is the server (ser2net, `unohil emulate --tcp`) running on that port?"
    if "option" in low and "control" in low or ("parameter change" in low and "control" in low):
        return (f"{url}: the RFC 2217 server did not answer the 'control' option (a pty-backed ser2net port "
                f"does not). Add `?ign_set_control` to the URL: {url}{'&' if '?' in url else '?'}ign_set_control")
    if "timed out" in low or "timeout" in low:
        return f"{url}: timed out opening the port: {text}"
    return f"{url}: cannot open: {text}"
