#!/usr/bin/env python3
"""A stand-in for a real board on a bench: the POSIX sample firmware (clib/firmware, `make -C clib
firmware`) as the board's CPU, behind a serial adapter that outlives it, with a flash it boots from, a
power switch and a programmer, each driven the way labgrid drives a real one. It lets the real-board path
(`unohil run --firmware IMAGE --lifecycle ENV.yaml#TARGET --device TTY`, docs/firmware.md) run end to end
on a machine without a board.

  standin_board.py serve DIR [--serial N] [-- FIRMWARE-OPTIONS...]
      the board: prints its adapter's tty (stable for the board's whole life, as a USB-serial adapter's
      is) and relays bytes between it and the firmware while the board is powered. Powered on at start;
      boots DIR/flash (nothing runs before an image is flashed: a blank board is silent). Serves until
      SIGINT or SIGTERM.
  standin_board.py power on|off|cycle DIR
      the board's switched outlet (labgrid's ExternalPowerDriver runs these): off kills the firmware
      process, on starts DIR/flash again; bytes the host sends while it is off are lost, as on a bench.
  standin_board.py hang DIR
      wedge the running firmware (SIGSTOP): it stops answering, the adapter stays; only a power cycle
      brings it back.
  standin_board.py status DIR
      "ok on|off PID": whether the board is powered and the firmware process it runs (0: none).
  standin_board.py -w IMAGE -p standin:DIR
      the programmer, called as labgrid's FlashromDriver calls flashrom (`tools: flashrom:` in the
      environment names this script): writes IMAGE into the board's flash and resets the board, as a
      debug probe's program-and-reset does (it boots the new image if powered).

Standard library only (labgrid runs the power and flash commands with whatever Python is on PATH). The
board's control channel is a Unix socket DIR/control, reached by a relative name from DIR (a test's
directory may be longer than a socket's path may be).
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tty
from pathlib import Path

CONTROL = "control"
FLASH = "flash"
PENDING_LIMIT = 65536       # bytes the adapter holds for a side that is not reading; beyond it they are lost


class Board:
    """The firmware process (while powered) behind the adapter's pty, and the bytes between them."""

    def __init__(self, where: Path, serial: int, options: list[str]):
        self.where, self.serial, self.options = where, serial, options
        self.firmware: subprocess.Popen | None = None
        self.uart = -1                          # the firmware's pty (its slave side), -1 while off
        self.powered = False
        self.adapter, self.adapter_slave = os.openpty()
        for fd in (self.adapter, self.adapter_slave):
            tty.setraw(fd)
        os.set_blocking(self.adapter, False)
        self.to_host = bytearray()
        self.to_unit = bytearray()

    @property
    def tty(self) -> str:
        return os.ttyname(self.adapter_slave)

    def power_on(self) -> None:
        self.powered = True
        image = self.where / FLASH
        if not image.exists():
            return                              # a blank board: powered, silent
        log = open(self.where / "board.log", "a")
        try:
            self.firmware = subprocess.Popen([str(image), "--serial", str(self.serial), *self.options],
                                             stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        except OSError as exc:                  # not an image this CPU runs: the board stays silent
            log.write(f"cannot boot {image}: {exc}\n")
            return
        finally:
            log.close()
        path = self.firmware.stdout.readline().decode().strip()
        self.firmware.stdout.close()
        if not path.startswith("/dev/"):
            return                              # the image did not come up; board.log says why
        self.uart = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.uart)

    def power_off(self) -> None:
        self.powered = False
        if self.firmware is not None:
            self.firmware.kill()                # also a stopped (hung) process
            self.firmware.wait()
            self.firmware = None
        if self.uart >= 0:
            os.close(self.uart)
            self.uart = -1
        self.to_unit.clear()

    def hang(self) -> str:
        if self.firmware is None:
            return "error: nothing runs"
        self.firmware.send_signal(signal.SIGSTOP)
        return "ok"

    def command(self, word: str) -> str:
        if word == "on":
            if not self.powered:
                self.power_on()
        elif word == "off":
            self.power_off()
        elif word in ("cycle", "reset"):
            was_on = self.powered or word == "cycle"
            self.power_off()
            if was_on:
                self.power_on()
        elif word == "hang":
            return self.hang()
        elif word == "status":
            return f"ok {'on' if self.powered else 'off'} {self.firmware.pid if self.firmware else 0}"
        else:
            return f"error: no command {word!r}"
        return "ok"

    def relay(self, readable: list[int], writable: list[int]) -> None:
        if self.adapter in readable:
            data = _read(self.adapter)
            if self.uart >= 0 and len(self.to_unit) + len(data) <= PENDING_LIMIT:
                self.to_unit += data
        if self.uart >= 0 and self.uart in readable:
            data = _read(self.uart)
            if len(self.to_host) + len(data) <= PENDING_LIMIT:
                self.to_host += data
        if self.adapter in writable and self.to_host:
            del self.to_host[:_write(self.adapter, self.to_host)]
        if self.uart >= 0 and self.uart in writable and self.to_unit:
            del self.to_unit[:_write(self.uart, self.to_unit)]


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except (BlockingIOError, OSError):
        return b""


