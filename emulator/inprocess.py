"""The emulator inside the host's process, behind the harness's link interface.

VirtualLink: a unit on the virtual clock, no threads. Time moves only inside read():
to the next scheduled device activity, or by the whole timeout when nothing is due.
A read that times out at instant T leaves what is due at exactly T pending: bytes
written then arrive before T's timers (inputs before timers at one instant,
SPEC.md 4.8, and after any INJECT due at T), and the next read runs them. Host
time is derived from device time:

    host_us = host_offset_us + floor(clock_us * 1e6 / (1e6 + drift_ppm))

where clock_us counts device microseconds since the link was made. drift_ppm > 0
means the device's crystal runs fast: it counts (1 + drift_ppm/1e6) us per host us.
Bytes written arrive at the device at the current time, and the device answers at
once (zero transmission and processing time), so time-sync round trips are 0.
true_offset_us(host_us) is the exact device - host offset (device time unwrapped,
as a host's unwrapper that started at the BOOT frame sees it).

Frames go as objects both ways (hands_frames): the host's Driver writes its commands with
write_message and reads the unit's frames with read_frames, with nothing encoded or decoded in
between; read() and write() still carry bytes, for whoever speaks bytes (a conformance check's
malformed frames). wire="bytes" takes the object path away, so the host encodes and decodes as on a
byte link (the codec's tests on this link); so does a faulty line, which works on bytes.

faults="corrupt=1e-3,..." (emulator/faults.py) puts the link's bytes through a
faulty line; its delays are virtual time. closed_error is what reads and writes
raise once the link is closed or the line was cut (the harness passes its own
LinkClosed).

start_real: a unit on the real clock served from a thread on one end of a
socketpair; the caller reads and writes the other end (faults: the same faulty line,
in real time).
"""
from __future__ import annotations

import os
import socket
import threading
from fractions import Fraction
from math import floor

from .clock import INPUT, RealClock, VirtualClock
from .device import Device
from .faults import VirtualFaults, parse as fault_spec


WIRES = ("frames", "bytes")


