"""python -m unohil.emulator KIND [--pty | --tcp HOST:PORT] [--count N] [--clock real|virtual] ...

Serves N independent units until SIGINT or SIGTERM. stdout gets one line per unit:
the path or URL a host opens (a pty's /dev/pts/N, or socket://HOST:PORT), so a
script can read the lines and connect; everything else goes to stderr.

Unit i (from 0) gets serial SERIAL+i (without --serial: PID*4096+i, this process's id and the
unit's index, so units served by two processes are never taken for one) and seed SEED+i. With --tcp HOST:PORT, unit i
listens on PORT+i; PORT 0 gives every unit a free port. One process serves thousands: each
unit takes two file descriptors, and when the soft RLIMIT_NOFILE is too low for N units it is
raised to the hard limit; when even that is too low, one message says how many are needed and
the emulator exits 2 before serving any (python -m tools.serve_scale measures the scaling).

--faults SPEC puts every unit behind a faulty line, in real time (emulator/faults.py has
the vocabulary: corrupt=1e-3,dropframe=1e-3,delay=50us..2ms,...); with seed=S in it,
unit i's faults are seeded S+i. What the faults did is printed to stderr at the end.

--interactive serves one unit on a pty and plays it in the terminal (emulator/terminal.py): its
path goes in the screen's header, on stderr and in --path-file, not on stdout, which is the screen.

Clocks: a served unit cannot be on the in-process virtual clock (nobody drives it),
so both run at real speed.
  real     device time is the real monotonic clock; header times show when things
           really happened, processing lateness included (a verdict typically a
           few microseconds after knowable_us).
  virtual  paced by the real clock, but each timer runs with device time pinned to
           its due time, as on the in-process virtual clock: timer-driven header
           times are exact (verdict time == knowable_us), command times are real.
"""
from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from dataclasses import replace

from unohil.protocol.catalogue import ENUM_VALUES

from .clock import RealClock
from .build import model_class, own_serial
from .device import Device
from .faults import parse as parse_faults
from .serve import FDS_PER_UNIT, PtyPort, Server, TcpPort, ensure_fd_limit, fds_needed

KINDS = tuple(ENUM_VALUES["unit_kind"])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS, help="unit to emulate")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--pty", action="store_true", help="serve on a new pty per unit (the default)")
    where.add_argument("--tcp", metavar="HOST:PORT", help="serve on TCP (PORT 0: any free port)")
    parser.add_argument("--count", type=int, default=1, metavar="N",
                        help="number of independent units (thousands are fine: two file descriptors each)")
    parser.add_argument("--clock", choices=("real", "virtual"), default="real",
                        help="real: true device time; virtual: timers at exact device times (default real)")
    parser.add_argument("--seed", type=int, default=1, help="rng_seed of unit 0 (unit i: SEED+i)")
    parser.add_argument("--serial", type=int, default=None,
                        help="serial number of unit 0 (unit i: SERIAL+i); default PID*4096+i, of this "
                             "process's own, so that no other served unit on this host reports it")
    parser.add_argument("--boot-time-us", type=int, default=0, metavar="US",
                        help="device counter at boot (e.g. 4294000000 to cross the u32 wrap soon)")
    parser.add_argument("--card-capacity", type=int, default=None, metavar="N", help="unit option card_capacity")
    parser.add_argument("--players", type=int, default=None, metavar="N", help="unit option players")
    parser.add_argument("--form", action="append", default=[], metavar="CAP",
                        choices=("speed_at_power_on", "slowest_light_only", "reset_light_show"),
                        help="flash: build the base that reads document 003 this way (SPEC FL-20..FL-22), its "
                             "capability bit set; repeatable")
    parser.add_argument("--rng", choices=("reference", "python"), default="reference",
                        help="the unit's generator: SPEC 6's reference PCG32 (capability reference_rng), or "
                             "python: another allowed one, as firmware with its own generator has")
    parser.add_argument("--timer-lag-us", type=int, default=0, metavar="US",
                        help="stamp every timer event this late (0..2000), as firmware whose timer handler "
                             "stamps when it ran (SPEC PR-1 allows it)")
    parser.add_argument("--without", metavar="CAP,...", default="",
                        help="optional capabilities the unit lacks (their commands get NAK unsupported), "
                             "e.g. time_sync,config_set")
    parser.add_argument("--faults", metavar="SPEC", default=None,
                        help="a faulty line, e.g. corrupt=1e-3,dropframe=1e-3,delay=50us..2ms,seed=7 "
                             "(every fault and what the harness guarantees under it: faults.md in the uno-hil docs)")
    parser.add_argument("--baud", type=int, default=None, metavar="B",
                        help="hold the line to B baud, 8N1, both ways (115200: 86.8 us a byte), as SPEC 10.2's serial "
                             "line; a faults item (baud=B)")
    parser.add_argument("--split-burst", metavar="A..B", default=None,
                        help="deliver the second frame of each burst A..B later (e.g. 20ms..40ms), as a TCP bridge "
                             "without TCP_NODELAY; a faults item (split_burst=A..B)")
    parser.add_argument("--realtime", action="store_true",
                        help="run the serving loop at real-time priority (SCHED_FIFO) when permitted, as a "
                             "microcontroller's timer interrupt would; falls back with a warning")
    parser.add_argument("--no-rehearsal", action="store_true",
                        help="spin idle before a due time instead of replaying the game on a throwaway copy to "
                             "keep its code in the CPU's caches (unohil.emulator.rehearsal)")
    parser.add_argument("--labgrid-exporter", metavar="FILE",
                        help="with --tcp: write a labgrid exporter configuration publishing each unit as a "
                             "NetworkSerialPort (group KIND-SERIAL), for labgrid-exporter (labgrid.md in the uno-hil "
                             "docs)")
    parser.add_argument("--connection-log", metavar="FILE",
                        help="with --tcp: append a line per client connecting or leaving (and whether it "
                             "replaced a connected one)")
    parser.add_argument("--interactive", action="store_true",
                        help="one unit on a pty, played in this terminal: its lights and state drawn live, keys "
                             "pressing its buttons as a person would (source physical); q or Ctrl-C quits "
                             "(record-replay.md in the uno-hil docs)")
    parser.add_argument("--path-file", metavar="FILE",
                        help="also write the units' paths or URLs to FILE, one a line, once they are served")
    parser.add_argument("--print-origin", action="store_true",
                        help="after the paths, print 'origin PATH US' per unit: the host monotonic time in us "
                             "at which its device time was 0 (clock real only; for latency measurements)")


