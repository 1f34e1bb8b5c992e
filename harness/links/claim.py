"""Claims: a unit is driven by one process at a time, whatever URL names it.

Every link open_link gives (except the private in-process ones, emu:// and loop://) holds a
claim until it is closed. A claim is an exclusive lock (fcntl.flock, so a dead holder's lock
goes with it) on files in the lock folder ($UNOHIL_LOCK_DIR, else unohil-locks in the system's
temporary folder):

- before connecting, on the endpoint: the host address and port of socket:// and rfc2217://
  (so `socket://rig-a:7000` and `rfc2217://rig-a:7000?ign_set_control` are one endpoint) or the
  real path of a serial port. Connecting to a TCP unit that someone drives would take it over
  (ser2net's kickolduser, `unohil emulate --tcp`), so a busy endpoint is refused unconnected;
- once the unit has said who it is (IDENTITY), on the unit: kind and serial. Each endpoint
  remembers the unit last seen on it, and that unit's lock is taken before connecting too, so a
  unit reached by a second route (two ser2net ports on one tty) is refused once it is known.

A busy claim names its holder (pid, host, command, since when) and is refused at once, or
waited for up to the wait in force (`--wait SECONDS`, set_wait). Across hosts the lock is
labgrid's coordinator's (links/labgrid.py); this one holds on one host.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from unohil.harness.errors import DeviceBusy, DeviceURLError

PRIVATE_SCHEMES = frozenset({"emu", "loop", "labgrid"})   # labgrid: the coordinator locks; its link claims
POLL_S = 0.1

_wait_s = 0.0


def lock_dir() -> Path:
    return Path(os.environ.get("UNOHIL_LOCK_DIR") or Path(tempfile.gettempdir()) / "unohil-locks")


def set_wait(seconds: float) -> None:
    """How long an open waits for a unit someone else holds (0: refuse at once)."""
    global _wait_s
    _wait_s = max(0.0, float(seconds))


def wait_s() -> float:
    return _wait_s


@contextlib.contextmanager
def waiting(seconds: float):
    """The wait in force, for the opens inside the block."""
    before = _wait_s
    set_wait(seconds)
    try:
        yield
    finally:
        set_wait(before)


def endpoint_of(url: str) -> str | None:
    """What the URL connects to, however it is spelled; None for a unit private to this process."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in PRIVATE_SCHEMES:
        return None
    if scheme in ("socket", "rfc2217"):
        parts = urlsplit(url)
        try:
            host, port = parts.hostname or "", parts.port
        except ValueError:
            return None
        if not host or port is None:
            return None
        try:
            host = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
        except OSError:
            host = host.lower()
        return f"tcp {host}:{port}" if ":" not in host else f"tcp [{host}]:{port}"
    if scheme == "usb":
        return None     # the interface claim is the kernel's; the unit's claim follows IDENTITY
    if not scheme:
        return f"port {os.path.realpath(url)}"
    return None


def _holder(url: str) -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(_command()),
            "url": url, "since": time.strftime("%Y-%m-%d %H:%M:%S")}


def _command() -> list[str]:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        return ["pytest", "worker", worker]        # a worker's argv is only ['-c']
    argv = list(sys.argv)
    if argv:
        argv[0] = os.path.basename(argv[0])
    return argv


def describe_holder(info: dict) -> str:
    if not info:
        return "another process (it left no name)"
    where = f"pid {info.get('pid')} on {info.get('host')}"
    command = info.get("command")
    return f"{where} ({command!r}, as {info.get('url')}, since {info.get('since')})" if command else where


def _open_lock_file(path: Path) -> int:
    """The lock file, made usable by every user of the host (a lab's runners need not share one)."""
    folder = path.parent
    try:
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            try:
                os.chmod(folder, 0o1777)        # like /tmp: anyone may lock, nobody may delete another's file
            except OSError:
                pass
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)
        except OSError:
            pass                                # another user's file: usable as it is
        return fd
    except PermissionError:
        try:
            return os.open(path, os.O_RDONLY)   # flock needs no write access; the holder goes unnamed
        except OSError as exc:
            raise DeviceURLError(f"cannot use the unit lock folder {folder}: {exc.strerror}; "
                                 f"set UNOHIL_LOCK_DIR to a folder every runner of this host can write") from None