class VirtualLink:
    virtual = True

    def __init__(self, kind: str, seed: int = 1, *, serial: int = 1, host_offset_us: int = 5_000_000_000,
                 boot_time_us: int = 0, drift_ppm: float = 0.0, faults=None, wire: str | None = None,
                 closed_error: type[Exception] = ConnectionError, **unit_options):
        self.url = f"emu://{kind}?seed={seed}&clock=virtual"
        # host times go on the wire as u64 (TIME_SYNC), and a rate of 1 + drift must stay positive
        if not 0 <= host_offset_us < 1 << 63:
            raise ValueError(f"host_offset_us must be a host time in us, from 0 to 2^63 - 1, not {host_offset_us}")
        if not -1_000_000 < drift_ppm < 1_000_000:      # also refuses nan and inf
            raise ValueError(f"drift_ppm must be more than -1000000 and less than 1000000, not {drift_ppm}")
        if wire not in (None, *WIRES):
            raise ValueError(f"wire must be one of {', '.join(WIRES)}, not {wire!r}")
        spec = fault_spec(faults)
        if spec is not None and wire == "frames":
            raise ValueError("wire=frames cannot go through a faulty line: its faults act on bytes")
        self.clock = VirtualClock()
        self.device = Device(kind, self.clock, seed=seed, serial=serial, boot_time_us=boot_time_us,
                             **unit_options)
        self.host_offset_us = host_offset_us
        self.drift_ppm = drift_ppm
        # host us per device us; exact rational arithmetic keeps the mapping reproducible
        self._rate = Fraction(1_000_000) / (1_000_000 + Fraction(drift_ppm))
        self._no_drift = self._rate == 1      # asked on every read: a Fraction comparison is not cheap
        self._host_now = host_offset_us
        self.closed = False
        self.closed_error = closed_error
        self.faults = None if spec is None else VirtualFaults(self, spec, seed, serial)
        if spec is None and wire != "bytes":
            self.device.output_frames = []
        self.device.start()

    @property
    def hands_frames(self) -> bool:
        """Whether read_frames and write_message carry frame objects: the unit keeps what it sends as frames
        (made so unless wire=bytes or a faulty line; a unit put in the link's place later may not)."""
        return self.device.output_frames is not None

    @property
    def baud(self) -> int | None:
        """The baud rate of a slow line (faults baud=B), as a serial port tells its own."""
        return None if self.faults is None else self.faults.line.spec.baud

    # ---- time mapping ----
    def _host_at(self, clock_us: int) -> int:
        if self._no_drift:
            return self.host_offset_us + clock_us
        return self.host_offset_us + floor(clock_us * self._rate)

    def _clock_limit(self, host_us: int) -> int:
        """The last clock time whose exact host time is at most host_us."""
        if self._no_drift:
            return host_us - self.host_offset_us
        return floor((host_us - self.host_offset_us) / self._rate)

    def now_us(self) -> int:
        return self._host_now

    def device_time_at(self, host_us: int) -> int | float:
        """Unwrapped device time at host_us (exact; a float only when drift makes it fractional)."""
        clock_us = (host_us - self.host_offset_us) / self._rate
        t = self.device.boot_time_us - self.device.epoch + clock_us
        return int(t) if t.denominator == 1 else float(t)

    def true_offset_us(self, host_us: int | None = None) -> int | float:
        """device time - host time at host_us (default: now): what time sync estimates."""
        h = self._host_now if host_us is None else host_us
        return self.device_time_at(h) - h

    # ---- link interface ----
    def write(self, data: bytes) -> None:
        self._check_open()
        if self.faults is not None:
            data = self.faults.write(data)
        self.clock.run_due(priority=INPUT)      # stimuli accepted earlier go first
        self.device.receive(data if data.__class__ is bytes else bytes(data))
        self.clock.run_due()

    def write_message(self, m, seq: int) -> None:
        """A command as an object, header seq seq: what write() does with its frame, without the bytes."""
        self._check_open()
        self.clock.run_due(priority=INPUT)
        self.device.receive_message(m, seq)
        self.clock.run_due()

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        self._check_open()
        if self.faults is not None:
            return self.faults.read(timeout_us)
        return self._read(timeout_us, self.device.take_output)

    def read_frames(self, timeout_us: int) -> tuple[list, int]:
        """read(), the unit's frames as objects (hands_frames links only)."""
        self._check_open()
        return self._read(timeout_us, self.device.take_frames)

    def _read(self, timeout_us: int, take) -> tuple:
        out = take()
        if out:
            return out, self._host_now
        limit_host = self._host_now + max(0, int(timeout_us))
        limit = max(self.clock.now(), self._clock_limit(limit_host))
        while (due := self.clock.run_next(limit if limit == self.clock.now() else limit - 1)) is not None:
            self._host_now = max(self._host_now, self._host_at(due))
            out = take()
            if out:
                return out, self._host_now
        self.clock.move_to(limit)
        self._host_now = limit_host
        return out, self._host_now

    def close(self) -> None:
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            cut = self.faults is not None and self.faults.line.cut
            raise self.closed_error(f"{self.url}: " + ("the line was cut (fault disconnect_after)" if cut
                                                        else "link is closed"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def start_real(kind: str, seed: int = 1, *, serial: int = 1, boot_time_us: int = 0, pin_due: bool = False,
               faults=None, **unit_options):
    """A real-clock unit served from a thread. Returns (host end socket, stop()).
    stop() ends the thread and closes the emulator's end; the caller closes its own."""
    spec = fault_spec(faults)
    clock = RealClock(pin_due=pin_due)
    device = Device(kind, clock, seed=seed, serial=serial, boot_time_us=boot_time_us, salt=os.urandom(8),
                    **unit_options)
    device.start()
    (host_end,), stop = serve_in_thread(clock, [device], faults=spec)
    stop.device = device  # type: ignore[attr-defined]  # for tests; touch only after stop()
    return host_end, stop


def serve_in_thread(clock, devices: list, faults=None):
    """Devices on one real clock, served from one thread, each on one end of its own socketpair (faults: a
    faulty line in front of each). Returns (the host ends, in the order of devices; stop()). stop() ends the
    thread and closes the emulator's ends; the caller closes its own."""
    from .serve import Server, SocketPort

    server = Server(clock)
    host_ends = []
    for device in devices:
        host_end, unit_end = socket.socketpair()
        server.add(device, SocketPort(unit_end, f"socketpair:{device.kind}"), faults=faults)
        host_ends.append(host_end)
    thread = threading.Thread(target=server.run, name=f"emulator-{devices[0].kind}", daemon=True)
    thread.start()
    stopped = []

    def stop() -> None:
        if stopped:
            return
        stopped.append(True)
        server.stop()
        thread.join(timeout=5)
        server.close()

    return host_ends, stop
