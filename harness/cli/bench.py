"""unohil bench: adjudication latency against the raw floor of the link, measured in one run."""
from __future__ import annotations

import sys


from unohil.protocol import catalogue as cat

from unohil.harness.measure.latency import cut_short, print_report, run_bench
from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, StopRequest, exit_for
from unohil.harness.report.console import output_console
from unohil.harness.report.files import check_writable, write_outputs
from unohil.harness.report.results_json import json_text, plain
from unohil.harness.store.config import add_store_argument, configured, record_into

KINDS = tuple(cat.UNITS)


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="adjudication latency against the raw floor of the link, in one run")
    p.add_argument("--device", metavar="URL", default=None,
                   help="a unit of any kind (default: an emulator of each kind in another process on a pty, "
                        "real clock)")
    p.add_argument("--kind", choices=KINDS, action="append",
                   help="with no --device: the emulated kinds to measure (default: all three)")
    p.add_argument("--rig", metavar="URL", default=None,
                   help="measure from the physical press through this rig wired to --device (SPEC 13.5): "
                        "press-to-light, -launch, -flag, -first-card against the unit's own figures, beside the "
                        "rig's own floor (its loopback, SPEC 13.7) measured between the races; emurig://?OPTIONS "
                        "wires an emulated rig to an emulated unit, clock=virtual or real (rig.md in the uno-hil docs)")
    p.add_argument("--races", type=int, default=300, metavar="N",
                   help="races per unit (default 300); a percentile is shown only when enough of them back it "
                        "(p99.9 from 1000 samples, p99 from 100, p90 from 10)")
    p.add_argument("--json", metavar="FILE", help="write every distribution (and its sample count) as JSON")
    add_store_argument(p, "record the samples in")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.json:
        check_writable(args.json, "--json")
    if args.rig is not None:
        return _through_rig(args)
    result: dict = {}
    with StopRequest() as stop:
        try:
            run_bench(args.device, args.races, tuple(args.kind or KINDS), stop=stop.reason, result=result)
            if stop.signum is not None:
                cut_short(result, stop.reason())
        except Interrupted:
            cut_short(result, f"{stop.reason()} (twice: the race in progress was abandoned)")
        finally:
            stop.finishing()
    def cut() -> str:
        return ((f"; not run: {', '.join(result['not_run'])}" if result.get("not_run") else "") +
                (f"; {result['floors']}" if "floors" in result else ""))
    return _finish(args, stop, result, lambda: print_report(result, output_console()), cut)


def _through_rig(args) -> int:
    from unohil.harness.measure.latency_races import unit_identity
    from unohil.harness.measure.rig_latency import print_report as print_rig_report, rig_latencies, summarise
    from unohil.harness.rig.links import open_drivers
    from unohil.harness.rig.session import RigSession
    if args.device is None:
        print("error: --rig needs --device: the unit the rig is wired to", file=sys.stderr)
        return Exit.USAGE
    if args.races < 1:
        print("error: --races must be at least 1", file=sys.stderr)
        return Exit.USAGE
    unit, rig = open_drivers(args.device, args.rig)
    result: dict = {"device": args.device, "rig": args.rig, "identity": unit_identity(unit)}
    with StopRequest() as stop:
        try:
            s = RigSession(unit, rig)
            s.wire()
            rig_latencies(s, args.races, stop=stop.reason, into=result, progress=lambda done, total: print(
                f"bench: {done}/{total} races through the rig", file=sys.stderr, flush=True))
            if stop.signum is not None:
                result["interrupted"] = stop.reason()
        except Interrupted:
            summarise(result)
            result["interrupted"] = f"{stop.reason()} (twice: the race in progress was abandoned)"
        finally:
            stop.finishing()
            unit.close()
            rig.close()
    return _finish(args, stop, result, lambda: print_rig_report(result, output_console()),
                   lambda: f" ({result['races_done']} of {result['races']})")


def _finish(args, stop: StopRequest, result: dict, report, cut) -> int:
    """The console's report, then (whatever the console did) the file holding every race that finished and
    the store's record; the exit status. cut(): what an interrupted run adds to its one line."""
    try:
        report()
        if "interrupted" in result:
            print(f"{result['interrupted']}: the races finished are kept{cut()}", file=sys.stderr)
    finally:
        failures = write_outputs([("--json", args.json, lambda: json_text(result))])
        for line in failures:
            print(f"error: {line}", file=sys.stderr)
    record_into(configured(args.store), lambda: plain(result), "bench", args.json)
    if stop.signum is not None:
        return exit_for(stop.signum)
    return Exit.USAGE if failures else Exit.OK
