"""unohil: the command line. One module per command; exit statuses are decided here, once.

  unohil run [PATHS...]       scripted scenarios against devices (default: the built-in emulator)
  unohil validate PATHS...    check scenario files only
  unohil emulate KIND ...     serve emulated units on a pty or TCP
  unohil hello --device URL   connect and show what answers
  unohil ports                list serial ports and USB units, and what answers on them
  unohil conform --device URL firmware acceptance: protocol conformance, then the scenario library
  unohil bench                adjudication latency against the raw floor of the link
"""
from __future__ import annotations

import argparse
import sys

from rich.console import Console

from harness.cli import bench, conform, emulate, hello, ports, run, validate
from harness.cli.exit import Exit
from harness.errors import HarnessError, ScenarioError

COMMANDS = (run, validate, bench, hello, emulate, ports, conform)


def version_text() -> str:
    """The package's version and the protocol version it speaks (the catalogue's)."""
    from importlib.metadata import PackageNotFoundError, version
    from protocol import catalogue as cat
    try:
        mine = version("uno-hil")
    except PackageNotFoundError:        # run from a source tree that is not installed
        mine = "unknown (not installed)"
    return f"unohil {mine}, protocol {cat.MAJOR}.{cat.MINOR}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unohil", description="HIL harness for reaction-race game units")
    parser.add_argument("--version", action="version", version=version_text(),
                        help="print the version of uno-hil and of the protocol it speaks, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
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
