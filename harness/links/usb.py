"""usb://VID:PID[?serial=S&read_size=N&write_timeout_ms=N]: a unit on its USB interface, through pyusb.

VID and PID are hex (usb://1209:0001; plain usb:// means the development
identifiers 1209:0001, SPEC.md section 10.1). serial selects among several units
by the iSerialNumber string, which a unit sets to IDENTITY.serial as 8 upper-case
hex digits: serial=0000002A, serial=2a and serial=2A name the same unit.

The link claims the vendor-specific interface (class 0xFF) and talks over its
bulk OUT and bulk IN endpoints. Reads are IN transfers of read_size bytes
(default 8 packets; always a multiple of wMaxPacketSize, since a packet that does
not fit the buffer is an overflow), which complete at a short or zero-length
packet, so a read returns as soon as the unit has sent something. A read never
asks for less than 1 ms: to libusb a timeout of 0 means "wait forever".

The pyusb backend is, in order: the one passed to open_usb(), the one installed
with set_backend(), the module named by UNOHIL_USB_BACKEND (its get_backend(),
pyusb's convention; unohil.emulator.usb_backend serves emulated units that way), or
pyusb's default (libusb-1.0, then OpenUSB, then libusb-0.1).
"""
from __future__ import annotations

import errno
import importlib
import os
import time
from urllib.parse import urlsplit

from unohil.harness.errors import DeviceURLError, LinkClosed, LinkError
from unohil.harness.links import query_options, register_scheme

DEFAULT_VID = 0x1209
DEFAULT_PID = 0x0001
READ_PACKETS = 8
WRITE_TIMEOUT_MS = 1000
_OPTIONS = {"serial": str, "read_size": int, "write_timeout_ms": int}

UDEV_RULE = ('SUBSYSTEM=="usb", ATTR{{idVendor}}=="{vid:04x}", ATTR{{idProduct}}=="{pid:04x}", MODE="0660", '
             'TAG+="uaccess"')
UDEV_HINT = ('add a udev rule, e.g. /etc/udev/rules.d/70-uno-hil.rules with\n  ' + UDEV_RULE +
             '\nthen `sudo udevadm control --reload && sudo udevadm trigger` and replug the unit')

_backend = None


def set_backend(backend) -> object:
    """Use this pyusb backend for usb:// URLs (None: back to the default). Returns the previous one."""
    global _backend
    previous, _backend = _backend, backend
    return previous


def get_backend():
    """The backend usb:// uses, or None for pyusb's own choice."""
    if _backend is not None:
        return _backend
    name = os.environ.get("UNOHIL_USB_BACKEND")
    if name:
        try:
            return importlib.import_module(name).get_backend()
        except (ImportError, AttributeError) as exc:
            raise DeviceURLError(f"UNOHIL_USB_BACKEND={name}: cannot load a pyusb backend from it: {exc}") from None
    return None


def parse_url(url: str) -> tuple[int, int, dict]:
    parts = urlsplit(url)
    where = parts.netloc or parts.path.lstrip("/")
    if not where:
        vid, pid = DEFAULT_VID, DEFAULT_PID
    else:
        vid_s, sep, pid_s = where.partition(":")
        try:
            if not sep or not 1 <= len(vid_s) <= 4 or not 1 <= len(pid_s) <= 4:
                raise ValueError
            vid, pid = int(vid_s, 16), int(pid_s, 16)
        except ValueError:
            raise DeviceURLError(f"{url}: expected usb://VID:PID with hex ids, e.g. usb://1209:0001 "
                                 f"or usb://1209:0001?serial=0000002A") from None
    opts = query_options(url, _OPTIONS)
    if "read_size" in opts and (opts["read_size"] <= 0 or opts["read_size"] % 64):
        raise DeviceURLError(f"{url}: read_size must be a positive multiple of 64 (wMaxPacketSize), "
                             f"not {opts['read_size']}")
    if opts.get("write_timeout_ms", 1) <= 0:
        raise DeviceURLError(f"{url}: write_timeout_ms must be at least 1")
    return vid, pid, opts


def serial_matches(wanted: str, actual: str | None) -> bool:
    if actual is None:
        return False
    if wanted.strip().lower() == actual.strip().lower():
        return True
    try:
        return int(wanted, 16) == int(actual, 16)
    except ValueError:
        return False


def describe_serial(s: str | None) -> str:
    if s is None:
        return "(unreadable)"
    if len(s) == 8:
        try:
            return f"{s} (IDENTITY.serial {int(s, 16)})"
        except ValueError:
            pass
    return s


def read_serial(dev) -> tuple[str | None, Exception | None]:
    """The iSerialNumber string, or why it cannot be read (usually: no permission to open the device)."""
    import usb.core
    if not dev.iSerialNumber:
        return None, None
    try:
        return dev.serial_number, None
    except (usb.core.USBError, ValueError, NotImplementedError) as exc:
        return None, exc


def permission_denied(exc) -> bool:
    return getattr(exc, "errno", None) == errno.EACCES or "langid" in str(exc) or "permission" in str(exc).lower()


