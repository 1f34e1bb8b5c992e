"""Ports pyserial opens (serial paths, rfc2217://, loop://): an FdLink where there is a descriptor, else SerialLink;
and socket://, connected here without pyserial."""
from __future__ import annotations

import errno
import socket
import time
from urllib.parse import urlsplit

from unohil.harness.errors import DeviceURLError, LinkClosed
from unohil.harness.links import Link, query_options
from unohil.harness.links.fd import FdLink


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


CONNECT_TIMEOUT_S = 5.0        # as pyserial's socket://


def open_socket(url: str) -> Link:
    """socket://HOST:PORT, connected here: pyserial's own handler would need all of pyserial, which
    on POSIX imports termios and fcntl for a plain TCP connection."""
    query_options(url, {})
    host, port = _host_port(url, "socket")
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise DeviceURLError(_explain_open_error(url, exc)) from None
    sock.setblocking(True)
    return FdLink(url, sock=sock)


def _host_port(url: str, scheme: str) -> tuple[str, int]:
    """The URL's host and port, or the error pyserial's own words would hide (they are about its
    logging options, or a None comparison)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is None or not 1 <= port <= 65535 or not parts.hostname:
        raise DeviceURLError(f"{url}: give a host and a port from 1 to 65535, e.g. {scheme}://rig-3:7000")
    return parts.hostname, port


def open_pyserial(url: str) -> Link:
    if url.lower().startswith("socket://"):
        return open_socket(url)
    try:
        import serial
    except ImportError:
        from unohil.harness.links.labgrid import serial_clash
        found = serial_clash()
        raise DeviceURLError(f"{url}: " + (found[1] if found else "pyserial is not installed: pip install pyserial")) from None

    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme and scheme not in ("socket", "rfc2217", "loop", "spy", "hwgrep", "alt", "cp2110"):
        raise DeviceURLError(f"{url}: unknown scheme {scheme!r}; use a serial port path, socket://, "
                             f"rfc2217://, usb:// or emu://")
    if scheme == "rfc2217":
        _host_port(url, scheme)
    try:
        ser = serial.serial_for_url(url, do_not_open=True, baudrate=115200)
        if not scheme and hasattr(ser, "exclusive"):
            ser.exclusive = True    # a second harness on the same port fails instead of stealing bytes
        ser.open()
    except serial.SerialException as exc:
        raise DeviceURLError(_explain_open_error(url, exc)) from None
    except (ValueError, OSError) as exc:
        raise DeviceURLError(f"{url}: cannot open: {exc}") from None
    if not scheme and hasattr(ser, "fd") and ser.fd is not None:
        link = FdLink(url, fd=ser.fd, owner=ser)
    else:
        link = SerialLink(url, ser)
    link.baud = ser.baudrate        # the byte time of every frame (harness/session/timing.py)
    return link


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
