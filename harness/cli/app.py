"""unohil: the command line. One module per command; exit statuses are decided here, once.

  unohil run [PATHS...]       scripted scenarios against devices (default: the built-in emulator)
  unohil validate PATHS...    check scenario files only
  unohil emulate KIND ...     serve emulated units on a pty or TCP
  unohil hello --device URL   connect and show what answers
  unohil ports                list serial ports and USB units, and what answers on them
  unohil conform --device URL firmware acceptance: protocol conformance, then the scenario library
  unohil bench                adjudication latency against the raw floor of the link
  unohil record               a session on a unit, or a trace, as a scenario file that replays it
"""
from __future__ import annotations

import argparse
import sys

from rich.console import Console

from harness.cli import bench, conform, emulate, hello, ports, record, run, validate
from harness.cli.exit import Exit
from harness.errors import HarnessError, ScenarioError
from harness.links import claim

COMMANDS = (run, validate, bench, hello, emulate, ports, conform, record)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unohil", description="HIL harness for reaction-race game units")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    for p in sub.choices.values():
        if "--device" in p._option_string_actions:      # every command that opens a unit claims it
            p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                           help="a unit another process (or labgrid user) holds: wait up to SECONDS for it "
                                "(default 0: refuse at once, naming the holder)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with claim.waiting(getattr(args, "wait", 0.0)):
            return int(args.func(args))
    except ScenarioError as exc:
        exc.print("; nothing was run")
        return Exit.USAGE
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.USAGE
    except KeyboardInterrupt:
        Console(stderr=True, highlight=False).print("interrupted")
        return Exit.INTERRUPTED
