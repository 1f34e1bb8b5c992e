"""qemu:IMAGE.elf?machine=mps2-an385: a unit that is firmware running on an emulated microcontroller.

Opening the URL starts qemu-system-arm with the image and connects to the board's UART0 (the protocol
link) through a socket pair this process keeps: QEMU gets one end, the link reads the other, so the link
outlives the QEMU process and a power cycle (kill QEMU, start it again) is, to the session, what it is
on a bench: the unit goes silent, then boots. UART1 (the firmware's debug console) is a second socket
pair, always read by a ConsoleReader (harness/links/console.py): its lines, stamped in host µs, are the
unit's `console`.

Options:
  machine=mps2-an385   the board (the only one with a port so far: clib/firmware/port_mps2_an385.c)
  icount=off|auto|N    off (default): the board's timers run on the host's clock (real time). auto or a
                       shift N: QEMU's instruction-counted time (-icount shift=N,sleep=on): a deterministic
                       instruction rate, time still advancing at the host's pace while the CPU sleeps
  serial=N, seed=N     the unit's serial and rng_seed (default: pid * 4096 + 2048 + n, and 1)
  landing_sensor=0     the Showdown unit without its landing sensor (SD-11)

serial, seed, the variant and a nonce for the boot id reach the firmware as its boot parameters: QEMU's
generic loader writes them at BOOT_PARAMS_ADDR before the reset (the port reads them there).
"""
from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from unohil.harness.errors import DeviceURLError
from unohil.harness.links import query_options, register_scheme
from unohil.harness.links.console import ConsoleReader
from unohil.harness.links.fd import FdLink
from unohil.harness.links.lifecycle import QemuLifecycle

MACHINES = ("mps2-an385",)
BOOT_PARAMS_ADDR = 0x20000000         # clib/firmware/mps2_an385/mps2_an385.ld: the first bytes of RAM
BOOT_PARAMS_MAGIC = 0x55484231        # "UHB1", as port_mps2_an385.c
BOOT_FLAG_NO_LANDING_SENSOR = 1
START_TIMEOUT_S = 10.0
_serials = itertools.count()


@dataclass
class QemuSpec:
    """What to start: the image, the board and the unit's boot parameters."""
    image: Path
    machine: str = "mps2-an385"
    icount: str = "off"
    serial: int = 0
    seed: int = 1
    flags: int = 0

    def command(self, uart_fd: int, console_fd: int, nonce: int) -> list[str]:
        qemu = shutil.which("qemu-system-arm") or "qemu-system-arm"
        args = [qemu, "-machine", self.machine, "-display", "none", "-monitor", "none", "-no-reboot",
                "-kernel", str(self.image),
                "-chardev", f"socket,id=uart0,fd={uart_fd}", "-serial", "chardev:uart0",
                "-chardev", f"socket,id=uart1,fd={console_fd}", "-serial", "chardev:uart1"]
        if self.icount == "auto":
            args += ["-icount", "shift=auto,sleep=on"]
        elif self.icount != "off":
            # align: QEMU sleeps whenever the instruction-counted clock runs ahead of the host's
            args += ["-icount", f"shift={self.icount},sleep=on,align=on"]
        # QEMU's own diagnostics for a firmware that faults (e.g. "-d int,guest_errors -D qemu.log")
        args += os.environ.get("UNOHIL_QEMU_ARGS", "").split()
        params = (BOOT_PARAMS_MAGIC, self.serial, self.seed, nonce, self.flags)
        for i, value in enumerate(params):
            args += ["-device", f"loader,addr={BOOT_PARAMS_ADDR + 4 * i:#x},data={value:#x},data-len=4"]
        return args


def parse(url: str) -> QemuSpec:
    """The spec a qemu: URL names, or DeviceURLError saying what is wrong with it."""
    rest = url.split(":", 1)[1]
    if rest.startswith("//"):
        rest = rest[2:]
    path, _, query = rest.partition("?")
    if not path:
        raise DeviceURLError(f"{url}: give the firmware image, e.g. qemu:build/showdown-mps2_an385.elf")
    opts = query_options(f"qemu://x?{query}", {"machine": str, "icount": str, "serial": int, "seed": int,
                                               "landing_sensor": int})
    spec = QemuSpec(image=Path(path))
    spec.machine = opts.get("machine", spec.machine)
    if spec.machine not in MACHINES:
        raise DeviceURLError(f"{url}: no firmware port for machine {spec.machine!r}; use one of {', '.join(MACHINES)}")
    spec.icount = opts.get("icount", "off")
    if spec.icount not in ("off", "auto") and not (spec.icount.isdigit() and int(spec.icount) <= 10):
        raise DeviceURLError(f"{url}: icount must be off, auto or a shift from 0 to 10, not {spec.icount!r}")
    spec.serial = opts.get("serial", (os.getpid() * 4096 + 2048 + next(_serials)) % 0xFFFFFFFF)
    spec.seed = opts.get("seed", 1)
    for key in ("serial", "seed"):
        if not 0 <= getattr(spec, key) <= 0xFFFFFFFF:
            raise DeviceURLError(f"{url}: {key} must be a u32")
    spec.flags = BOOT_FLAG_NO_LANDING_SENSOR if opts.get("landing_sensor", 1) == 0 else 0
    check_image(url, spec.image)
    return spec


