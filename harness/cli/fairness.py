"""unohil fairness: does the seat matter? Side skew and tie window of a unit, measured through its rig.

A Showdown: its two paddles. A Flash base: every seat against a reference seat (--reference, player 0),
each seat's skew with its interval, flagged when the interval excludes 0."""
from __future__ import annotations

import sys


from unohil.protocol import catalogue as cat

from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, StopRequest, exit_for
from unohil.harness.errors import HarnessError
from unohil.harness.report.console import output_console
from unohil.harness.report.files import check_writable, write_outputs
from unohil.harness.report.results_json import json_text
from unohil.harness.measure.fairness import Stopped, measure, measure_seats
from unohil.harness.rig.links import open_drivers
from unohil.harness.rig.races import FAIR_RACES
from unohil.harness.rig.session import RigSession


def add_parser(sub) -> None:
    p = sub.add_parser("fairness", help="side skew and tie window of a unit from outside, through its rig "
                                        "(SPEC 13.6)")
    p.add_argument("--device", metavar="URL", required=True,
                   help="the unit (a Showdown or a Flash base), e.g. emu://showdown?clock=virtual (or clock=real)")
    p.add_argument("--rig", metavar="URL", required=True,
                   help="its rig; emurig://?OPTIONS wires an emulated rig to an emulated --device "
                        "(options: skew_INPUT, debounce, irq, poll, scan, jitter, delay_OUTPUT; rig.md in the "
                        "uno-hil docs)")
    p.add_argument("--range", dest="range_us", type=int, default=2000, metavar="US",
                   help="offsets from -US to +US between the two presses (default 2000)")
    p.add_argument("--trials", type=int, default=6, metavar="N",
                   help="the fine sweep races in batches of 25 x N (default 6) until its interval is --precision")
    p.add_argument("--precision", type=float, default=5.0, metavar="US",
                   help="race on until the skew's 95%% interval is at most US either side (default 5), "
                        "or --max-races were run")
    p.add_argument("--max-races", type=int, default=4000, metavar="N",
                   help="the most races the fine sweep runs for one skew (default 4000)")
    p.add_argument("--seed", type=int, default=1, help="seed of the presses' phases and of the interval's bootstrap")
    p.add_argument("--reference", default="player_0", metavar="SEAT",
                   help="a Flash base: the seat every other is raced against (default player_0)")
    p.add_argument("--json", metavar="FILE", help="write the sweep, the skew and its interval, the tie window as JSON")
    p.epilog = ("a Flash base: every seat against --reference; exit status 1 when a skew's interval is not within "
                "the SPEC 13.6 bound")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.json:
        check_writable(args.json, "--json")
    if args.range_us < 8 or args.trials < 1 or not args.precision > 0 or args.max_races < 1:
        print("error: --range must be at least 8 us, --trials and --max-races at least 1, --precision more than 0",
              file=sys.stderr)
        return Exit.USAGE
    unit, rig = open_drivers(args.device, args.rig)
    result: dict = {}
    with StopRequest() as stop:
        try:
            if unit.kind not in FAIR_RACES:
                print(f"error: {args.device}: a {unit.kind} unit has no race between two seats "
                      f"(fairness measures {', '.join(FAIR_RACES)})", file=sys.stderr)
                return Exit.USAGE
            s = RigSession(unit, rig)
            s.wire()
            # stderr, as bench's progress: a long sweep says it has begun (and, on a Flash base, each seat done)
            print(f"fairness: sweeping {unit.kind} unit {args.device} through {args.rig}", file=sys.stderr, flush=True)
            kw = dict(range_us=args.range_us, fine_trials=args.trials, seed=args.seed, stop=stop.reason,
                      precision_us=args.precision, max_races=args.max_races)
            if unit.kind == "flash":
                if args.reference not in cat.UNITS["flash"].inputs or not args.reference.startswith("player_"):
                    print(f"error: --reference {args.reference!r} is not a seat (player_0, player_1, ...)",
                          file=sys.stderr)
                    return Exit.USAGE
                measure_seats(s, args.reference, into=result, progress=lambda seat, done, total: print(
                    f"fairness: {seat} measured ({done}/{total} seats)", file=sys.stderr, flush=True), **kw)
            else:
                measure(s, into=result, **kw)
        except Stopped:
            result["interrupted"] = stop.reason()
        except Interrupted:
            result["interrupted"] = f"{stop.reason()} (twice: the race in progress was abandoned)"
        except HarnessError as exc:       # the link or the unit failed: what finished is kept, then the error
            result.update(error=str(exc), device=args.device, rig=args.rig)
            _write(args, result)
            raise
        finally:
            stop.finishing()
            unit.close()
            rig.close()
    result.update(device=args.device, rig=args.rig, bound_us=cat.RIG.timing["fairness_bound_us"])
    if "interrupted" in result:
        return _cut_short(args, result, stop)
    bound = result["bound_us"]
    for r in result["seats"] if unit.kind == "flash" else [result]:
        lo, hi = r["interval_us"]
        r["within_bound"] = -bound <= lo and hi <= bound
    ok = all(r["within_bound"] for r in result["seats"]) if unit.kind == "flash" else result["within_bound"]
    try:
        (print_seats if unit.kind == "flash" else print_report)(result, output_console())
    finally:
        failures = _write(args, result)
    if stop.signum is not None:         # it came after the last race: everything was measured
        return exit_for(stop.signum)
    return Exit.USAGE if failures else Exit.OK if ok else Exit.FAILED


