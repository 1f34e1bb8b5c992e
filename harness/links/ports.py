"""Finding units: what is attached (serial ports, USB devices, given paths), and which of it answers HELLO.

Lists the serial ports the OS reports (pyserial's comports), paths given with
--also (ptys, which no OS lists), and USB devices through pyusb. Every candidate
is probed at once, each in its own thread: open, one 0x00 then HELLO, and wait at
most the timeout for IDENTITY. So the whole command takes about one timeout, and a
port that never answers costs no more than one that does.

USB devices are probed only when their VID:PID is a unit's (1209:0001, or one
given with --usb-id): sending bytes to some other device's bulk endpoint is not
ours to do. Other devices with a vendor-specific bulk interface are listed
unprobed; the rest are counted.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from unohil.protocol import FrameError, StreamDecoder, catalogue as cat, encode, msg

from unohil.harness.errors import HarnessError
from unohil.harness.links.usb import DEFAULT_PID, DEFAULT_VID

PROBE_SEQ = 0x5EED
DEFAULT_TIMEOUT_MS = 300
KIND_NAMES = cat.ENUM_NAMES["unit_kind"]


@dataclass
class PortInfo:
    port: str                       # what to give --device
    via: str                        # serial | usb | path
    description: str = ""
    status: str = "not probed"      # unit | no answer | not a unit | error | not probed
    reason: str = ""
    kind: str | None = None
    serial: int | None = None
    firmware: str | None = None
    protocol: str | None = None
    boot_id: int | None = None
    probe_ms: float | None = None
    _device: object = field(default=None, repr=False)   # a pyusb Device to probe

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("_device")
        return d


# ---- discovery ----

def serial_ports() -> list[PortInfo]:
    from serial.tools import list_ports
    out = []
    for p in sorted(list_ports.comports(), key=lambda p: p.device):
        desc = p.description if p.description and p.description != "n/a" else ""
        if p.vid is not None:
            ids = f"USB {p.vid:04x}:{p.pid:04x}" + (f" serial {p.serial_number}" if p.serial_number else "")
            desc = f"{desc} ({ids})" if desc else ids
        out.append(PortInfo(p.device, "serial", desc))
    return out


def _has_bulk_pair(dev) -> bool:
    import usb.core
    import usb.util
    try:
        for cfg in dev:
            for intf in cfg:
                if intf.bInterfaceClass != 0xFF:
                    continue
                dirs = {usb.util.endpoint_direction(e.bEndpointAddress) for e in intf
                        if usb.util.endpoint_type(e.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK}
                if dirs == {usb.util.ENDPOINT_IN, usb.util.ENDPOINT_OUT}:
                    return True
    except (usb.core.USBError, NotImplementedError, IndexError):
        pass
    return False


def usb_devices(unit_ids: set[tuple[int, int]], backend=None) -> tuple[list[PortInfo], list[str]]:
    """USB units and candidates, plus notes (no backend; devices not shown)."""
    try:
        import usb.core  # noqa: F401
    except ImportError:
        return [], ["USB: not listed: pyusb is not installed (pip install pyusb)"]
    from unohil.harness.links import usb as usb_link
    try:
        if backend is None:
            backend = usb_link.get_backend()
        devs = usb_link.find_devices(backend=backend)
    except HarnessError as exc:
        text = str(exc)
        if "no USB backend" in text:
            return [], ["USB: not listed: no libusb backend on this machine (install libusb-1.0: "
                        "`apt install libusb-1.0-0`, `brew install libusb`)"]
        return [], [f"USB: not listed: {text}"]
    out, others = [], 0
    for dev in devs:
        ids = (dev.idVendor, dev.idProduct)
        is_unit_id = ids in unit_ids
        if not is_unit_id and (dev.bDeviceClass == 9 or not _has_bulk_pair(dev)):
            others += 1
            continue
        serial, err = usb_link.read_serial(dev)
        product = _string(dev, "product")
        url = f"usb://{ids[0]:04x}:{ids[1]:04x}" + (f"?serial={serial}" if serial else "")
        desc = f"{product or 'USB device'} (bus {dev.bus} address {dev.address}" + \
               (f", serial {serial})" if serial else ")")
        info = PortInfo(url, "usb", desc)
        if is_unit_id:
            info._device = dev
        else:
            info.reason = "not a unit's VID:PID; add --usb-id VID:PID to probe it"
        if err is not None and serial is None and usb_link.permission_denied(err):
            rule = usb_link.UDEV_RULE.format(vid=ids[0], pid=ids[1])
            info.status, info.reason = "error", (f"permission denied: put the udev rule {rule} in "
                                                 f"/etc/udev/rules.d/70-uno-hil.rules and replug")
            info._device = None
        if info._device is None:
            import usb.util
            usb.util.dispose_resources(dev)   # the strings opened it; only a probe keeps it open
        out.append(info)
    notes = [f"USB: {others} other device(s) without a vendor-specific bulk interface not shown"] if others else []
    return out, notes


def _string(dev, attr: str) -> str | None:
    try:
        return getattr(dev, attr)
    except Exception:                 # permissions, stalls: a missing string is not worth a failure
        return None


# ---- probing ----

def probe(info: PortInfo, timeout_us: int) -> PortInfo:
    from unohil.harness.links import open_link
    from unohil.harness.links.usb import link_for_device
    t0 = time.monotonic()
    link = None
    try:
        if info._device is not None:
            link = link_for_device(info._device, info.port)
        else:
            link = open_link(info.port)
        _hello(link, info, timeout_us)
    except HarnessError as exc:
        info.status, info.reason = "error", _short(str(exc), info.port)
    except OSError as exc:
        info.status, info.reason = "error", str(exc)
    finally:
        if link is not None:
            try:
                link.close()
            except (HarnessError, OSError):
                pass
        info.probe_ms = round((time.monotonic() - t0) * 1000, 1)
    return info


def _short(text: str, port: str) -> str:
    text = text.split("\n")[0]
    return text[len(port) + 2:] if text.startswith(port + ": ") else text


def _hello(link, info: PortInfo, timeout_us: int) -> None:
    link.write(b"\x00" + encode(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), PROBE_SEQ, 0))
    deadline = link.now_us() + timeout_us
    dec = StreamDecoder()
    nbytes = frames = 0
    while True:
        left = deadline - link.now_us()
        if left <= 0:
            break
        data, _ = link.read(left)
        if not data:
            continue
        nbytes += len(data)
        for f in dec.feed(data):
            if isinstance(f, FrameError):
                continue
            frames += 1
            m = f.msg
            if m.KIND != "reply" or m.cmd_seq != PROBE_SEQ:
                continue
            if m.NAME == "IDENTITY":
                info.status = "unit"
                info.kind = KIND_NAMES.get(m.kind, f"unknown({m.kind})")
                info.serial = m.serial
                info.firmware = f"{m.fw_major}.{m.fw_minor}.{m.fw_patch}"
                info.protocol = f"{m.proto_major}.{m.proto_minor}"
                info.boot_id = m.boot_id
                if m.proto_major == cat.MAJOR and m.proto_minor == cat.MINOR and m.catalog_crc != cat.CATALOG_CRC:
                    info.reason = f"catalogue CRC {m.catalog_crc:#06x}, this harness {cat.CATALOG_CRC:#06x}"
                return
            if m.NAME == "NAK":
                info.status = "unit"
                info.reason = f"refused HELLO: {cat.enum_name('error', m.error)}"
                if m.error == cat.ENUM_VALUES["error"]["bad_version"]:
                    info.protocol = f"{m.detail}.x"
                    info.reason = f"speaks protocol {m.detail}.x, this harness {cat.MAJOR}.{cat.MINOR}"
                return
    if nbytes and frames:
        info.status, info.reason = "not a unit", f"{frames} frame(s) but no answer to HELLO"
    elif nbytes:
        info.status, info.reason = "not a unit", f"{nbytes} byte(s) that are not protocol {cat.MAJOR}.x frames"
    else:
        info.status, info.reason = "no answer", f"nothing within {timeout_us // 1000} ms"


def scan(*, also: list[str] = (), usb_ids: list[tuple[int, int]] = (), timeout_ms: int = DEFAULT_TIMEOUT_MS,
         serial: bool = True, usb: bool = True, backend=None) -> tuple[list[PortInfo], list[str]]:
    ports = serial_ports() if serial else []
    seen = {p.port for p in ports}
    ports += [PortInfo(path, "path") for path in also if path not in seen]
    notes: list[str] = []
    timeout_us = timeout_ms * 1000
    with ThreadPoolExecutor(max_workers=32) as pool:
        # serial ports start answering while USB enumeration (which may load libusb) runs
        futures = [pool.submit(probe, p, timeout_us) for p in ports]
        if usb:
            found, notes = usb_devices({(DEFAULT_VID, DEFAULT_PID), *usb_ids}, backend)
            ports += found
            futures += [pool.submit(probe, p, timeout_us) for p in found if p._device is not None]
        for f in futures:
            f.result()
    return ports, notes
