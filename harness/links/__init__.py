"""Links: one byte stream to one device, named by a URL; the Link interface and the scheme registry.

A link reads by blocking in the OS (in the read itself on a file descriptor, see
fd.FdLink, or in pyserial's own blocking read for transports that have no descriptor,
serial.SerialLink) and stamps each chunk with host time in microseconds at the moment
the read returns.

Schemes are looked up in a registry, so a package can add its own (as pyserial's
protocol_handler_packages does):
  emu://KIND?seed=..&clock=virtual|real   an in-process emulator (emu.py)
  usb://VID:PID?serial=..                 a unit's USB bulk endpoints (usb.py)
  labgrid://PLACE, labgrid://+, labgrid://?TAG=VALUE  a place of a labgrid coordinator (labgrid.py)
  qemu:IMAGE.elf?machine=mps2-an385       firmware on an emulated board, QEMU started here (qemu.py)
  socket://h:p                            raw TCP, connected here (serial.py)
  anything pyserial's serial_for_url opens: /dev/ttyACM0, COM3, rfc2217://h:p, loop://

Every link but the private ones holds a claim on its unit until closed (claim.py).
"""
from __future__ import annotations

import time
from typing import Callable, Protocol
from urllib.parse import parse_qsl, urlsplit

from unohil.harness.errors import DeviceURLError


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
    scheme = scheme_of(url)
    opener = _OPENERS.get(scheme)
    if opener is None:
        from unohil.harness.links.serial import open_pyserial as opener
    # the unit is claimed before connecting: connecting to a TCP unit in use would take it over
    held = claim.take(url)
    try:
        link = opener(url)
    except BaseException:
        if held is not None:
            held.release()
        raise
    return claim.hold_until_closed(link, held)


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


from unohil.harness.links.fd import FdLink  # noqa: E402  (the link most schemes give)
from unohil.harness.links import claim  # noqa: E402
from unohil.harness.links import emu as _emu, usb as _usb  # noqa: E402,F401  (register emu:// and usb://)
from unohil.harness.links import labgrid as _labgrid  # noqa: E402,F401  (registers labgrid://; imports labgrid lazily)
from unohil.harness.links import qemu as _qemu  # noqa: E402,F401  (registers qemu:)
from unohil.harness.links.endpoint import scheme_of  # noqa: E402

__all__ = ["FdLink", "Link", "host_now_us", "open_link", "query_options", "register_scheme", "schemes"]
