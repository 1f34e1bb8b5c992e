"""unohil play: whole games with simulated players on a unit, every prediction and invariant checked."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rich.console import Console

from unohil.protocol import catalogue as cat
from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, StopRequest, exit_for
from unohil.harness.errors import HarnessError, UsageError
from unohil.harness.outcome import Outcome, Record
from unohil.harness.report.console import FORMATS, choose_format
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.report.junit import junit_xml
from unohil.harness.session.driver import Driver
from unohil.harness.text import duration, printable


def add_parser(sub) -> None:
    p = sub.add_parser("play", help="whole games with simulated players on a unit: predictions, invariants, "
                                    "game statistics",
                       description="Play complete UNO Showdown, UNO Flash or UNO Attack games (to 500 points) "
                                   "with simulated players around a unit, checking every verdict the unit "
                                   "gives against the rules, SPEC 6's draws (reference_rng) and the invariants "
                                   "of the cards on the table (games.md in the uno-hil docs).")
    p.add_argument("kind", choices=tuple(cat.UNITS), help="the unit kind (launcher: UNO Attack)")
    p.add_argument("--games", type=int, default=1, metavar="N", help="games to play (default 1)")
    p.add_argument("--players", type=int, default=3, metavar="P", help="players at the table (default 3)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="the run's seed: the same seed plays the "
                                                                    "same games (default 1)")
    p.add_argument("--device", metavar="URL", help="the unit (default: emu://KIND on the virtual clock)")
    p.add_argument("--variant", action="store_true", help="Showdown: every round-ending card forces a "
                                                           "1-card showdown")
    p.add_argument("--compressed", action="store_true", help="short countdowns, turns and thinking times, "
                                                             "for a unit that keeps real time")
    p.add_argument("--json", metavar="FILE", help="write the games and statistics as JSON")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML, a test case per game")
    p.add_argument("--trace", metavar="DIR", help="write a trace per game (JSON Lines) into DIR")
    p.add_argument("--format", choices=FORMATS, default="auto",
                   help="rich (a live view of the game), lines (a line per game), auto (rich on a terminal)")
    p.set_defaults(func=main)


def _check(args) -> None:
    if args.games < 1:
        raise UsageError(f"--games must be at least 1, not {args.games}")
    top = 8 if args.kind == "flash" else 7 if args.kind == "launcher" else 10
    if not 2 <= args.players <= top:
        raise UsageError(f"--players must be from 2 to {top} for {args.kind}, not {args.players}")
    if args.variant and args.kind != "showdown":
        raise UsageError("--variant is a Showdown rule")
    for opt in ("json", "junit"):
        if getattr(args, opt):
            check_writable(getattr(args, opt), f"--{opt}")
    if args.trace:
        check_writable(args.trace, "--trace", directory=True)


def main(args) -> int:
    from unohil.harness.games.stats import GameStats
    _check(args)
    url = args.device or f"emu://{args.kind}"
    console = Console(highlight=False)
    view = GameView(console, choose_format(args.format, console), args)
    results, totals = [], GameStats(args.kind, args.players)
    started = time.time()
    with StopRequest("stopping after the game in progress; again to stop at once") as stop:
        try:
            with Driver.open(url, kind=args.kind) as d, view:
                if args.kind == "flash" and args.players > d.identity.players:
                    raise UsageError(f"--players {args.players}: the base at {url} has {d.identity.players} "
                                     f"Player buttons")
                for n in range(1, args.games + 1):
                    if stop.reason():
                        break
                    result, stats = _game(args, d, n, view)
                    totals.merge(stats)
                    results.append(result)
                    view.game(result, totals)
        except Interrupted:
            pass                # the game in progress is dropped; the finished ones are written
        stop.finishing()
    if stop.signum is not None:
        print(f"{stop.reason()}: {len(results)} of {args.games} games played", file=sys.stderr)
    view.summary(results, totals)
    _outputs(args, url, results, totals, started)
    if stop.signum is not None:
        return exit_for(stop.signum)
    return Exit.OK if all(r.passed for r in results) else Exit.FAILED


def _game(args, d, n: int, view):
    """Game n, traced when asked, its scenario written when it failed."""
    from unohil.harness.games.play import game_seed, play_one
    kw = {"variant": args.variant} if args.kind == "showdown" else {}
    trace = _trace(d, args.trace, n)
    try:
        result, stats = play_one(args.kind, d, game_seed(args.seed, n), args.players, n,
                                 compressed=args.compressed, on_outcome=view.outcome,
                                 on_start=view.start, **kw)
    finally:
        if trace is not None:
            d.trace = None
            trace.close()
    if trace is not None:
        result.trace = str(trace.path)
        if result.status == "fail":
            try:
                result.scenario = _scenario(args.kind, trace.path, result, result.unit)
            except HarnessError as exc:     # the game's result and the other games' still count and are written
                print(f"game {n}'s scenario was not written: {exc}", file=sys.stderr)
    result.unit = None
    return result, stats


def _trace(d, directory: str | None, n: int):
    if directory is None:
        return None
    from unohil.harness.session.trace import TraceWriter
    Path(directory).mkdir(parents=True, exist_ok=True)
    d.trace = TraceWriter(directory, f"game-{n}")
    return d.trace


def _scenario(kind: str, trace_path: Path, result, unit) -> str:
    """A failed game as a scenario file beside its trace: its stimuli on the reference emulator when the
    unit has reference_rng (the scenario then fails where the game did), else its own trace."""
    from unohil.harness.games.reference import conforming_trace, scenario_text
    header = [f"game {result.number} of `unohil play {kind}`, seed {result.seed}",
              f"it failed: {printable(result.failure)}"]
    source = trace_path
    if unit.reference:
        source = conforming_trace(unit, trace_path.parent, trace_path.stem + "-conforming")
        header.append("what a conforming unit does with the game's inputs (the reference emulator)")
    else:
        header.append("what the unit did: without reference_rng another unit draws otherwise")
    text = scenario_text(kind, source, f"game {result.number} (seed {result.seed})", header, reference=unit.reference)
    if not text:
        return ""
    path = trace_path.with_suffix(".yaml")
    write_results(path, text, "the failed game's scenario")
    return str(path)


def _outputs(args, url, results, totals, started) -> None:
    if args.json:
        doc = {"tool": "unohil", "play": 1, "kind": args.kind, "device": url, "players": args.players,
               "seed": args.seed, "started_unix": round(started, 3), "duration_s": round(time.time() - started, 3),
               "summary": {"games": len(results), **{s: sum(r.status == s for r in results)
                                                     for s in ("pass", "fail", "link-error")}},
               "games": [r.as_dict() for r in results], "statistics": totals.as_dict()}
        write_results(args.json, json.dumps(doc, indent=1) + "\n", "--json")
    if args.junit:
        records = [Record(f"play {args.kind}", f"game {r.number} (seed {r.seed})",
                          Outcome(r.status), r.failure, r.failure, r.wall_s,
                          properties={k: v for k, v in r.summary.items() if k in ("rounds", "turns", "winner")},
                          output=f"trace file: {r.trace}" if getattr(r, "trace", "") else "", device=url)
                   for r in results]
        write_results(args.junit, junit_xml(f"unohil play {args.kind}", records), "--junit")


def outcome_label(kind: str, frame) -> str:
    """How the unit says a showdown, race, press or turn ended, in its own words (its reason's enum name): the
    verdict as reports word it ('first_press: loser b', 'fired 6'), a buzzer race's ('buzzer race, slowest_tie:
    slowest player 1'), a Flash selection ('after_timeout: player 2 selected') or penalty ('timeout: player 2 draws 2')."""
    from unohil.harness.report.verdicts import outcome_text
    from unohil.harness.session.trace import frame_record
    rec = frame_record("rx", frame)
    v = {**rec["fields"], **rec.get("names", {})}
    name = rec["type"]
    if name == "FL_SELECTED":
        return printable(f"{v['reason']}: player {v['player']} selected")
    if name == "FL_PENALTY":
        return printable(f"{v['reason']}: player {v['player']} draws {v['cards']}")
    if name == "FL_BUZZER_VERDICT":     # its reason always: outcome_text leaves `slowest` out
        return printable(f"buzzer race, {v['reason']}: slowest player {v['slowest']}")
    return outcome_text(kind, v)


class GameView:
    """A line per game anywhere; on a terminal, a live panel of the game in progress."""

    def __init__(self, console: Console, fmt: str, args):
        self.console, self.rich, self.args = console, fmt == "rich", args
        self.live = None
        self.current = None     # the game in progress
        self.last = ""
        self.done = 0

    def __enter__(self):
        if self.rich:
            from rich.live import Live
            self.live = Live(self, console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)

    def __rich__(self):
        from rich.markup import escape
        g = self.current
        lines = [f"[bold]{self.args.kind}[/] game {min(self.done + 1, self.args.games)} of {self.args.games}, {self.args.players} players"]
        if g is not None:
            lines.append(f"round {g.round}, turn {g.turn}, scores " + "  ".join(
                f"seat {s}: {p}" for s, p in enumerate(g.scores)))
            lines.append("  ".join(f"{k} {v}" for k, v in sorted(g.stats.counts.items())))
        lines.append(f"the unit, last: {escape(self.last)}")
        return "\n".join(lines)

    def start(self, game) -> None:
        self.current, self.last = game, ""

    def outcome(self, frame) -> None:
        self.last = outcome_label(self.args.kind, frame)

    def game(self, result, totals) -> None:
        self.done += 1
        s = result.summary
        status = result.status
        line = (f"{status:<11}game {result.number} (seed {result.seed})  {s.get('rounds', 0)} rounds, "
                f"{s.get('turns', 0)} turns, scores {s.get('scores')}, {result.device_us / 60e6:.1f} device min, "
                f"{result.wall_s:.2f} s")
        if not result.passed:
            line += f"\n      {printable(result.failure)}"
            if self.last:
                line += f"\n      the unit, last: {printable(self.last)}"
        if result.scenario:
            line += f"\n      scenario: {printable(result.scenario)} (unohil run replays it)"
        self.console.print(line, markup=False, soft_wrap=True)

    def summary(self, results, totals) -> None:
        p = self.console.print
        failed = sum(r.status == "fail" for r in results)
        cut = sum(r.status == "link-error" for r in results)
        p(f"{len(results)} games, {len(results) - failed - cut} passed, {failed} failed"
          + (f", {cut} cut short by the link" if cut else ""), markup=False, soft_wrap=True)
        for name, n in sorted(totals.counts.items()):
            p(f"  {name}: {n}", markup=False, soft_wrap=True)
        for name, seats in sorted(totals.per_seat.items()):
            p(f"  {name} per seat: " + ", ".join(f"{s}: {c}" for s, c in sorted(seats.items())), markup=False, soft_wrap=True)
        for name, v in sorted(totals.maxima.items()):
            p(f"  {name}: {v}", markup=False, soft_wrap=True)
        for e in totals.expectations():
            flag = "  FLAGGED" if e["flagged"] else ""
            if e["name"].endswith("(us)"):     # a duration: in human units
                name, fmt = e["name"][:-5], lambda x: duration(x, exact=False)
            else:
                name, fmt = e["name"], lambda x: f"{x:.4g}"
            p(f"  {name}: {fmt(e['observed'])} (expected {fmt(e['expected'])} ± {fmt(e['tolerance'])}, "
              f"n {e['n']}){flag}", markup=False, soft_wrap=True)