def _line_spec(args) -> str | None:
    """--faults with --baud and --split-burst added as its items."""
    items = [getattr(args, "faults", None)]
    if getattr(args, "baud", None) is not None:
        items.append(f"baud={args.baud}")
    if getattr(args, "split_burst", None):
        items.append(f"split_burst={args.split_burst}")
    return ",".join(filter(None, items)) or None


def _parse_tcp(text: str, count: int = 1) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--tcp wants HOST:PORT, e.g. 127.0.0.1:7000, not {text!r}")
    if int(port) and int(port) + count - 1 > 65535:
        raise ValueError(f"--tcp {text}: ports go up to 65535" + (f" (unit i listens on PORT+i, {count} units)"
                                                                   if count > 1 else ""))
    return host.strip("[]") or "127.0.0.1", int(port)


def _check_interactive(args) -> None:
    if not os.isatty(sys.stdin.fileno()):
        raise ValueError("--interactive needs a terminal on standard input: its keys are the unit's buttons "
                         "(serve without --interactive to drive the unit from a host)")
    if args.tcp or args.count != 1:
        raise ValueError("--interactive serves one unit on a pty: leave out --tcp and --count")


def _tell_paths(args, server, interactive: bool) -> None:
    """Say where the units are served: on stdout (one line each), or for the interactive unit, whose
    stdout is its screen, on stderr; in --path-file too (written whole, then renamed into place)."""
    names = "".join(f"{port.name}\n" for _device, port in server.units)
    if args.path_file:
        tmp = f"{args.path_file}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(names)
        os.replace(tmp, args.path_file)
    out = sys.stderr if interactive else sys.stdout
    out.write(names)
    out.flush()


def _realtime() -> None:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (AttributeError, PermissionError, OSError) as exc:
        print(f"emulator: --realtime not available ({exc}); running at normal priority", file=sys.stderr)


def exporter_config(units) -> str:
    """labgrid-exporter's YAML for (device, TcpPort) pairs: one group per unit, named KIND-SERIAL."""
    import socket
    lines = []      # no comment: labgrid reads the file as a Jinja2 template, where a line starting with # is a statement
    for device, port in units:
        host, tcp_port = port.address
        if host in ("0.0.0.0", "::"):
            host = socket.gethostname()         # clients connect to this host by its name, not the wildcard
        lines += [f"{device.kind}-{device.serial}:",
                  f"  NetworkSerialPort: {{host: '{host}', port: {tcp_port}, protocol: raw, speed: 115200}}"]
    return "\n".join(lines) + "\n"


