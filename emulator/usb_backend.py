"""Emulated units on an emulated USB bus, as a pyusb backend.

    backend = EmulatedBackend()
    backend.add("showdown", serial=0x2A)
    dev = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=backend)

Everything above the backend is pyusb's own code: find() reads the device
descriptors, string descriptors (serial number included) go through
ctrl_transfer GET_DESCRIPTOR, set_configuration / claim_interface /
read / write run pyusb's resource manager. So a host tested against this backend
runs the same code paths it runs against libusb and a board.

Each unit is a Device on a RealClock served by a Server thread (emulator/serve.py)
on one end of a socketpair; the other end is the unit's USB side. The USB side
models what a host sees of a full-speed board (SPEC.md section 10.1):

- Descriptors: bcdUSB 2.00, VID:PID (default 1209:0001), one configuration, one
  interface of class 0xFF with bulk OUT 0x01 and bulk IN 0x81, wMaxPacketSize 64;
  strings: manufacturer, product, serial number (IDENTITY.serial as 8 upper-case
  hex digits), interface.
- IN transfers: at each IN token the unit packs what it has produced into 64-byte
  packets; a transfer of N bytes completes when N bytes arrived or at a short
  packet. A last packet of exactly 64 bytes is followed by a zero-length packet
  (unless the unit is created with zlp=False, the classic firmware bug: the
  transfer then waits for more data and ends by timeout). A packet that does not fit
  the rest of the host's buffer is an overflow (LIBUSB_ERROR_OVERFLOW), as with
  libusb: read in multiples of wMaxPacketSize.
- Errors are raised exactly as pyusb's libusb1 backend raises them: USBError with
  the libusb error code in backend_error_code and the errno, USBTimeoutError for
  timeouts (with partial data, the transfer returns what arrived instead), a
  timeout of 0 waits forever. open_device of a unit created with access=False fails
  with LIBUSB_ERROR_ACCESS (a missing udev rule); a second handle claiming the
  interface gets LIBUSB_ERROR_BUSY; after unplug() every transfer, including one
  blocked in a read, fails with LIBUSB_ERROR_NO_DEVICE and the unit disappears
  from enumeration. plug() powers it up again: a fresh boot at a new address.

get_backend() (pyusb's convention for backend modules) returns one process-wide
backend whose units are described by the environment variable UNOHIL_USB_UNITS:
comma-separated KIND[?option=value&...], e.g. "showdown?serial=1,showdown?serial=2"
(default: one showdown). Options: serial (default PID*4096+i, of this process's own), seed, clock (real | virtual), vid, pid,
access, configured, zlp, boot_time_us, and the unit options (card_capacity,
players).
"""
from __future__ import annotations

import array
import errno
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from types import SimpleNamespace
from urllib.parse import parse_qsl

import usb.backend
from usb.core import USBError, USBTimeoutError

from .clock import RealClock
from .build import own_serial
from .device import FIRMWARE, Device
from .serve import Server, SocketPort

VID = 0x1209
PID = 0x0001
EP_OUT = 0x01
EP_IN = 0x81
MAX_PACKET = 64
CONFIG_VALUE = 1
LANGID_EN_US = 0x0409
SPEED_FULL = 2            # libusb_speed
PRODUCTS = {"showdown": "UNO Showdown unit", "flash": "UNO Flash base", "launcher": "UNO Attack card launcher"}

# libusb error codes and the texts pyusb's libusb1 backend gives them
ERROR_IO = -1
ERROR_INVALID_PARAM = -2
ERROR_ACCESS = -3
ERROR_NO_DEVICE = -4
ERROR_NOT_FOUND = -5
ERROR_BUSY = -6
ERROR_TIMEOUT = -7
ERROR_OVERFLOW = -8
ERROR_PIPE = -9
_TEXT = {
    ERROR_IO: ("Input/output error", errno.EIO),
    ERROR_INVALID_PARAM: ("Invalid parameter", errno.EINVAL),
    ERROR_ACCESS: ("Access denied (insufficient permissions)", errno.EACCES),
    ERROR_NO_DEVICE: ("No such device (it may have been disconnected)", errno.ENODEV),
    ERROR_NOT_FOUND: ("Entity not found", errno.ENOENT),
    ERROR_BUSY: ("Resource busy", errno.EBUSY),
    ERROR_TIMEOUT: ("Operation timed out", errno.ETIMEDOUT),
    ERROR_OVERFLOW: ("Overflow", errno.EOVERFLOW),
    ERROR_PIPE: ("Pipe error", errno.EPIPE),
}


