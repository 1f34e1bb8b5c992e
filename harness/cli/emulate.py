"""unohil emulate: serve emulated units on a pty or TCP (the emulator's own command line)."""
from __future__ import annotations


def add_parser(sub) -> None:
    try:
        from unohil.emulator.cli import add_arguments
    except ImportError:  # pragma: no cover - the emulator package is part of the distribution
        return
    p = sub.add_parser("emulate", help="serve emulated units on a pty or TCP")
    add_arguments(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from unohil.emulator.cli import run
    return run(args)
