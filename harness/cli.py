"""unohil: the command line.

  unohil run [PATHS...]       scripted scenarios against devices (default: the built-in emulator)
  unohil validate PATHS...    check scenario files only
  unohil emulate KIND ...     serve emulated units on a pty or TCP
  unohil hello --device URL   connect and show what answers
  unohil ports                list serial ports and USB units, and what answers on them
  unohil conform --device URL firmware acceptance: protocol conformance, then the scenario library
"""
from __future__ import annotations

import argparse
import queue
import sys
import threading
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import emu as _emu  # noqa: F401  (registers emu://)
from .driver import Driver
from .errors import HarnessError
from .health import LinkHealth
from .outputs import check_writable
from .scenario import ScenarioError, load_paths
from .selection import matcher

DEFAULT_PATHS = ["fixtures/scenarios"]


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def cmd_validate(args) -> int:
    try:
        scenarios = load_paths(args.paths)
    except ScenarioError as exc:
        exc.print()
        return 2
    races = sum(len(s.races) for s in scenarios)
    print(f"{len(scenarios)} scenario(s), {races} race(s): valid")
    return 0


def _open_devices(urls: list[str], kinds: set[str], trace_dir) -> dict[str, list[Driver]]:
    by_kind: dict[str, list[Driver]] = {}
    opened: list[Driver] = []
    try:
        if urls:
            for url in urls:
                d = Driver.open(url, trace_dir=trace_dir)
                opened.append(d)
                by_kind.setdefault(d.kind, []).append(d)
        else:
            for kind in sorted(kinds):
                d = Driver.open(f"emu://{kind}?clock=virtual", trace_dir=trace_dir)
                opened.append(d)
                by_kind.setdefault(kind, []).append(d)
    except BaseException:
        for d in opened:
            d.close()
        raise
    return by_kind


def cmd_run(args) -> int:
    from .report import health_line, print_failures, results_json, scenario_table, write_json, write_junit
    from .runner import Runner, ScenarioResult

    console = Console(highlight=False)
    err = _stderr()
    started = time.time()
    try:
        if args.json:
            check_writable(args.json, "--json")
        if args.junit:
            check_writable(args.junit, "--junit")
        if args.trace:
            check_writable(args.trace, "--trace", directory=True)
        scenarios = load_paths(args.paths or DEFAULT_PATHS)
        if args.k:
            pick = matcher(args.k)
            scenarios = [s for s in scenarios if pick(s)]
        if not scenarios:
            err.print("no scenarios selected")
            return 2
        devices = _open_devices(args.device or [], {s.unit for s in scenarios}, args.trace)
    except ScenarioError as exc:
        exc.print("; nothing was run")
        return 2
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.device and not any(sc.unit in devices for sc in scenarios):
        have = "; ".join(f"{d.url} is a {kind} unit" for kind, ds in devices.items() for d in ds)
        for ds in devices.values():
            for d in ds:
                d.close()
        print(f"error: {have}: none of the selected scenarios runs on it (they need "
              f"{' or '.join(sorted({s.unit for s in scenarios}))})", file=sys.stderr)
        return 2
    total_races = sum(len(s.races) for s in scenarios)
    results: list[ScenarioResult | None] = [None] * len(scenarios)
    queues: dict[str, queue.SimpleQueue] = {}
    for i, sc in enumerate(scenarios):
        if sc.unit not in devices:
            results[i] = ScenarioResult(sc, "-", status="skipped", error=f"no {sc.unit} device given")
        else:
            queues.setdefault(sc.unit, queue.SimpleQueue()).put(i)
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True, disable=args.quiet or not console.is_terminal) as progress:
            task = progress.add_task("races", total=total_races)

            def work(runner: Runner, q: queue.SimpleQueue) -> None:
                # One thread per device: a rack of units runs its scenarios side by side.
                runner.progress = lambda _sc, _i: progress.advance(task)
                while True:
                    try:
                        i = q.get_nowait()
                    except queue.Empty:
                        return
                    progress.update(task, description=scenarios[i].name[:40])
                    results[i] = runner.run(scenarios[i])

            threads = [threading.Thread(target=work, args=(Runner(d, host_timed=args.host_timed), queues[kind]),
                                        name=d.url, daemon=True)
                       for kind, ds in devices.items() if kind in queues for d in ds]
            if len(threads) == 1:
                threads[0].run()
            else:
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        results = [r for r in results if r is not None]
    finally:
        health = LinkHealth()
        dev_info = []
        for ds in devices.values():
            for d in ds:
                health.add(d.health)
                ident = d.identity
                dev_info.append({"url": d.url, "kind": d.kind, "serial": ident.serial if ident else None,
                                 "firmware": f"{ident.fw_major}.{ident.fw_minor}.{ident.fw_patch}" if ident else None,
                                 "health": d.health.as_dict(),
                                 "clock": d.clock.estimate.as_dict() if d.clock.estimate else None})
                d.close()
    if not args.quiet:
        console.print(scenario_table(results))
    console.print(health_line(health))          # every run says what the link did, -q or not
    print_failures(console, results)
    passed = sum(1 for r in results if r.status == "pass")
    skipped = sum(1 for r in results if r.status == "skipped")
    bad = len(results) - passed - skipped
    console.print(f"{passed} passed, {bad} failed, {skipped} skipped; "
                  f"{sum(len(r.races) for r in results)} races in {time.time() - started:.2f} s")
    if args.json:
        write_json(args.json, results_json(results, health, dev_info, started))
    if args.junit:
        write_junit(args.junit, results)
    if any(r.status == "error" for r in results):
        return 2                # a scenario that cannot run as written: the user's to fix, like a bad file
    return 1 if bad else 0


