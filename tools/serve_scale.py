"""How the served emulator scales with the number of units it serves from one process.

    python -m tools.serve_scale [--counts 500,1000,2000] [--pty]
    python -m tools.serve_scale --instructions [--units 1,400] [--hellos 500]

scale (the default): for each N, spawn `python -m unohil.emulator showdown --tcp 127.0.0.1:0 --count N`
(--pty: on ptys), and report
  start  from the spawn until the emulator has printed its N paths (every unit listening),
  open   connecting to (opening) all of them,
  hello  one round of HELLO with all of them: every HELLO sent, and every unit's IDENTITY
         read back, each checked to carry the unit's own serial.

instructions: the serving loop's CPU cost per event, independent of what else the machine
does: N idle units on socketpairs served from a thread of this process, and K HELLO round
trips with one of them, under `valgrind --tool=callgrind`, run with K and 2K round trips;
the difference divided by K is the cost of one round trip (a HELLO in, its IDENTITY out)
with N - 1 other units idle. A loop whose work per event grows with the number of units shows
it as a growing figure.
"""
from __future__ import annotations

import argparse
import os
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import time

from unohil.protocol import Frame, StreamDecoder, encode, msg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELLO = b"\0" + encode(msg.HELLO(1, 0), 1, 0)       # the leading delimiter ends any partial frame


def hello_round(fds: list[int], timeout_s: float = 60.0) -> dict[int, object]:
    """Send HELLO on every descriptor, then read until each has answered IDENTITY (or timeout_s
    passes). Returns {fd: IDENTITY message} for those that answered."""
    sel = selectors.DefaultSelector()
    decoders = {}
    try:
        for fd in fds:
            os.write(fd, HELLO)
            sel.register(fd, selectors.EVENT_READ)
            decoders[fd] = StreamDecoder()
        got: dict[int, object] = {}
        deadline = time.monotonic() + timeout_s
        while len(got) < len(fds) and (left := deadline - time.monotonic()) > 0:
            for key, _ in sel.select(left):
                data = os.read(key.fd, 4096)
                if not data:
                    raise ConnectionError(f"descriptor {key.fd}: the emulator closed it")
                for item in decoders[key.fd].feed(data):
                    if item.__class__ is Frame and item.msg.NAME == "IDENTITY":
                        got[key.fd] = item.msg
                        sel.unregister(key.fd)
                        break
        return got
    finally:
        sel.close()


def connect(urls: list[str]) -> list[socket.socket]:
    socks = []
    for url in urls:
        host, _, port = url.removeprefix("socket://").rpartition(":")
        socks.append(socket.create_connection((host.strip("[]"), int(port)), timeout=30))
    return socks


def open_ptys(paths: list[str]) -> list[int]:
    import termios
    import tty
    fds = []
    for path in paths:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(fd, termios.TCSANOW)
        fds.append(fd)
    return fds


def spawn(count: int, pty: bool, serial: int = 1, **popen) -> tuple[subprocess.Popen, list[str]]:
    """An emulator process serving count Showdowns; returns it and the paths it printed."""
    where = ["--pty"] if pty else ["--tcp", "127.0.0.1:0"]
    proc = subprocess.Popen([sys.executable, "-m", "unohil.emulator", "showdown", *where, "--count", str(count),
                             "--serial", str(serial)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)
    paths = []
    for _ in range(count):
        line = proc.stdout.readline().strip()
        if not line:
            proc.kill()
            raise RuntimeError(f"the emulator printed {len(paths)} of {count} paths; stderr: {proc.stderr.read()}")
        paths.append(line)
    return proc, paths


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def scale(count: int, pty: bool) -> tuple[float, float, float]:
    """Seconds to start count units, to open all of them, and for one HELLO round with all of them."""
    from unohil.emulator.serve import ensure_fd_limit
    ensure_fd_limit(count + 64, f"{count} connections to the emulator")
    began = time.perf_counter()
    proc, paths = spawn(count, pty)
    started = time.perf_counter()
    ends = []
    try:
        ends = open_ptys(paths) if pty else connect(paths)
        fds = ends if pty else [s.fileno() for s in ends]
        opened = time.perf_counter()
        got = hello_round(fds)
        hello_took = time.perf_counter() - opened
        wrong = [i for i, fd in enumerate(fds) if fd not in got or got[fd].serial != 1 + i]
        if wrong:
            raise RuntimeError(f"{len(wrong)} of {count} units did not answer with their serial "
                               f"(first: unit {wrong[0]})")
    finally:
        for end in ends:
            os.close(end) if pty else end.close()
        stop(proc)
    return started - began, opened - started, hello_took


def serve_and_hello(units: int, hellos: int) -> None:
    """The measured workload: units idle Showdowns served from a thread, hellos round trips with one."""
    import gc
    import threading

    from unohil.emulator.clock import RealClock
    from unohil.emulator.device import Device
    from unohil.emulator.serve import Server, SocketPort
    clock = RealClock()
    server = Server(clock)
    hosts = []
    for i in range(units):
        host, unit = socket.socketpair()
        device = Device("showdown", clock, seed=1 + i, serial=1 + i)
        server.add(device, SocketPort(unit, f"socketpair:{i}"))
        device.start()
        hosts.append(host)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    host = hosts[0]
    dec = StreamDecoder()
    gc.disable()        # as in a serving process (the loop collects only while idle; see serve.py)
    for _ in range(hellos):
        host.sendall(HELLO)
        while not any(item.__class__ is Frame and item.msg.NAME == "IDENTITY" for item in dec.feed(host.recv(4096))):
            pass
    server.stop()
    thread.join()
    server.close()


def instructions(units: int, hellos: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                        "tools.serve_scale", "--inner", f"{units},{hellos}"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        with open(out) as fh:
            text = fh.read()
    m = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.serve_scale", description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="500,1000,2000", help="numbers of units, comma-separated")
    ap.add_argument("--pty", action="store_true", help="serve on ptys instead of TCP")
    ap.add_argument("--instructions", action="store_true", help="the loop's instructions per HELLO (callgrind)")
    ap.add_argument("--units", default="1,400", help="with --instructions: numbers of units served")
    ap.add_argument("--hellos", type=int, default=500, help="with --instructions: HELLO round trips (K)")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        units, hellos = (int(v) for v in args.inner.split(","))
        serve_and_hello(units, hellos)
        sys.stdout.flush()
        os._exit(0)     # no interpreter shutdown: its cost is not the loop's
    if args.instructions:
        for units in (int(v) for v in args.units.split(",")):
            one, two = instructions(units, args.hellos), instructions(units, 2 * args.hellos)
            print(f"{units} units: {(two - one) / args.hellos:,.0f} instructions per HELLO round trip "
                  f"({args.hellos} vs {2 * args.hellos}: {one:,} and {two:,})", flush=True)
        return 0
    for count in (int(v) for v in args.counts.split(",")):
        started, opened, hello = scale(count, args.pty)
        print(f"{count} {'pty' if args.pty else 'TCP'} units: started in {started:.2f} s, all opened in "
              f"{opened:.2f} s, one HELLO round with all in {hello:.3f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
