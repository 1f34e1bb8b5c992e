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
import signal
import sys
import threading

from unohil.harness.cli import commands, console_guard, logs
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
    saved = {}
    if threading.current_thread() is threading.main_thread():
        # First thing, whatever the process inherited (`&` in a script ignores SIGINT): SIGINT, SIGTERM
        # and SIGHUP end a command the way it does (a message, its own exit status), not silently; run
        # and conform stop at a safe point and write their results instead (cli/signals.py). Not
        # KeyboardInterrupt: one raised while an extension module runs code at import (yaml's, Cython's
        # PyRun_String) leaves the interpreter marked, and it then ends itself by SIGINT whatever status
        # main returns.
        saved = {s: signal.signal(s, _terminate) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    guard = console_guard.install()
    try:
        status = _command(argv)
        failed = console_guard.console_failure(guard)
        if failed:
            print(failed, file=sys.stderr)
            if status in (Exit.OK, Exit.FAILED):
                status = Exit.USAGE         # an output that could not be written, as a results file's
        return status
    finally:
        console_guard.uninstall(guard)
        for s, handler in saved.items():
            signal.signal(s, handler)


def _command(argv: list[str]) -> int:
    try:
        args = build_parser(argv).parse_args(argv)
        from unohil.harness.report.files import refuse_empty
        refuse_empty(args)
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
    except Interrupted as exc:
        _say(f"interrupted by {signal_name(exc.signum)}")
        return exit_for(exc.signum)


def _say(text: str) -> None:
    print(text, file=sys.stderr)       # not rich: it may be what was being imported when the signal came