def cmd_hello(args) -> int:
    try:
        with Driver.open(args.device) as d:
            ident = d.identity
            est = d.clock.estimate
            print(f"{args.device}: {d.kind} unit, serial {ident.serial}, firmware "
                  f"{ident.fw_major}.{ident.fw_minor}.{ident.fw_patch}, protocol {ident.proto_major}."
                  f"{ident.proto_minor}, boot id {ident.boot_id:#010x}, seed {ident.seed}")
            caps = [n for n in ("test_mode", "host_input", "time_sync", "event_resend", "config_set",
                                "landing_sensor") if d.has_cap(n)]
            print(f"  capabilities: {', '.join(caps)}; card capacity {ident.card_capacity}, players {ident.players}")
            if est is not None:
                print(f"  clock: offset {est.offset_us:.0f} us, best round trip {est.best_rtt_us} us, "
                      f"uncertainty {est.uncertainty_us:.0f} us")
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_bench(args) -> int:
    from .bench import print_report, run_bench
    from .report import write_json
    console = Console(highlight=False)
    try:
        if args.json:
            check_writable(args.json, "--json")
        result = run_bench(args.device, args.races)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_report(result, console)
    if args.json:
        write_json(args.json, result)
    return 0


def cmd_emulate(args) -> int:
    from emulator.cli import run as emulate_run
    return emulate_run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unohil", description="HIL harness for reaction-race game units")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run scenarios")
    p.add_argument("paths", nargs="*", help=f"scenario files or directories (default: {DEFAULT_PATHS[0]})")
    p.add_argument("--device", action="append", metavar="URL",
                   help="device URL (repeatable); default: the built-in emulator on the virtual clock")
    p.add_argument("--json", metavar="FILE", help="write machine-readable results")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("--trace", metavar="DIR", help="write a JSON Lines trace per device")
    p.add_argument("-k", metavar="EXPR", help="only scenarios whose name/file/tags match (and, or, not)")
    p.add_argument("--host-timed", action="store_true",
                   help="press with host timing (INPUT) even if the device has test mode")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("validate", help="check scenario files without running them")
    p.add_argument("paths", nargs="+")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("bench", help="adjudication latency against the raw floor of the link, in one run")
    p.add_argument("--device", metavar="URL", default=None,
                   help="a Showdown unit (default: an emulator in another process on a pty, real clock)")
    p.add_argument("--races", type=int, default=300, metavar="N")
    p.add_argument("--json", metavar="FILE")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("hello", help="connect to a device and show what it is")
    p.add_argument("--device", required=True, metavar="URL")
    p.set_defaults(func=cmd_hello)

    try:
        from emulator.cli import add_arguments
    except ImportError:  # pragma: no cover - the emulator package is part of the distribution
        add_arguments = None
    if add_arguments is not None:
        p = sub.add_parser("emulate", help="serve emulated units on a pty or TCP")
        add_arguments(p)
        p.set_defaults(func=cmd_emulate)

    from . import conform, ports
    ports.add_parser(sub)
    conform.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        _stderr().print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
