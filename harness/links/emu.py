"""emu://KIND?seed=N&clock=virtual|real&faults=SPEC: an in-process emulator behind the link interface.

rng=python gives the unit another allowed generator instead of SPEC 6's reference one (its
reference_rng bit clear), without=CAP,... clears optional capabilities, landing_sensor=0 takes the
Showdown's landing sensor away, false_start_launch=0 makes its false starts throw nothing (SD-3),
speed_at_power_on=1, slowest_light_only=1 and reset_light_show=1 build the Flash base's other readings
of its document (FL-20..FL-22), timer_lag_us=L stamps every timer event L us after its scheduled time
(PR-1 allows it): the variants a harness must be right about. inject_queue=N reports (and holds) N
pending stimuli instead of SPEC 4.8's 16: a unit the harness must recognise as not conforming.
serial=N is the unit's serial; unlike a served emulator's (pid * 4096 + i) it defaults to 1: the
unit is private to this process and never claimed, and its seed and serial seed its faulty line and
its boot ids, so a run on the virtual clock is the same every time.
wire=bytes makes the harness encode and decode every frame on this link, as on a link of bytes. By
default the virtual clock's unit and the harness hand each other frames as objects (wire=frames); a
faulty line (faults, baud, split_burst) and the real clock's socket carry bytes, and refuse wire=frames.
faults puts a faulty line between the harness and the unit (emulator/faults.py has the
vocabulary, e.g. faults=corrupt=1e-3,dropframe=1e-3,delay=50us..2ms). baud=115200 (a line held to
that baud rate, 8N1, both ways) and split_burst=20ms..40ms (the second frame of a burst that much
later) make a slow line: the same items of the line's spec, written on their own.

The harness reaches the emulator only through this registry entry, and imports it
only when such a URL is opened.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from unohil.protocol import catalogue as cat

from unohil.harness.errors import DeviceURLError, LinkClosed
from unohil.harness.links import query_options, register_scheme
from unohil.harness.links.fd import FdLink

KINDS = tuple(cat.UNITS)

_OPTIONS = {
    "seed": int, "clock": str, "serial": int, "card_capacity": int, "players": int,
    "boot_time_us": int, "drift_ppm": float, "host_offset_us": int, "faults": str, "without": str,
    "landing_sensor": int, "false_start_launch": int, "rng": str, "timer_lag_us": int, "inject_queue": int,
    "baud": str, "split_burst": str, "speed_at_power_on": int, "slowest_light_only": int, "reset_light_show": int,
    "verdict_delay_us": int, "firmware": str, "wire": str,
}
# a slow line's options, given apart from faults= for reading's sake: they are items of the line's spec
_LINE_ITEMS = ("baud", "split_burst")


def open_emu(url: str):
    parts = urlsplit(url)
    kind = (parts.netloc or parts.path.lstrip("/")).lower()
    if kind not in KINDS:
        raise DeviceURLError(f"{url}: unknown emulated unit {kind!r}; use one of {', '.join(KINDS)} "
                             f"(e.g. emu://showdown?seed=7)")
    opts = query_options(url, _OPTIONS)
    clock = opts.pop("clock", "virtual")
    items = [f"{k}={opts.pop(k)}" for k in _LINE_ITEMS if k in opts]
    if items:
        opts["faults"] = ",".join(filter(None, [opts.get("faults", "")] + items))
    if clock not in ("virtual", "real"):
        raise DeviceURLError(f"{url}: clock must be 'virtual' or 'real', not {clock!r}")
    from unohil.emulator import inprocess
    try:
        if clock == "virtual":
            link = inprocess.VirtualLink(kind, closed_error=LinkClosed, **opts)
            link.url = url
            return link
        if opts.pop("wire", "bytes") != "bytes":
            raise DeviceURLError(f"{url}: a unit on the real clock is reached through a socket: its wire is bytes")
        for key in ("host_offset_us", "drift_ppm"):
            if key in opts:
                raise DeviceURLError(f"{url}: option {key!r} exists only with clock=virtual")
        sock, stop = inprocess.start_real(kind, **opts)
    except (TypeError, ValueError) as exc:
        raise DeviceURLError(f"{url}: {exc}") from None
    return FdLink(url, sock=sock, on_close=stop)


register_scheme("emu", open_emu)