def usb_error(code: int) -> USBError:
    text, err = _TEXT[code]
    cls = USBTimeoutError if code == ERROR_TIMEOUT else USBError
    return cls(text, code, err)


# ---- descriptors: built as the bytes a board returns to GET_DESCRIPTOR ----

_DEVICE = struct.Struct("<BBHBBBBHHHBBBB")
_CONFIG = struct.Struct("<BBHBBBBB")
_INTERFACE = struct.Struct("<BBBBBBBBB")
_ENDPOINT = struct.Struct("<BBBBHB")
_FIELDS = {
    1: ("bLength bDescriptorType bcdUSB bDeviceClass bDeviceSubClass bDeviceProtocol bMaxPacketSize0 "
        "idVendor idProduct bcdDevice iManufacturer iProduct iSerialNumber bNumConfigurations", _DEVICE),
    2: ("bLength bDescriptorType wTotalLength bNumInterfaces bConfigurationValue iConfiguration bmAttributes "
        "bMaxPower", _CONFIG),
    4: ("bLength bDescriptorType bInterfaceNumber bAlternateSetting bNumEndpoints bInterfaceClass "
        "bInterfaceSubClass bInterfaceProtocol iInterface", _INTERFACE),
    5: ("bLength bDescriptorType bEndpointAddress bmAttributes wMaxPacketSize bInterval", _ENDPOINT),
}


