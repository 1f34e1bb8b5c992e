"""unohil record: a session on a unit, or a trace, as a scenario file that replays it."""
from __future__ import annotations

import json
import sys

from rich.console import Console

from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, signal_name
from unohil.harness.errors import HarnessError, ScenarioError
from unohil.harness.record.live import LiveRecording
from unohil.harness.record.scenario import dump, events_of, scenario_of
from unohil.harness.record.segments import segments_of
from unohil.harness.record.view import RecordingView
from unohil.harness.report.console import FORMATS
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.scenarios.load import loads
from unohil.harness.scenarios.units import UNITS
from unohil.harness.session.driver import Driver


def add_parser(sub) -> None:
    p = sub.add_parser("record", help="turn a session on a unit, or a trace, into a scenario file that replays it",
                       description="Record what happens on a unit (people pressing its buttons) with device-us "
                                   "timestamps until --duration or Ctrl-C, or read a trace written by "
                                   "`unohil run --trace`, and write one scenario per race (Showdown) or per "
                                   "session: the configuration, the inputs as steps anchored on the events they "
                                   "followed, what was seen as expectations (record-replay.md in the uno-hil docs).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--device", metavar="URL", help="record this unit live")
    src.add_argument("--from-trace", metavar="TRACE", help="a JSON Lines trace (unohil run --trace)")
    p.add_argument("-o", "--output", metavar="FILE", help="the scenario file to write (default: standard output)")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds of device time "
                                                               "(default: until Ctrl-C)")
    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="the live view: rich (a panel of the latest events and counts), lines (one line per event), "
                        "auto (rich on a terminal, default)")
    p.add_argument("--name", default="recorded", help="the scenarios' names start with this (default: recorded)")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.output:
        check_writable(args.output, "--output")
    if args.from_trace:
        segments, header = _from_trace(args.from_trace), [f"recorded from the trace {args.from_trace}"]
    else:
        segments, header = _live(args), [f"recorded live on {args.device}"]
    scenarios = [scenario_of(seg, f"{args.name} {i + 1}" + (f": {seg.name}" + (f" #{seg.race}" if seg.race else "")
                                                             if seg.name else ""))
                 for i, seg in enumerate(segments)]
    if not scenarios:
        print("nothing to write: the recording holds no input edge", file=sys.stderr)
        return Exit.USAGE
    text = dump(scenarios, header)
    try:
        loads(text, args.output or "<recording>")
    except ScenarioError as exc:        # the recorder's own mistake: say so, keep the recording anyway
        exc.print()
        print("the recording above does not validate: please report it", file=sys.stderr)
    if args.output:
        write_results(args.output, text, "--output")
        recording = {"tool": "unohil", "recording": 1, "scenarios": {
            doc["name"]: events_of(seg.events, UNITS[seg.kind], seg.start_us)
            for (doc, _), seg in zip(scenarios, segments)}}
        write_results(recorded_path(args.output), json.dumps(recording, separators=(",", ":")) + "\n", "recording")
        print(f"{len(scenarios)} scenario(s) written to {args.output}, what the unit did to "
              f"{recorded_path(args.output)} (unohil replay compares a replay with it)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return Exit.OK


def recorded_path(scenario_file: str) -> str:
    """Where what the unit did beside a recorded scenario file is kept: FILE.yaml -> FILE.recorded.json."""
    base = scenario_file[:-5] if scenario_file.endswith(".yaml") else scenario_file
    return base + ".recorded.json"


def _from_trace(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            records = []
            for n, line in enumerate(fh, 1):
                try:
                    records.append(json.loads(line))
                except ValueError as exc:
                    raise HarnessError(f"{path}:{n}: not a trace line ({exc})") from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the trace: {exc.strerror}") from None
    return segments_of(records)


def _live(args):
    with Driver.open(args.device) as d:
        rec = LiveRecording(d)
        rec.start()
        title = (f"recording {d.kind} unit {d.identity.serial} on {args.device}"
                 + (f" for {args.duration:g} s" if args.duration else "; Ctrl-C stops"))
        # stderr: the scenario file may be standard output
        view = RecordingView(Console(stderr=True), args.format, UNITS[d.kind], title, d.device_now())
        try:
            with view:
                rec.run(None if args.duration is None else round(args.duration * 1e6), view.event)
        except (KeyboardInterrupt, Interrupted) as exc:
            # Ctrl-C is how a recording ends; SIGTERM and SIGHUP (a closed terminal) keep it too
            name = "SIGINT" if isinstance(exc, KeyboardInterrupt) else signal_name(exc.signum)
            print(f"stopped by {name}: writing what was recorded", file=sys.stderr)
        segments = rec.segments()
        for seg in segments:
            seg.notes[:0] = rec.notes
        return segments