def _ids(vid: int, pid: int) -> str:
    return f"{vid:04x}:{pid:04x}"


def find_devices(vid: int | None = None, pid: int | None = None, backend=None, url: str = "usb://"):
    """Every USB device (of that VID:PID), or DeviceURLError when there is no USB backend at all."""
    import usb.core
    kw = {}
    if vid is not None:
        kw["idVendor"] = vid
    if pid is not None:
        kw["idProduct"] = pid
    try:
        return list(usb.core.find(find_all=True, backend=backend, **kw))
    except usb.core.NoBackendError:
        raise DeviceURLError(f"{url}: no USB backend: libusb-1.0 is not installed (Debian/Ubuntu: "
                             f"`sudo apt install libusb-1.0-0`; macOS: `brew install libusb`), or use the "
                             f"unit's serial port instead") from None


def open_usb(url: str, backend=None) -> "UsbLink":
    vid, pid, opts = parse_url(url)
    try:
        import usb.core
    except ImportError:
        raise DeviceURLError(f"{url}: pyusb is not installed (`pip install pyusb`)") from None
    if backend is None:
        backend = get_backend()
    devs = find_devices(vid, pid, backend, url)
    if not devs:
        present = sorted({_ids(d.idVendor, d.idProduct) for d in find_devices(backend=backend, url=url)})
        listing = f"attached: {', '.join(present)}" if present else "no USB devices are visible at all"
        raise DeviceURLError(f"{url}: no USB device {_ids(vid, pid)} is attached ({listing}). Check the cable "
                             f"and that the unit is powered; `unohil ports` lists what answers.")
    wanted = opts.get("serial")
    serials = [(d, *read_serial(d)) for d in devs]
    if wanted is not None:
        hits = [d for d, s, _ in serials if serial_matches(wanted, s)]
        if not hits:
            denied = [e for _, s, e in serials if s is None and e is not None and permission_denied(e)]
            if denied:
                raise DeviceURLError(f"{url}: cannot read the serial numbers of the {_ids(vid, pid)} devices: "
                                     f"permission denied; " + UDEV_HINT.format(vid=vid, pid=pid))
            have = ", ".join(describe_serial(s) for _, s, _ in serials)
            raise DeviceURLError(f"{url}: no {_ids(vid, pid)} device with serial {wanted}; attached: {have}")
        if len(hits) > 1:
            raise DeviceURLError(f"{url}: {len(hits)} {_ids(vid, pid)} devices have serial {wanted}: give each "
                                 f"unit its own serial number")
        dev = hits[0]
        serial = next(s for d, s, _ in serials if d is dev)
    elif len(devs) > 1:
        have = ", ".join(describe_serial(s) for _, s, _ in serials)
        first = next((s for _, s, _ in serials if s), None)
        pick = f"add ?serial={first} (say)" if first else "add ?serial=... (the serials cannot be read: check permissions)"
        raise DeviceURLError(f"{url}: {len(devs)} {_ids(vid, pid)} devices are attached (serials {have}); "
                             f"{pick} to choose one")
    else:
        dev, serial = devs[0], serials[0][1]
    return link_for_device(dev, url, serial=serial, vid=vid, pid=pid, read_size=opts.get("read_size"),
                           write_timeout_ms=opts.get("write_timeout_ms", WRITE_TIMEOUT_MS))


def link_for_device(dev, url: str, *, serial: str | None = None, vid: int | None = None, pid: int | None = None,
                    read_size: int | None = None, write_timeout_ms: int = WRITE_TIMEOUT_MS) -> "UsbLink":
    """Configure and claim a pyusb Device already found, as open_usb does."""
    import usb.core
    import usb.util
    vid = dev.idVendor if vid is None else vid
    pid = dev.idProduct if pid is None else pid
    where = f"{url} (bus {dev.bus} address {dev.address})"
    try:
        intf, ep_out, ep_in = _claim(dev, where)
    except usb.core.USBError as exc:
        usb.util.dispose_resources(dev)
        raise DeviceURLError(_explain(where, exc, vid, pid)) from None
    except BaseException:
        usb.util.dispose_resources(dev)
        raise
    return UsbLink(url, dev, intf, ep_out, ep_in, serial=serial, read_size=read_size,
                   write_timeout_ms=write_timeout_ms)