class _Lock:
    """One held flock on one lock file, the holder written into it."""

    def __init__(self, name: str):
        self.path = lock_dir() / (hashlib.sha1(name.encode()).hexdigest()[:20] + ".lock")
        self.name = name
        self.fd: int | None = None

    def try_take(self, url: str) -> dict | None:
        """None when taken; else who holds it."""
        fd = _open_lock_file(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
                info = json.loads(text) if text.strip() else {}
            except ValueError:
                info = {}
            os.close(fd)
            return info
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(_holder(url) | {"lock": self.name}).encode(), 0)
        except OSError:
            pass        # a read-only lock file still locks; only the holder's name is lost
        self.fd = fd
        return None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)       # closing the descriptor drops the flock
            self.fd = None


def _unit_name(kind: str, serial: int) -> str:
    return f"unit {kind} {serial}"


def _seen_path(endpoint: str) -> Path:
    return lock_dir() / (hashlib.sha1(endpoint.encode()).hexdigest()[:20] + ".unit")


def _seen_on(endpoint: str) -> str | None:
    try:
        return _seen_path(endpoint).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _note_seen(endpoint: str, unit: str) -> None:
    path = _seen_path(endpoint)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(unit, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass        # only a hint for the next open; the unit's lock itself is held


class Claim:
    """What one link holds: its endpoint's lock, and its unit's once known."""

    def __init__(self, url: str, endpoint: str | None):
        self.url = url
        self.endpoint = endpoint
        self.locks: list[_Lock] = []
        self.unit: str | None = None

    def _take(self, name: str, what: str, deadline: float) -> _Lock:
        lock = _Lock(name)
        while True:
            info = lock.try_take(self.url)
            if info is None:
                self.locks.append(lock)
                return lock
            if time.monotonic() >= deadline:
                waited = wait_s()
                raise DeviceBusy(f"{self.url}: {what} is in use by {describe_holder(info)}; "
                                 + (f"still after waiting {waited:g} s" if waited else
                                    "wait for it with --wait SECONDS (pytest: --hil-wait SECONDS)"),
                                 holder=info)
            time.sleep(POLL_S)

    def take(self) -> "Claim":
        deadline = time.monotonic() + wait_s()
        try:
            if self.endpoint is not None:
                self._take(self.endpoint, f"the unit at {self.endpoint.split(' ', 1)[1]}", deadline)
                unit = _seen_on(self.endpoint)
                if unit is not None:
                    self._take(unit, f"the {unit.split(' ', 1)[1].replace(' ', ' unit serial ', 1)} last seen there", deadline)
                    self.unit = unit
        except BaseException:
            self.release()
            raise
        return self

    def identified(self, kind: str, serial: int) -> None:
        """The unit said who it is: hold its lock (refused if another route holds it)."""
        unit = _unit_name(kind, serial)
        if unit == self.unit:
            return
        if self.endpoint is not None:
            _note_seen(self.endpoint, unit)     # even if refused below: the next open here is refused unconnected
        if self.unit is not None:           # another unit answers here now: the old one's lock goes
            old = [lk for lk in self.locks if lk.name == self.unit]
            for lk in old:
                lk.release()
                self.locks.remove(lk)
            self.unit = None
        self._take(unit, f"the {kind} unit serial {serial}", time.monotonic() + wait_s())
        self.unit = unit

    def release(self) -> None:
        for lk in reversed(self.locks):
            lk.release()
        self.locks.clear()



def take(url: str) -> Claim | None:
    """The claim for opening this URL, taken (waiting as set), or None for a private unit."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in PRIVATE_SCHEMES:
        return None
    return Claim(url, endpoint_of(url)).take()


def hold_until_closed(link, claim: Claim | None):
    """Attach the claim to the link: link.close() closes it, then releases the claim.

    Links are of several classes (FdLink, SerialLink, UsbLink, ...); this wraps the one
    instance's close rather than teaching each class about claims."""
    if claim is None:
        return link
    close = link.close

    def close_and_release():
        try:
            close()
        finally:
            claim.release()         # idempotent: a second close releases nothing more

    link.close = close_and_release
    link.claim = claim
    return link


def identified(link, kind: str, serial: int) -> None:
    """Called when a unit on this link has said who it is (HELLO answered with IDENTITY)."""
    claim = getattr(link, "claim", None)
    if claim is not None:
        claim.identified(kind, serial)
