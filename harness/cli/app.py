"""unohil: the command line. One module per command; exit statuses are decided here, once.

  unohil run [PATHS...]       scripted scenarios against devices (default: the built-in emulator)
  unohil validate PATHS...    check scenario files only
  unohil emulate KIND ...     serve emulated units on a pty or TCP
  unohil hello --device URL   connect and show what answers
  unohil ports                list serial ports and USB units, and what answers on them
  unohil conform --device URL firmware acceptance: protocol conformance, then the scenario library
  unohil bench                adjudication latency against the raw floor of the link
  unohil fairness --device URL --rig URL   side skew and tie window from outside, through a rig
  unohil record               a session on a unit, or a trace, as a scenario file that replays it
  unohil replay FILE          recorded scenarios run again, each compared with its recording
  unohil report RESULTS -o F  an HTML report of a run from its results file
  unohil export ...           races as VCD (--vcd DIR), traces as Perfetto JSON (--perfetto FILE)
  unohil schema [-o FILE]     the JSON Schema of scenario files, for editors
  unohil library [--path P]   where the installed scenario library is and what it holds
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from unohil.harness.cli import commands, logs
from unohil.harness.cli.exit import Exit
from unohil.harness.cli.signals import Interrupted, exit_for, signal_name
from unohil.harness.errors import HarnessError, ScenarioError


def version_text() -> str:
    """The package's version and the protocol version it speaks (the catalogue's)."""
    from importlib.metadata import PackageNotFoundError, version
    from unohil.protocol import catalogue as cat
    try:
        mine = version("uno-hil")
    except PackageNotFoundError:        # run from a source tree that is not installed
        mine = "unknown (not installed)"
    return f"unohil {mine}, protocol {cat.MAJOR}.{cat.MINOR}"


class _Version(argparse._VersionAction):
    """--version, its text found only when asked for (it reads the catalogue)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = version_text()
        super().__call__(parser, namespace, values, option_string)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments it is for, only the command they name is built whole
    (commands.py), else every command is."""
    parser = argparse.ArgumentParser(prog="unohil", description="HIL harness for reaction-race game units")
    parser.add_argument("--version", action=_Version,
                        help="print the version of uno-hil and of the protocol it speaks, and exit")
    logs.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    commands.add_commands(parser, sub, argv)
    for p in sub.choices.values():
        logs.add_arguments(p, defaults=False)
        if "--device" in p._option_string_actions:      # every command that opens a unit claims it
            p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                           help="a unit another process (or labgrid user) holds: wait up to SECONDS for it "
                                "(default 0: refuse at once, naming the holder)")
    return parser


def _terminate(signum: int, _frame) -> None:
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    saved = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM ends a command the way Ctrl-C does (a message, its own exit status), not silently;
        # `run` stops at a safe point and writes its results instead (cli/signals.py)
        saved = signal.signal(signal.SIGTERM, _terminate)
    try:
        from unohil.harness.links import claim
        with logs.configured(args), claim.waiting(getattr(args, "wait", 0.0)):
            return int(args.func(args))
    except ScenarioError as exc:
        exc.print("; nothing was run")
        return Exit.USAGE
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.USAGE
    except KeyboardInterrupt:
        _say("interrupted by SIGINT")
        return Exit.INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`unohil ... | head`): nothing is left to say to it, and saying it fails too
        sys.stdout = open(os.devnull, "w")
        return Exit.OK
    except Interrupted as exc:
        _say(f"interrupted by {signal_name(exc.signum)}")
        return exit_for(exc.signum)
    finally:
        if saved is not None:
            signal.signal(signal.SIGTERM, saved)


def _say(text: str) -> None:
    from rich.console import Console
    Console(stderr=True, highlight=False).print(text)