def check_image(url: str, image: Path) -> None:
    if not image.is_file():
        raise DeviceURLError(f"{url}: no firmware image {str(image)!r} (build one with `make -C clib qemu`)")
    with open(image, "rb") as f:
        head = f.read(20)
    # ELF, 32-bit, little-endian, e_machine 40 (Arm)
    if head[:4] != b"\x7fELF" or head[4] != 1 or head[5] != 1 or int.from_bytes(head[18:20], "little") != 40:
        raise DeviceURLError(f"{url}: {str(image)!r} is not a 32-bit Arm ELF image")


@dataclass
class QemuUnit:
    """One board: the QEMU process (started, killed, started again) behind the two socket pairs."""
    spec: QemuSpec
    url: str
    process: subprocess.Popen | None = None
    starts: int = 0
    _pairs: dict = field(default_factory=dict)
    _log: Path | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    console: ConsoleReader | None = None

    def __post_init__(self):
        self._pairs = {"uart": socket.socketpair(), "console": socket.socketpair()}
        for _, unit_end in self._pairs.values():
            # QEMU writes a UART's bytes one write() each, and a byte in a socket costs a buffer of its own:
            # the default send buffer holds only a few hundred of them while the host is busy
            unit_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
        fd, log = tempfile.mkstemp(prefix="unohil-qemu-", suffix=".log")
        os.close(fd)
        self._log = Path(log)
        self.console = ConsoleReader(self.console_end, self.url)

    @property
    def host_end(self) -> socket.socket:
        """The protocol link's end: the same socket through every restart."""
        return self._pairs["uart"][0]

    @property
    def console_end(self) -> socket.socket:
        return self._pairs["console"][0]

    def start(self) -> None:
        """Power on: start QEMU with the image; fails with QEMU's own words when it does not run."""
        with self._lock:
            self._discard_unread()
            uart, console = self._pairs["uart"][1], self._pairs["console"][1]
            args = self.spec.command(uart.fileno(), console.fileno(), int.from_bytes(os.urandom(4), "little"))
            with open(self._log, "wb") as log:
                try:
                    self.process = subprocess.Popen(args, pass_fds=(uart.fileno(), console.fileno()),
                                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log)
                except OSError as exc:
                    raise DeviceURLError(f"{self.url}: cannot start qemu-system-arm: {exc} "
                                         f"(Debian: apt-get install qemu-system-arm)") from None
            self.starts += 1
        self._wait_running()

    def _wait_running(self) -> None:
        """QEMU either fails at once (a bad option, an image it cannot load) or runs; a short look tells."""
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                text = self._log.read_text(errors="replace").strip()
                raise DeviceURLError(f"{self.url}: qemu-system-arm stopped at start (exit {self.process.returncode}): "
                                     f"{text[-500:] or 'no message'}")
            time.sleep(0.02)

    def _discard_unread(self) -> None:
        """Bytes the host wrote to a unit that was off are lost, as on a bench."""
        for pair in self._pairs.values():
            unit_end = pair[1]
            unit_end.setblocking(False)
            try:
                while unit_end.recv(65536):
                    pass
            except (BlockingIOError, OSError):
                pass
            unit_end.setblocking(True)

    def kill(self) -> None:
        """Power off."""
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=START_TIMEOUT_S)

    def power_cycle(self, image: Path | None = None) -> None:
        """Off, then on again, with a new image when one is given."""
        self.kill()
        if image is not None:
            check_image(self.url, image)
            self.spec.image = image
        self.start()

    def close(self) -> None:
        self.kill()
        for pair in self._pairs.values():
            for s in pair:
                s.close()
        if self._log is not None:
            self._log.unlink(missing_ok=True)


def open_qemu(url: str) -> FdLink:
    spec = parse(url)
    unit = QemuUnit(spec, url)
    try:
        unit.start()
    except BaseException:
        unit.close()
        raise
    link = FdLink(url, sock=unit.host_end, on_close=unit.close)
    link.qemu = unit
    link.lifecycle = QemuLifecycle(unit)
    link.console = unit.console
    return link


register_scheme("qemu", open_qemu)