def _write(args, result: dict) -> list[str]:
    """The results file, whatever the console did; one line on stderr per failure."""
    failures = write_outputs([("--json", args.json, lambda: json_text(result))])
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    return failures


def _cut_short(args, result: dict, stop: StopRequest) -> int:
    """A signal stopped the sweeps: what finished is written, the sweep or seat in progress named (cut)."""
    cut = result.get("cut", {})
    races = result.get("races", 0) + cut.get("so_far", {}).get("races", 0)      # a seat's own, so far
    where = (f"seat {cut['seat']}" if "seat" in cut else f"the {cut['sweep']} sweep" if "sweep" in cut else "")
    try:
        print(f"{result['interrupted']}: {where + ' cut short; ' if where else ''}the sweeps finished are kept "
              f"({races} races run)", file=sys.stderr)
    finally:
        _write(args, result)
    return exit_for(stop.signum)


def print_report(r: dict, console) -> None:
    a, b = r["seats"]
    lo, hi = r["interval_us"]
    skew = r["skew_toward_a_us"]
    toward = a if skew > 0 else b
    console.print(f"fairness of {r['device']} ({r['kind']}), {r['races']} races through {r['rig']}")
    console.print(f"  side skew: {abs(skew):.0f} us toward {toward} (skew toward {a}: {skew:+.0f} us, "
                  f"95% interval {lo:+.1f} .. {hi:+.1f} us, from {r['fine']['races']} races at offsets drawn at random "
                  f"from {r['fine']['bracket_us'][0]:+d} .. {r['fine']['bracket_us'][1]:+d} us)")
    console.print(f"  the verdict flips where {b} presses {r['flip_us']:+.0f} us after {a} "
                  f"({'earlier' if r['flip_us'] < 0 else 'later'} by {abs(r['flip_us']):.0f} us)")
    console.print(f"  tie window from outside: {r['tie_window_us']:.0f} us "
                  f"(the unit's {r['tie_param']} is {r['tie_setting_us']} us; sweep step {r['tie_step_us']} us)")
    console.print(f"  SPEC 13.6 bound +-{r['bound_us']} us: {'within' if r['within_bound'] else 'OUTSIDE'}")


def print_seats(r: dict, console) -> None:
    ref = r["reference"]
    console.print(f"fairness of {r['device']} ({r['kind']}), every seat against {ref}, {r['races']} races "
                  f"through {r['rig']}")
    for x in r["seats"]:
        lo, hi = x["interval_us"]
        flag = ("OUTSIDE the bound" if not x["within_bound"] else "differs from the reference" if x["differs"]
                else "level with the reference")
        console.print(f"  {x['seat']}: {x['skew_toward_reference_us']:+.0f} us toward {ref} (95% interval {lo:+.0f} .. "
                      f"{hi:+.0f} us): {flag}")
    console.print(f"  tie window from outside: {r['tie_window_us']:.0f} us "
                  f"(the unit's {r['tie_param']} is {r['tie_setting_us']} us; sweep step {r['tie_step_us']} us)")
    bad = [x["seat"] for x in r["seats"] if not x["within_bound"]]
    console.print(f"  SPEC 13.6 bound +-{r['bound_us']} us, every seat: "
                  + (f"OUTSIDE for {', '.join(bad)}" if bad else "within"))
