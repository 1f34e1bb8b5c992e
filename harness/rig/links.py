"""A unit and the rig wired to it, opened together.

A real bench gives two URLs: the unit's (--device) and the rig's (--rig), each any link the registry
opens. An emulated bench is `--device emu://KIND?... --rig emurig://?PATH`: the rig emulated in the
same process, on the unit's clock, wired to that unit through the input and output path the rig URL's
options describe (emulator/path.py: skew_INPUT, debounce, irq, poll, scan, jitter, delay, delay_OUTPUT,
capture, seed; none: a clean path). On clock=virtual (the default) both are links of the virtual clock,
exact; on clock=real both are served from one thread on the real clock, each on its own socket, and
reached as any served unit is (real-time figures: scheduling, the loop's wake-ups, the sockets). The
emulated unit is then built without host_input and test_mode, as a unit on a bench is driven: its
inputs come only through the rig.
"""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from unohil.protocol import catalogue as cat

from unohil.harness.errors import DeviceURLError, LinkClosed
from unohil.harness.links import query_options
from unohil.harness.links.fd import FdLink
from unohil.harness.links.emu import _OPTIONS as EMU_OPTIONS
from unohil.harness.session.driver import Driver

EMULATED = "emurig"


def _emulated_pair(device_url: str, rig_url: str):
    dev = urlsplit(device_url)
    kind = (dev.netloc or dev.path.lstrip("/")).lower()
    if dev.scheme != "emu" or kind not in cat.UNITS:
        raise DeviceURLError(f"{rig_url}: an emulated rig is wired to an emulated unit: give --device "
                             f"emu://KIND?clock=virtual (KIND one of {', '.join(cat.UNITS)}), not {device_url}")
    opts = query_options(device_url, EMU_OPTIONS)
    clock = opts.pop("clock", "virtual")
    if clock not in ("virtual", "real"):
        raise DeviceURLError(f"{device_url}: clock must be 'virtual' or 'real', not {clock!r}")
    for key in ("faults", "drift_ppm") + (("host_offset_us",) if clock == "real" else ()):
        if key in opts:
            raise DeviceURLError(f"{device_url}: option {key!r} is not available with an emulated rig"
                                 + (" on the real clock" if key == "host_offset_us" else ""))
    parts = urlsplit(rig_url)
    if parts.netloc or parts.path not in ("", "/"):
        raise DeviceURLError(f"{rig_url}: an emulated rig's URL is emurig://?OPTIONS (it is wired to --device)")
    path = dict(parse_qsl(parts.query, keep_blank_values=True))
    from unohil.emulator import rig as emulated
    from unohil.emulator.path import PathSpecError
    try:
        if clock == "real":
            (unit_sock, rig_sock), stop = emulated.start_real_pair(kind, opts, path)
            return (FdLink(device_url, sock=unit_sock, on_close=stop),
                    FdLink(rig_url, sock=rig_sock, on_close=stop))
        unit, rig = emulated.open_pair(kind, opts, path, closed_error=LinkClosed)
    except PathSpecError as exc:
        raise DeviceURLError(f"{rig_url}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise DeviceURLError(f"{device_url}: {exc}") from None
    unit.url, rig.url = device_url, rig_url
    return unit, rig


def open_drivers(device_url: str, rig_url: str, unit_cls: type[Driver] = Driver) -> tuple[Driver, Driver]:
    """The unit's driver (a unit_cls) and the rig's, each after HELLO and a time sync; the rig checked to be
    a rig."""
    if urlsplit(rig_url).scheme == EMULATED:
        unit_link, rig_link = _emulated_pair(device_url, rig_url)
        unit, rig = unit_cls(unit_link), Driver(rig_link)
        try:
            unit.hello()
            rig.hello(expect_kind=cat.RIG.kind)
        except BaseException:
            unit.close()
            rig.close()
            raise
    else:
        unit = unit_cls.open(device_url, sync=False)
        try:
            rig = Driver.open(rig_url, kind=cat.RIG.kind, sync=False)
        except BaseException:
            unit.close()
            raise
    if unit.kind not in cat.UNITS:
        unit.close()
        rig.close()
        raise DeviceURLError(f"{device_url}: this is a {unit.kind}, not a game unit")
    unit.sync_clock()
    rig.sync_clock()
    return unit, rig


def open_rig_unit(device_url: str, rig_url: str):
    """The unit in rig mode: a driver the runner uses as any other, whose stimuli go through the rig,
    wired with the reference wiring of its kind (harness/rig/unit.py). Closing it closes the rig too."""
    from unohil.harness.rig.session import RigSession
    from unohil.harness.rig.unit import RigUnitDriver
    unit, rig = open_drivers(device_url, rig_url, RigUnitDriver)
    try:
        unit.session = RigSession(unit, rig)
        unit.session.wire()
    except BaseException:
        unit.session = None
        unit.close()
        rig.close()
        raise
    return unit