def _claim(dev, where: str):
    import usb.core
    import usb.util
    try:
        cfg = dev.get_active_configuration()
    except usb.core.USBError as exc:
        if exc.errno in (errno.EACCES, errno.ENODEV, errno.EBUSY):
            raise
        cfg = None                    # unconfigured: 'Configuration not set'
    if cfg is None:
        dev.set_configuration()
        cfg = dev.get_active_configuration()
    for intf in cfg:
        if intf.bInterfaceClass != 0xFF or intf.bAlternateSetting != 0:
            continue
        eps = list(intf)
        bulk = [e for e in eps if usb.util.endpoint_type(e.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK]
        out = next((e for e in bulk if usb.util.endpoint_direction(e.bEndpointAddress) == usb.util.ENDPOINT_OUT), None)
        inn = next((e for e in bulk if usb.util.endpoint_direction(e.bEndpointAddress) == usb.util.ENDPOINT_IN), None)
        if out is None or inn is None:
            continue
        try:
            if dev.is_kernel_driver_active(intf.bInterfaceNumber):
                dev.detach_kernel_driver(intf.bInterfaceNumber)
        except (NotImplementedError, usb.core.USBError):
            pass                      # not on this OS, or no driver bound: nothing to detach
        usb.util.claim_interface(dev, intf.bInterfaceNumber)
        return intf.bInterfaceNumber, out, inn
    raise DeviceURLError(f"{where}: no vendor-specific interface (class 0xFF) with a bulk OUT and a bulk IN "
                         f"endpoint: is this a uno-hil unit? (SPEC.md section 10.1)")


def _explain(where: str, exc, vid: int, pid: int) -> str:
    code = getattr(exc, "errno", None)
    if code == errno.EACCES:
        return f"{where}: permission denied opening the device; " + UDEV_HINT.format(vid=vid, pid=pid)
    if code == errno.EBUSY:
        return (f"{where}: the interface is in use by another program (another unohil, a serial terminal?); "
                f"close it and try again")
    if code == errno.ENODEV:
        return f"{where}: the device went away while it was being opened; check the cable and try again"
    return f"{where}: cannot open the device: {exc}"


class UsbLink:
    """The byte stream over one unit's bulk endpoints (the Link interface of harness/links/__init__.py)."""

    virtual = False
    usb = True      # data moves in 1 ms frames (harness/session/timing.py)

    def __init__(self, url: str, dev, intf: int, ep_out, ep_in, *, serial: str | None = None,
                 read_size: int | None = None, write_timeout_ms: int = WRITE_TIMEOUT_MS):
        self.url = url
        self.dev = dev
        self.interface = intf
        self.packet_size = ep_in.wMaxPacketSize
        self.read_size = read_size or READ_PACKETS * self.packet_size
        self.write_timeout_ms = write_timeout_ms
        self.serial = serial
        self.bus, self.address = dev.bus, dev.address
        self._ep_out = ep_out.bEndpointAddress
        self._ep_in = ep_in.bEndpointAddress
        self.zero_length_packets = 0
        self.closed = False

    def now_us(self) -> int:
        return time.monotonic_ns() // 1000

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        import usb.core
        if self.closed:
            raise LinkClosed(f"{self.url}: link is closed")
        deadline = time.monotonic_ns() // 1000 + max(0, timeout_us)
        while True:
            left = deadline - time.monotonic_ns() // 1000
            ms = max(1, -(-left // 1000))
            try:
                data = self.dev.read(self._ep_in, self.read_size, ms)
            except usb.core.USBTimeoutError:
                return b"", time.monotonic_ns() // 1000
            except usb.core.USBError as exc:
                raise self._failed("read", exc) from None
            host_us = time.monotonic_ns() // 1000
            if len(data):
                return data.tobytes(), host_us
            # a zero-length packet only ends a transfer of whole packets; it carries nothing
            self.zero_length_packets += 1
            if host_us >= deadline:
                return b"", host_us

    def write(self, data: bytes) -> None:
        import usb.core
        if self.closed:
            raise LinkClosed(f"{self.url}: link is closed")
        view = memoryview(bytes(data))
        while view:                   # never an empty write: the host sends no zero-length packets
            try:
                n = self.dev.write(self._ep_out, view, self.write_timeout_ms)
            except usb.core.USBTimeoutError:
                raise LinkError(f"{self.url}: the unit did not take {len(view)} byte(s) within "
                                f"{self.write_timeout_ms} ms: is its firmware running?") from None
            except usb.core.USBError as exc:
                raise self._failed("write", exc) from None
            view = view[n:]

    def _failed(self, what: str, exc) -> LinkError:
        code = getattr(exc, "errno", None)
        if code in (errno.ENODEV, errno.ESHUTDOWN, errno.EIO) or code is None and "no such device" in str(exc).lower():
            self.close()
            return LinkClosed(f"{self.url}: the unit was unplugged or reset during a {what} (USB: {exc}); "
                              f"check the cable and power, then run again")
        if code == errno.EOVERFLOW:
            return LinkError(f"{self.url}: {what} overflow: the unit sent a packet larger than its "
                             f"wMaxPacketSize ({self.packet_size}) (USB: {exc})")
        if code == errno.EPIPE:
            return LinkError(f"{self.url}: the unit stalled its endpoint during a {what} (USB: {exc}); "
                             f"replug it")
        return LinkError(f"{self.url}: USB {what} failed: {exc}")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        import usb.core
        import usb.util
        try:
            usb.util.release_interface(self.dev, self.interface)
        except (usb.core.USBError, ValueError):
            pass                      # unplugged: nothing left to release
        try:
            usb.util.dispose_resources(self.dev)
        except usb.core.USBError:
            pass


register_scheme("usb", open_usb)
