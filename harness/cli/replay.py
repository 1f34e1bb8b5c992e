"""unohil replay: run recorded scenarios on a unit and show, beside pass or fail, how the replay
compares with what was recorded (harness/record/diff.py)."""
from __future__ import annotations

import json
import sys
from dataclasses import replace

from unohil.harness.cli.exit import Exit
from unohil.harness.cli.record import recorded_path
from unohil.harness.errors import UsageError
from unohil.harness.outcome import Outcome
from unohil.harness.record.diff import compare, summary
from unohil.harness.record.scenario import events_of
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_paths
from unohil.harness.scenarios.units import UNITS
from unohil.harness.session.driver import Driver
from unohil.protocol import catalogue as cat


# Fields a replay differs in by its nature: the event counter, and the source of every input (a person's
# press on the unit, physical, is replayed by the host, injected)
REPLAY_IGNORES = frozenset({"event_seq", "source"})


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
    p.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                   help="replay with this parameter changed (repeatable), e.g. tie_window_us=50000: what the "
                        "next firmware's rule would do to the recorded session")
    p.add_argument("--seed", type=int, metavar="N", help="replay with the generator seeded N instead of the "
                                                         "recorded seed")
    p.set_defaults(func=main)


def main(args) -> int:
    scenarios = _changed(load_paths([args.file]), args.config, args.seed)
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
                           args.tolerance_us, ignore=REPLAY_IGNORES)
            for row in rows:
                if args.all or row.kind != "same":
                    print(f"  {row.describe()}")
            print(f"  replay vs recording: {summary(rows)}")
    return worst


def _changed(scenarios, settings: list[str], seed: int | None):
    """The scenarios with --config's parameters and --seed put in place of the recorded ones."""
    changes = {}
    for text in settings:
        name, sep, value = text.partition("=")
        param = cat.PARAMS_BY_NAME.get(name.strip())
        if not sep or param is None or not value.strip().isdigit():
            raise UsageError(f"--config {text}: give NAME=VALUE with a parameter of the catalogue, "
                             f"e.g. tie_window_us=50000")
        if not param.min <= int(value) <= param.max:
            raise UsageError(f"--config {text}: {param.name} is {param.min}..{param.max}")
        changes[param.name] = int(value)
    if seed is not None and not 0 <= seed <= 0xFFFFFFFF:
        raise UsageError(f"--seed {seed}: a seed is a u32")
    out = []
    for sc in scenarios:
        foreign = [name for name in changes if sc.unit not in cat.PARAMS_BY_NAME[name].units]
        if foreign:
            raise UsageError(f"--config {foreign[0]}: not a parameter of {sc.unit} ({sc.file}:{sc.line})")
        config = {**sc.config, **changes}
        unit = UNITS[sc.unit]
        values = unit.with_defaults(config)
        for rule in unit.cross_rules:       # SPEC 4.7: a configuration the unit would refuse is the command's mistake
            if not rule.holds(values):
                raise UsageError(f"--config {', '.join(f'{k}={v}' for k, v in changes.items())}: breaks the rule "
                                 f"{rule.text} (" + ", ".join(f"{n} = {values[n]}" for n in rule.params)
                                 + f") in {sc.file}:{sc.line}; the unit would refuse it")
        out.append(replace(sc, config=config, seed=sc.seed if seed is None else seed))
    return out
