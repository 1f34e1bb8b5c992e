"""unohil history: what a results store remembers: runs by unit, firmware and date, a scenario's or a
check's history, a figure's trend by firmware version."""
from __future__ import annotations

import datetime as dt
import json

from unohil.protocol import catalogue as cat
from unohil.harness.errors import UsageError
from unohil.harness.store import history as h
from unohil.harness.store.backend import Store
from unohil.harness.store.config import add_store_argument, configured
from unohil.harness.text import printable


def add_parser(sub) -> None:
    p = sub.add_parser("history", help="runs, a scenario's or check's history, a figure's trend, from a results store")
    add_store_argument(p, "read")
    p.add_argument("--kind", help=f"units of this kind only ({', '.join(cat.UNITS)})")
    p.add_argument("--firmware", help="units with this firmware version only")
    p.add_argument("--serial", type=int, help="the unit with this serial only")
    p.add_argument("--since", type=_date, metavar="DATE", help="runs from this date on (YYYY-MM-DD, UTC)")
    p.add_argument("--until", type=_date, metavar="DATE", help="runs before this date (YYYY-MM-DD, UTC)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--scenario", metavar="NAME", help="this scenario's result in every stored run")
    what.add_argument("--check", metavar="NAME", help="this conform check's result in every stored run")
    what.add_argument("--trend", metavar="FIGURE",
                      help="a figure's p50, p99 and max per firmware version, e.g. processing_us (the verdict's "
                           "processing latency)")
    p.add_argument("--of", metavar="SCENARIO", help="with --trend: the races of this scenario only")
    p.add_argument("--limit", type=int, default=50, help="runs listed at most (default 50)")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.set_defaults(func=main)


def _date(text: str) -> float:
    import argparse
    try:
        return dt.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None


def when(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def open_configured(given: str | None) -> Store:
    where = configured(given)
    if where is None:
        raise UsageError("no results store: give --store WHERE (a file, `default`, or postgresql://...), or set "
                         "UNOHIL_STORE")
    return Store.open(where)


def main(args) -> int:
    f = h.Filter(kind=args.kind, firmware=args.firmware, serial=args.serial, since=args.since, until=args.until)
    with open_configured(args.store) as store:
        if args.scenario or args.check:
            found = (h.scenario_history(store, args.scenario, f) if args.scenario
                     else h.check_history(store, args.check, f))
            _say(args, found, lambda x: f"run {x['run']}  {when(x['started_unix'])}  {x['kind']} {x['firmware']} "
                                        f"serial {x['serial']}  {x['status']}")
            if not args.json:
                counts = h.tally(found)
                print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or
                      f"no stored result of {args.scenario or args.check!r}")
        elif args.trend:
            found = h.trend(store, args.trend, f, args.of)
            _say(args, found, lambda x: f"{x['kind']} {x['firmware']}: {args.trend} p50 {x['p50']} us, p99 "
                                        f"{x['p99']} us, max {x['max']} us ({x['n']} races)")
            if not found and not args.json:
                print(f"no stored figure {args.trend!r} for these units")
        else:
            found = h.runs(store, f, args.limit)
            _say(args, found, _run_line)
            if not found and not args.json:
                print("no stored runs for these units")
    return 0


def _run_line(x: dict) -> str:
    units = ", ".join(f"{u['kind']} {u['firmware']} serial {u['serial']}" for u in x["units"])
    flaky = f", {x['flaky']} flaky" if x["flaky"] else ""
    return (f"run {x['run']}  {when(x['started_unix'])}  {x['command']} {x['status']}: {x['passed']} passed, "
            f"{x['failed']} failed{flaky}, {x['skipped']} skipped  [{units}]")


def _say(args, found: list[dict], line) -> None:
    if args.json:
        print(json.dumps(found, indent=1))
        return
    for x in found:
        print(printable(line(x)))