def _write(fd: int, data: bytearray) -> int:
    try:
        return os.write(fd, data)
    except (BlockingIOError, OSError):
        return 0


def serve(where: Path, serial: int, options: list[str]) -> int:
    where.mkdir(parents=True, exist_ok=True)
    os.chdir(where)
    try:
        os.unlink(CONTROL)
    except FileNotFoundError:
        pass
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.bind(CONTROL)
    control.listen(4)
    board = Board(where.resolve(), serial, options)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    try:
        board.power_on()
        print(board.tty, flush=True)
        while not stopping:
            reads = [board.adapter, control.fileno()] + ([board.uart] if board.uart >= 0 else [])
            writes = ([board.adapter] if board.to_host else []) + ([board.uart] if board.to_unit else [])
            try:
                readable, writable, _ = select.select(reads, writes, [], 0.5)
            except InterruptedError:
                continue
            if control.fileno() in readable:
                _answer(control, board)
            board.relay(readable, writable)
    finally:
        board.power_off()
        control.close()
        os.unlink(CONTROL)
    return 0


def _answer(control: socket.socket, board: Board) -> None:
    conn, _ = control.accept()
    with conn:
        conn.settimeout(5)
        try:
            word = conn.recv(64).decode().strip()
            conn.sendall((board.command(word) + "\n").encode())
        except OSError:
            pass                                # the asker went away: nothing to tell


def ask(where: Path, word: str) -> int:
    """Send one command to the board serving in `where`; its answer on stdout, 1 when it is an error."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cwd = os.getcwd()
    try:
        os.chdir(where)
        sock.settimeout(30)
        sock.connect(CONTROL)
        sock.sendall(f"{word}\n".encode())
        answer = sock.recv(256).decode().strip()
    except OSError as exc:
        print(f"standin_board: no board serving in {where}: {exc}", file=sys.stderr)
        return 1
    finally:
        os.chdir(cwd)
        sock.close()
    print(answer)
    return 0 if answer.startswith("ok") else 1


def program(argv: list[str]) -> int:
    """flashrom's way: -w IMAGE -p standin:DIR (labgrid's FlashromDriver appends -p PROGRAMMER)."""
    image = programmer = None
    for flag, value in zip(argv, argv[1:]):
        if flag in ("-w", "--write"):
            image = value
        elif flag in ("-p", "--programmer"):
            programmer = value
    if image is None or programmer is None or not programmer.startswith("standin:"):
        print("usage: standin_board.py -w IMAGE -p standin:DIR", file=sys.stderr)
        return 2
    where = Path(programmer.partition(":")[2])
    if not where.is_dir():
        print(f"standin_board: no board at {where} (the programmer's standin:DIR)", file=sys.stderr)
        return 1
    if not Path(image).is_file():
        print(f"standin_board: no image {image}", file=sys.stderr)
        return 1
    # written whole (a new file renamed over the old), then the board reset: it boots the new image if powered
    shutil.copyfile(image, where / f"{FLASH}.new")
    os.chmod(where / f"{FLASH}.new", 0o755)
    os.replace(where / f"{FLASH}.new", where / FLASH)
    return ask(where, "reset") if (where / CONTROL).exists() else 0


def main(argv: list[str]) -> int:
    if argv[:1] and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        return program(argv)
    if len(argv) >= 2 and argv[0] == "serve":
        rest = argv[2:]
        options = rest[rest.index("--") + 1:] if "--" in rest else []
        head = rest[:rest.index("--")] if "--" in rest else rest
        serial = int(head[head.index("--serial") + 1]) if "--serial" in head else 4242
        return serve(Path(argv[1]), serial, options)
    if len(argv) == 3 and argv[0] == "power" and argv[1] in ("on", "off", "cycle"):
        return ask(Path(argv[2]), argv[1])
    if len(argv) == 2 and argv[0] in ("hang", "status"):
        return ask(Path(argv[1]), argv[0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