def _bcd(major: int, minor: int, patch: int) -> int:
    return (major % 100 // 10) << 12 | (major % 10) << 8 | (minor % 10) << 4 | patch % 10


def _parse(blob: bytes) -> SimpleNamespace:
    names, st = _FIELDS[blob[1]]
    d = SimpleNamespace(**dict(zip(names.split(), st.unpack_from(blob))))
    d.extra_descriptors = []
    if blob[1] == 5:
        d.bRefresh = 0
        d.bSynchAddress = 0
    return d


class _Handle:
    """What open_device returns: valid for one plug-in of one unit."""

    def __init__(self, unit: "EmulatedUnit"):
        self.unit = unit
        self.generation = unit.generation
        self.claimed: set[int] = set()
        self.open = True


class EmulatedUnit:
    """One emulated board on the bus."""

    def __init__(self, kind: str = "showdown", *, serial: int = 1, seed: int = 1, clock: str = "real",
                 vid: int = VID, pid: int = PID, serial_string: str | None = None, access: bool = True,
                 configured: bool = True, zlp: bool = True, boot_time_us: int = 0, bus: int = 1,
                 address: int = 1, device_class=Device, **unit_options):
        if clock not in ("real", "virtual"):
            raise ValueError(f"clock must be 'real' or 'virtual', not {clock!r}")
        self.kind = kind
        self.serial = serial
        self.seed = seed
        self.clock_mode = clock
        self.vid, self.pid = vid, pid
        self.serial_string = serial_string if serial_string is not None else f"{serial:08X}"
        self.access = access
        self.zlp = zlp
        self.boot_time_us = boot_time_us
        self.unit_options = unit_options
        self.device_class = device_class
        self.bus = bus
        self.address = address
        self.configuration = CONFIG_VALUE if configured else 0
        self.generation = 0
        self.plugged = False
        self.device: Device | None = None
        self.claims: dict[int, _Handle] = {}
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._stop = None
        self._packets: deque[bytes] = deque()
        self.last_end: str | None = None          # how the last IN transfer ended (see bulk_in)
        fw = _bcd(*FIRMWARE)
        self.strings = {1: "uno-hil", 2: f"{PRODUCTS.get(kind, kind)} (emulated)", 3: self.serial_string,
                        4: "uno-hil protocol 1.0"}
        self.device_descriptor = _DEVICE.pack(18, 1, 0x0200, 0, 0, 0, 64, vid, pid, fw, 1, 2, 3, 1)
        body = (_INTERFACE.pack(9, 4, 0, 0, 2, 0xFF, 0, 0, 4)
                + _ENDPOINT.pack(7, 5, EP_OUT, 0x02, MAX_PACKET, 0)
                + _ENDPOINT.pack(7, 5, EP_IN, 0x02, MAX_PACKET, 0))
        self.config_descriptor = _CONFIG.pack(9, 2, 9 + len(body), 1, CONFIG_VALUE, 0, 0x80, 50) + body

    def __repr__(self) -> str:
        state = "plugged" if self.plugged else "unplugged"
        return f"<EmulatedUnit {self.kind} {self.vid:04x}:{self.pid:04x} serial {self.serial_string} {state}>"

    # ---- power ----
    def plug(self) -> "EmulatedUnit":
        """Connect and power up: the unit boots (BOOT reason power_on) at a new bus address."""
        if self.plugged:
            return self
        host_end, unit_end = socket.socketpair()
        clock = RealClock(pin_due=self.clock_mode == "virtual")
        device = self.device_class(self.kind, clock, seed=self.seed, serial=self.serial,
                                   boot_time_us=self.boot_time_us, salt=os.urandom(8), **self.unit_options)
        server = Server(clock)
        server.add(device, SocketPort(unit_end, f"usb:{self.serial_string}"))
        device.start()
        thread = threading.Thread(target=server.run, name=f"usb-unit-{self.serial_string}", daemon=True)
        thread.start()

        def stop() -> None:
            server.stop()
            thread.join(timeout=5)
            server.close()

        host_end.setblocking(False)
        with self._lock:
            self.generation += 1
            if self.generation > 1:
                self.address = self.address % 127 + 1
            self.device = device
            self._sock = host_end
            self._stop = stop
            self._packets.clear()
            self.claims.clear()
            self.plugged = True
        return self

    def unplug(self) -> None:
        """Pull the cable: the unit loses power and every handle on it fails with NO_DEVICE."""
        with self._lock:
            if not self.plugged:
                return
            self.plugged = False
            sock, stop = self._sock, self._stop
            self._sock = self._stop = None
            self.claims.clear()
            self._packets.clear()
        try:
            sock.shutdown(socket.SHUT_RDWR)     # wakes a read blocked in select
        except OSError:
            pass
        stop()
        sock.close()

    # ---- transfers (called by the backend with a checked handle) ----
    def _fill(self) -> bool:
        """Pack what the unit has produced since the last IN token into packets.
        False when the unit is gone."""
        sock = self._sock
        if sock is None:
            return False
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                return False
            if not data:
                return False
            chunks.append(data)
        if chunks:
            data = b"".join(chunks)
            for i in range(0, len(data), MAX_PACKET):
                self._packets.append(data[i:i + MAX_PACKET])
            if len(data) % MAX_PACKET == 0 and self.zlp:
                self._packets.append(b"")
        return True

    def wait_output(self, nbytes: int, timeout_s: float = 10.0) -> None:
        """Block until the unit has produced at least nbytes not yet taken by an IN token
        (for tests that must know what the next IN transfer will find)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                sock = self._sock
                queued = sum(len(p) for p in self._packets)
                try:
                    queued += len(sock.recv(65536, socket.MSG_PEEK)) if sock is not None else 0
                except (BlockingIOError, InterruptedError):
                    pass
            if queued >= nbytes:
                return
            wait = deadline - time.monotonic()
            if wait <= 0 or sock is None:
                raise TimeoutError(f"the unit produced {queued} of {nbytes} bytes")
            select.select([sock], [], [], wait)

    def bulk_in(self, handle: _Handle, size: int, timeout_ms: int) -> bytes:
        """last_end records how the transfer ended (short, zlp, full or timeout), as a bus
        analyser would show it."""
        deadline = None if timeout_ms == 0 else time.monotonic() + timeout_ms / 1000
        got = bytearray()
        while True:
            with self._lock:
                self._check(handle)
                alive = self._fill()
                packets = self._packets
                while packets:
                    pkt = packets[0]
                    if len(pkt) > size - len(got):
                        packets.popleft()
                        raise usb_error(ERROR_OVERFLOW)
                    packets.popleft()
                    got += pkt
                    if len(pkt) < MAX_PACKET or len(got) == size:
                        self.last_end = "full" if len(pkt) == MAX_PACKET else ("zlp" if not pkt else "short")
                        return bytes(got)
                if not alive:
                    raise usb_error(ERROR_NO_DEVICE)
                sock = self._sock
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                self.last_end = "timeout"
                if got:
                    return bytes(got)       # libusb: a timeout after some data returns the data
                raise usb_error(ERROR_TIMEOUT)
            try:
                select.select([sock], [], [], wait)
            except (OSError, ValueError):
                pass                        # closed under us: the next round reports NO_DEVICE

    def bulk_out(self, handle: _Handle, data: bytes, timeout_ms: int) -> int:
        with self._lock:
            self._check(handle)
            sock = self._sock
        if not data:
            return 0                        # a zero-length packet: the unit ignores it
        view = memoryview(data)
        deadline = None if timeout_ms == 0 else time.monotonic() + timeout_ms / 1000
        sent = 0
        while sent < len(data):
            try:
                sent += sock.send(view[sent:])
                continue
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                raise usb_error(ERROR_NO_DEVICE) from None
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                if sent:
                    return sent
                raise usb_error(ERROR_TIMEOUT)
            select.select([], [sock], [], wait)
        return sent

    def _check(self, handle: _Handle) -> None:
        if not self.plugged or handle.generation != self.generation or not handle.open:
            raise usb_error(ERROR_NO_DEVICE)

    def stop(self) -> None:
        self.unplug()


class EmulatedBackend(usb.backend.IBackend):
    """A pyusb backend whose bus holds emulated units."""

    def __init__(self, units: list[EmulatedUnit] | None = None):
        usb.backend.IBackend.__init__(self)
        self.units: list[EmulatedUnit] = []
        for u in units or ():
            self.attach(u)

    def add(self, kind: str = "showdown", **options) -> EmulatedUnit:
        """Create a unit, plug it in, and return it."""
        address = max((u.address for u in self.units), default=0) + 1
        options.setdefault("address", address)
        return self.attach(EmulatedUnit(kind, **options))

    def attach(self, unit: EmulatedUnit) -> EmulatedUnit:
        self.units.append(unit)
        unit.plug()
        return unit

    def close(self) -> None:
        for u in self.units:
            u.stop()

    def __enter__(self) -> "EmulatedBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _finalize_object(self) -> None:
        pass

    # ---- enumeration and descriptors (no handle needed, as with libusb's cache) ----
    def enumerate_devices(self):
        return [u for u in self.units if u.plugged]

    def get_parent(self, dev):
        return None

    def get_device_descriptor(self, dev):
        d = _parse(dev.device_descriptor)
        d.bus, d.address, d.speed = dev.bus, dev.address, SPEED_FULL
        d.port_number = dev.address
        d.port_numbers = (dev.address,)
        return d

    def get_configuration_descriptor(self, dev, config):
        if config != 0:
            raise usb_error(ERROR_NOT_FOUND)
        return _parse(dev.config_descriptor)

    def get_interface_descriptor(self, dev, intf, alt, config):
        if config != 0 or intf != 0:
            raise IndexError(f"Invalid interface index {intf}")
        if alt != 0:
            raise IndexError(f"Invalid alternate setting index {alt}")
        return _parse(dev.config_descriptor[9:18])

    def get_endpoint_descriptor(self, dev, ep, intf, alt, config):
        self.get_interface_descriptor(dev, intf, alt, config)
        if ep not in (0, 1):
            raise IndexError(f"Invalid endpoint index {ep}")
        start = 18 + 7 * ep
        return _parse(dev.config_descriptor[start:start + 7])

    # ---- handles ----
    def open_device(self, dev):
        if not dev.plugged:
            raise usb_error(ERROR_NO_DEVICE)
        if not dev.access:
            raise usb_error(ERROR_ACCESS)
        return _Handle(dev)

    def close_device(self, dev_handle):
        unit = dev_handle.unit
        with unit._lock:
            for i in list(dev_handle.claimed):
                if unit.claims.get(i) is dev_handle:
                    del unit.claims[i]
            dev_handle.claimed.clear()
            dev_handle.open = False

    def set_configuration(self, dev_handle, config_value):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            if config_value not in (0, CONFIG_VALUE):
                raise usb_error(ERROR_NOT_FOUND)
            if unit.claims:
                raise usb_error(ERROR_BUSY)   # libusb refuses while an interface is claimed
            unit.configuration = config_value

    def get_configuration(self, dev_handle):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            return unit.configuration

    def set_interface_altsetting(self, dev_handle, intf, altsetting):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            if intf != 0 or altsetting != 0 or unit.claims.get(intf) is not dev_handle:
                raise usb_error(ERROR_NOT_FOUND)

    def claim_interface(self, dev_handle, intf):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            if unit.configuration != CONFIG_VALUE or intf != 0:
                raise usb_error(ERROR_NOT_FOUND)
            owner = unit.claims.get(intf)
            if owner is not None and owner is not dev_handle:
                raise usb_error(ERROR_BUSY)
            unit.claims[intf] = dev_handle
            dev_handle.claimed.add(intf)

    def release_interface(self, dev_handle, intf):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            if unit.claims.get(intf) is not dev_handle:
                raise usb_error(ERROR_NOT_FOUND)
            del unit.claims[intf]
            dev_handle.claimed.discard(intf)

    def is_kernel_driver_active(self, dev_handle, intf):
        return False

    def detach_kernel_driver(self, dev_handle, intf):
        raise usb_error(ERROR_NOT_FOUND)

    def attach_kernel_driver(self, dev_handle, intf):
        raise usb_error(ERROR_NOT_FOUND)

    # ---- transfers ----
    def _claimed(self, dev_handle, ep: int, intf: int, direction_in: bool) -> EmulatedUnit:
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            if ep != (EP_IN if direction_in else EP_OUT) or unit.claims.get(intf) is not dev_handle:
                raise usb_error(ERROR_NOT_FOUND)
        return unit

    def bulk_write(self, dev_handle, ep, intf, data, timeout):
        unit = self._claimed(dev_handle, ep, intf, False)
        return unit.bulk_out(dev_handle, data.tobytes(), timeout)

    def bulk_read(self, dev_handle, ep, intf, buff, timeout):
        unit = self._claimed(dev_handle, ep, intf, True)
        got = unit.bulk_in(dev_handle, len(buff) * buff.itemsize, timeout)
        buff[:len(got)] = array.array(buff.typecode, got)
        return len(got)

    def ctrl_transfer(self, dev_handle, bmRequestType, bRequest, wValue, wIndex, data, timeout):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
        length = len(data) * data.itemsize
        if bmRequestType == 0x80 and bRequest == 0x06:          # GET_DESCRIPTOR
            reply = self._descriptor(unit, wValue >> 8, wValue & 0xFF, wIndex)
        elif bmRequestType == 0x80 and bRequest == 0x08:        # GET_CONFIGURATION
            reply = bytes([unit.configuration])
        elif bmRequestType == 0x80 and bRequest == 0x00:        # GET_STATUS: bus-powered, no remote wakeup
            reply = b"\x00\x00"
        elif bmRequestType in (0x02, 0x82) and bRequest in (0x00, 0x01):   # endpoint status, CLEAR_FEATURE
            reply = b"\x00\x00" if bmRequestType & 0x80 else b""
        else:
            reply = None
        if reply is None:
            raise usb_error(ERROR_PIPE)     # the device stalls requests it does not know
        if not bmRequestType & 0x80:
            return length
        reply = reply[:length]
        data[:len(reply)] = array.array(data.typecode, reply)
        return len(reply)

    @staticmethod
    def _descriptor(unit: EmulatedUnit, kind: int, index: int, langid: int) -> bytes | None:
        if kind == 1 and index == 0:
            return unit.device_descriptor
        if kind == 2 and index == 0:
            return unit.config_descriptor
        if kind == 3:
            if index == 0:
                return bytes([4, 3]) + struct.pack("<H", LANGID_EN_US)
            text = unit.strings.get(index)
            if text is None or langid != LANGID_EN_US:
                return None
            body = text.encode("utf-16-le")
            return bytes([2 + len(body), 3]) + body
        return None

    def clear_halt(self, dev_handle, ep):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)

    def reset_device(self, dev_handle):
        unit = dev_handle.unit
        with unit._lock:
            unit._check(dev_handle)
            unit._packets.clear()


# ---- the process-wide backend for `python -m ...` runs configured by the environment ----

_SHARED: EmulatedBackend | None = None
_SHARED_LOCK = threading.Lock()
_BOOL = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
_UNIT_OPTIONS = {"serial": int, "seed": int, "clock": str, "vid": lambda v: int(v, 16), "pid": lambda v: int(v, 16),
                 "access": lambda v: _BOOL[v.lower()], "configured": lambda v: _BOOL[v.lower()],
                 "zlp": lambda v: _BOOL[v.lower()], "boot_time_us": int, "card_capacity": int, "players": int,
                 "serial_string": str}


def parse_units(spec: str) -> list[tuple[str, dict]]:
    """'showdown?serial=1,flash' -> [('showdown', {'serial': 1}), ('flash', {})]."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        kind, _, query = item.partition("?")
        opts = {}
        for key, value in parse_qsl(query, keep_blank_values=True):
            conv = _UNIT_OPTIONS.get(key)
            if conv is None:
                raise ValueError(f"UNOHIL_USB_UNITS: unknown unit option {key!r} in {item!r}; "
                                 f"options: {', '.join(sorted(_UNIT_OPTIONS))}")
            try:
                opts[key] = conv(value)
            except (KeyError, ValueError):
                raise ValueError(f"UNOHIL_USB_UNITS: bad value {value!r} for {key!r} in {item!r}") from None
        out.append((kind, opts))
    return out


def get_backend() -> EmulatedBackend:
    """The process-wide emulated bus, populated from UNOHIL_USB_UNITS on first use."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            backend = EmulatedBackend()
            for i, (kind, opts) in enumerate(parse_units(os.environ.get("UNOHIL_USB_UNITS", "showdown"))):
                opts.setdefault("serial", own_serial(i))       # as unohil emulate's: two processes, two units
                opts.setdefault("seed", i + 1)
                backend.add(kind, **opts)
            _SHARED = backend
        return _SHARED
