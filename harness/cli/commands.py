"""The subcommands by name, each module imported only when its command is chosen.

`unohil --version` and `unohil --help` need no command's module (a module brings the runner, the catalogue,
rich...): every command but the chosen one is registered by its name and its help line alone. The help
lines are the ones each module's add_parser gives (tests/test_cli_startup.py holds them equal), so
`unohil --help` reads the same either way.
"""
from __future__ import annotations

import argparse
import importlib

# name -> its line in `unohil --help`, in that order
COMMANDS = {
    "run": "run scenarios",
    "validate": "check scenario files without running them",
    "bench": "adjudication latency against the raw floor of the link, in one run",
    "fairness": "side skew and tie window of a unit from outside, through its rig (SPEC 13.6)",
    "hello": "connect to a device and show what it is",
    "emulate": "serve emulated units on a pty or TCP",
    "ports": "list serial ports and USB devices, and which answer as units",
    "conform": "firmware acceptance: protocol conformance by SPEC section, then the scenario library of the "
               "unit's kind",
    "record": "turn a session on a unit, or a trace, into a scenario file that replays it",
    "replay": "replay recorded scenarios and compare the replay with the recording",
    "history": "runs, a scenario's or check's history, a figure's trend, from a results store",
    "compare": "what changed between two runs: verdicts, scenarios, latency distributions",
    "report": "an HTML report (one self-contained file) from a results file",
    "export": "races as VCD (GTKWave, PulseView), traces as Perfetto/Chrome trace JSON",
    "schema": "the JSON Schema of scenario files, for editors",
    "library": "where the scenario library that ships with uno-hil is, and what it holds",
    "play": "whole games with simulated players on a unit: predictions, invariants, game statistics",
}


def module(name: str):
    return importlib.import_module(f"unohil.harness.cli.{name}")


def chosen(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The command argv names: its first word that is a command's name and not the value of one of the
    parser's own options (`--log-file run` names a file)."""
    takes_value = {s for s, a in parser._option_string_actions.items() if a.nargs != 0}
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in takes_value:
            skip = True
        elif word in COMMANDS or not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def add_commands(parser: argparse.ArgumentParser, sub, argv: list[str] | None) -> None:
    """Every command's parser; with argv, only the command it chooses is built whole (argv None: all are)."""
    only = chosen(parser, argv) if argv is not None else None
    for name, text in COMMANDS.items():
        if argv is None or name == only:
            module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=text)
