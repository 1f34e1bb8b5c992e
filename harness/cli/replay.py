"""unohil replay: run recorded scenarios on a unit and show, beside pass or fail, how the replay
compares with what was recorded (harness/record/diff.py)."""
from __future__ import annotations

import json
import sys

from harness.cli.exit import Exit
from harness.cli.record import recorded_path
from harness.errors import UsageError
from harness.outcome import Outcome
from harness.record.diff import compare, summary
from harness.record.scenario import events_of
from harness.run.runner import Runner
from harness.scenarios.load import load_paths
from harness.scenarios.units import UNITS
from harness.session.driver import Driver


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay recorded scenarios and compare the replay with the recording",
                       description="Run the scenarios of a file written by `unohil record -o FILE` on a unit and "
                                   "print, for each, the events that match the recording, the ones that differ "
                                   "(fields, or time beyond --tolerance-us), and the ones missing or new.")
    p.add_argument("file", help="a scenario file written by unohil record (its FILE.recorded.json beside it)")
    p.add_argument("--device", metavar="URL", help="the unit (default: the built-in emulator of the file's kind)")
    p.add_argument("--tolerance-us", type=int, default=0, metavar="US",
                   help="a time difference up to this is no difference (default 0: exact, as on the virtual "
                        "clock; a real link's few ms need more)")
    p.add_argument("--all", action="store_true", help="show every event, not only those that differ")
    p.set_defaults(func=main)


def main(args) -> int:
    scenarios = load_paths([args.file])
    side = recorded_path(args.file)
    try:
        with open(side, encoding="utf-8") as fh:
            recorded = json.load(fh)["scenarios"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{side}: no recording beside {args.file} ({getattr(exc, 'strerror', None) or exc}); "
                         f"unohil record -o FILE writes it") from None
    kinds = {sc.unit for sc in scenarios}
    url = args.device or (f"emu://{kinds.pop()}?clock=virtual" if len(kinds) == 1 else None)
    if url is None:
        raise UsageError(f"{args.file}: scenarios of several kinds: give --device")
    worst = Exit.OK
    with Driver.open(url) as d:
        runner = Runner(d)
        for sc in scenarios:
            res = runner.run(sc)
            print(f"{res.status} {sc.name}")
            for race in res.races:
                for f in race.failures:
                    print(f"  - {f}")
            if res.status is not Outcome.PASS:
                worst = Exit.FAILED
            if sc.name not in recorded or not res.races:
                if sc.name not in recorded:
                    print("  (nothing recorded for it to compare with)")
                continue
            race = res.races[0]
            rows = compare([tuple(e) for e in recorded[sc.name]],
                           events_of(race.frames, UNITS[sc.unit], race.start_dev_us),
                           args.tolerance_us, ignore=frozenset({"event_seq"}))
            for row in rows:
                if args.all or row.kind != "same":
                    print(f"  {row.describe()}")
            print(f"  replay vs recording: {summary(rows)}")
    return worst