def _tcp_extras(args, server) -> None:
    exporter, log = getattr(args, "labgrid_exporter", None), getattr(args, "connection_log", None)
    if (exporter or log) and not args.tcp:
        raise ValueError("--labgrid-exporter and --connection-log need --tcp HOST:PORT")
    if log:
        fh = open(log, "a", encoding="utf-8")
        for _device, port in server.units:
            port.log = fh
    if exporter:
        tmp = f"{exporter}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(exporter_config(server.units))
        os.replace(tmp, exporter)


def run(args: argparse.Namespace) -> int:
    try:
        model_class(args.kind)
        if args.count < 1:
            raise ValueError("--count must be at least 1")
        tcp = _parse_tcp(args.tcp, args.count) if args.tcp else None
        if getattr(args, "interactive", False):
            _check_interactive(args)
        faults = parse_faults(_line_spec(args))
        # Before any port is made: a process short of descriptors fails now, saying so, and not
        # at unit 1021 with whatever the system call that ran out reports.
        ensure_fd_limit(fds_needed(args.count), f"{args.count} unit(s) ({FDS_PER_UNIT} each, and the process's own)")
    except ValueError as exc:
        print(f"emulator: {exc}", file=sys.stderr)
        return 2
    options = {k: v for k, v in (("card_capacity", args.card_capacity), ("players", args.players))
               if v is not None}
    options.update({form: 1 for form in getattr(args, "form", [])})
    interactive = getattr(args, "interactive", False)
    clock = RealClock(pin_due=args.clock == "virtual")
    # a person's key presses come milliseconds apart: the caches need no warming for them
    server = Server(clock, rehearse=not (getattr(args, "no_rehearsal", False) or interactive))
    try:
        devices = _add_units(args, clock, server, tcp, faults, options)
    except (TypeError, ValueError, OSError) as exc:
        server.close()
        print(f"emulator: {exc}", file=sys.stderr)
        return 2
    try:
        _tcp_extras(args, server)
    except (ValueError, OSError) as exc:
        server.close()
        print(f"emulator: {exc}", file=sys.stderr)
        return 2
    # the stopping signals are ours before the paths are told: whoever reads them may stop us at once
    previous = {sig: signal.signal(sig, lambda *_: server.stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            _tell_paths(args, server, interactive)
        except OSError as exc:
            print(f"emulator: --path-file {args.path_file}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"emulator: {args.count} {args.kind} unit(s), clock {args.clock}; SIGINT or SIGTERM stops",
              file=sys.stderr)
        if args.realtime:
            _realtime()
        for device in devices:
            device.start()
        if args.print_origin:
            # Same machine, same CLOCK_MONOTONIC: a host can turn device times into its own exactly.
            for device, port in server.units:
                print(f"origin {port.name} {clock.origin_us + device.epoch - device.boot_time_us}")
            sys.stdout.flush()
        gc.freeze()     # what start-up made lives while we serve: collections need not walk it
        try:
            if interactive:
                from .terminal import Screen
                with Screen(server, devices[0], server.units[0][1].name, sys.stdin.fileno(), sys.stdout.fileno()):
                    server.run()
            else:
                server.run()
        finally:
            gc.unfreeze()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.close()
    _say_faults(server)
    print("emulator: stopped", file=sys.stderr)
    return 0


def _add_units(args: argparse.Namespace, clock, server, tcp, faults, options: dict) -> list:
    """args.count units of args.kind, each on its port (a pty, or TCP at consecutive ports) behind its
    faulty line if any (the faults' seed counted on per unit), added to the server."""
    devices = []
    for i in range(args.count):
        serial = own_serial(i) if args.serial is None else args.serial + i
        device = Device(args.kind, clock, seed=args.seed + i, serial=serial,
                        boot_time_us=args.boot_time_us, salt=os.urandom(8), rng=args.rng,
                        without=args.without, timer_lag_us=args.timer_lag_us, **options)
        try:
            port = TcpPort(tcp[0], tcp[1] + i if tcp[1] else 0) if tcp else PtyPort()
        except OSError as exc:
            where = f"TCP {tcp[0]}:{tcp[1] + i if tcp[1] else 0}" if tcp else "pty"
            raise OSError(f"unit {i} of {args.count} ({where}): {exc.strerror or exc}") from None
        unit_faults = faults if faults is None or faults.seed is None else replace(faults, seed=faults.seed + i)
        server.add(device, port, faults=unit_faults)
        devices.append(device)
    return devices


def _say_faults(server) -> None:
    """What the faulty lines did, per unit behind one."""
    for (_device, port) in server.units:
        if port in server.lines:
            done = server.lines[port].stats
            print(f"emulator: faults on {port.name}: "
                  + (", ".join(f"{k} {v}" for k, v in sorted(done.items())) or "none happened"), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unohil.emulator", description="Serve emulated uno-hil units.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
