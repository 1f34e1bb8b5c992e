"""Claims: a unit is driven by one process at a time, whatever URL names it.

Every link open_link gives (except the private in-process ones, emu:// and loop://) holds a
claim until it is closed. A claim is an exclusive lock (hostlock.py: a dead holder's lock goes
with it) on files in the lock folder ($UNOHIL_LOCK_DIR, else unohil-locks in the system's
temporary folder), keyed by what answers now, never by what answered there before:

- before connecting, on the endpoint (endpoint.py): the host and port of socket:// and rfc2217://,
  every spelling of this host being one host, or the real path of a serial port. Connecting to a
  TCP unit that someone drives would take it over (ser2net's kickolduser, `unohil emulate --tcp`),
  so a busy endpoint is refused unconnected;
- once the unit has answered IDENTITY on this open, on the unit: its kind and serial, with its boot
  id written beside the holder. The same unit reached by a second route (two ser2net ports on one
  tty) answers with the same boot id and is refused. Two units that report one kind and serial at
  once (a serial given twice, firmware built with a fixed one) answer with different boot ids: each
  is then locked by its endpoint only, as is a unit reporting no serial (NONE_U32), and the run
  says so once, as a warning of the unohil.claim logger (on stderr when nothing else shows logs).

A busy claim names its holder (pid, host, command, URL, since when), the endpoint it holds and the
ways out, and is refused at once, or waited for up to the wait in force (`--wait SECONDS`,
set_wait). Across hosts the lock is labgrid's coordinator's (links/labgrid.py); this one holds on
one host.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

from unohil.protocol.catalogue import NONE_U32

from unohil.harness.errors import DeviceBusy, DeviceURLError
from unohil.harness.links import hostlock
from unohil.harness.links.endpoint import PRIVATE_SCHEMES, endpoint_of, scheme_of

POLL_S = 0.1
NO_SERIAL = NONE_U32             # SPEC 1.2's none of a u32: IDENTITY.serial of a unit that has none

log = logging.getLogger("unohil.claim")
_wait_s = 0.0
_said: set[tuple] = set()


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


def ways_out(serial: bool) -> str:
    """What a refused user can do, besides waiting for the holder to finish."""
    out = ("wait for it with --wait SECONDS (pytest: --hil-wait SECONDS); or, if the holder drives "
           "another unit this host cannot tell from yours, give this run a lock folder of its own "
           "with UNOHIL_LOCK_DIR=FOLDER")
    if serial:
        out += (", or give each unit a serial of its own (unohil emulate --serial N, emu:// ?serial=N, "
                "the sample firmware's --serial N, a real unit's serial programmed at manufacture)")
    return out


def say_once(key: tuple, message: str) -> None:
    if key not in _said:
        _said.add(key)
        log.warning("%s", message)


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
            os.chmod(path, 0o666)
        except OSError:
            pass                                # another user's file: usable as it is
        return fd
    except PermissionError:
        try:
            return os.open(path, os.O_RDONLY)   # a lock needs no write access; the holder goes unnamed
        except OSError as exc:
            raise DeviceURLError(f"cannot use the unit lock folder {folder}: {exc.strerror}; "
                                 f"set UNOHIL_LOCK_DIR to a folder every runner of this host can write") from None


class _Lock:
    """One held lock on one lock file, the holder written into it."""

    def __init__(self, name: str):
        self.path = lock_dir() / (hashlib.sha1(name.encode()).hexdigest()[:20] + ".lock")
        self.name = name
        self.fd: int | None = None
        self.info: dict = {}

    def try_take(self, info: dict) -> dict | None:
        """None when taken (info written as the holder); else who holds it."""
        fd = _open_lock_file(self.path)
        if not hostlock.try_lock(fd):
            try:
                text = hostlock.read_text(fd)
                held = json.loads(text) if text.strip() else {}
            except (OSError, ValueError):
                held = {}
            os.close(fd)
            return held
        self.fd = fd
        self.write(info | {"lock": self.name})
        return None

    def write(self, info: dict) -> None:
        self.info = info
        try:
            hostlock.write_text(self.fd, json.dumps(info))
        except OSError:
            pass        # a read-only lock file still locks; only the holder's name is lost

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)       # closing the descriptor drops the lock
            self.fd = None


class Claim:
    """What one link holds: its endpoint's lock, and its unit's once the unit has said who it is."""

    def __init__(self, url: str, endpoint: str | None):
        self.url = url
        self.endpoint = endpoint
        self.endpoint_lock: _Lock | None = None
        self.unit_lock: _Lock | None = None

    def _busy(self, what: str, info: dict, serial: bool) -> DeviceBusy:
        waited = wait_s()
        held = info.get("endpoint")
        through = f" through {_where(held)}" if held and held != self.endpoint else ""
        return DeviceBusy(f"{self.url}: {what} is in use by {describe_holder(info)}{through}; "
                          + (f"still after waiting {waited:g} s; " if waited else "") + ways_out(serial),
                          holder=info)

    def take(self) -> "Claim":
        """The endpoint's lock (nothing for a link without one), waiting as set."""
        if self.endpoint is None:
            return self
        lock = _Lock(self.endpoint)
        deadline = time.monotonic() + wait_s()
        while (info := lock.try_take(_holder(self.url) | {"endpoint": self.endpoint})) is not None:
            if time.monotonic() >= deadline:
                raise self._busy(f"the unit at {_where(self.endpoint)}", info, serial=False)
            time.sleep(POLL_S)
        self.endpoint_lock = lock
        return self

    def identified(self, kind: str, serial: int, boot_id: int) -> None:
        """The unit answered IDENTITY on this open: hold its lock, refused if another route holds it."""
        unit = f"unit {kind} {serial}"
        if self.unit_lock is not None:
            if self.unit_lock.name == unit:
                self.unit_lock.write(self.unit_lock.info | {"boot_id": boot_id})    # rebooted: the new boot is the unit
                return
            self._drop_unit()       # another unit answers here now (a board swapped)
        here = self.endpoint or self.url
        if serial == NO_SERIAL:
            say_once(("no serial", kind, here),
                     f"{self.url}: the {kind} unit reports no serial (NONE_U32): it is locked by its endpoint "
                     f"only, so this host cannot tell it from the same unit reached by another route")
            return
        lock = _Lock(unit)
        deadline = time.monotonic() + wait_s()
        while (info := lock.try_take(_holder(self.url) | {"endpoint": here, "boot_id": boot_id})) is not None:
            if info.get("boot_id") not in (None, boot_id):
                say_once(("shared serial", kind, serial, here),
                         f"{self.url}: another {kind} unit reports serial {serial} at once, held by "
                         f"{describe_holder(info)}: two units share "
                         f"this serial, so each is locked by its endpoint only; give each unit a serial "
                         f"of its own to lock it whichever route reaches it")
                return
            if time.monotonic() >= deadline:
                raise self._busy(f"the {kind} unit serial {serial} (boot id {boot_id:#010x}, reached here "
                                 f"by a second route)", info, serial=True)
            time.sleep(POLL_S)
        self.unit_lock = lock

    def _drop_unit(self) -> None:
        if self.unit_lock is not None:
            self.unit_lock.release()
            self.unit_lock = None

    def release(self) -> None:
        self._drop_unit()
        if self.endpoint_lock is not None:
            self.endpoint_lock.release()
            self.endpoint_lock = None


def _where(endpoint: str | None) -> str:
    """'tcp localhost:7000' -> 'localhost:7000', 'port /dev/pts/3' -> '/dev/pts/3'."""
    return endpoint.split(" ", 1)[-1] if endpoint else "an endpoint it did not name"


def take(url: str) -> Claim | None:
    """The claim for opening this URL, taken (waiting as set), or None for a private unit."""
    if scheme_of(url) in PRIVATE_SCHEMES:
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


def identified(link, kind: str, serial: int, boot_id: int) -> None:
    """Called when a unit on this link has said who it is (HELLO answered with IDENTITY)."""
    claim = getattr(link, "claim", None)
    if claim is not None:
        claim.identified(kind, serial, boot_id)
