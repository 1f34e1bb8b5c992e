"""The CLI's logging options: the harness's records (loggers under "unohil") on stderr and in a file.

Records go to stderr only, never stdout, so `--format lines` and results written to /dev/stdout stay
machine-readable. Only the "unohil" tree is configured: other libraries' records stay as Python leaves them.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
from typing import Iterator

from unohil.harness.errors import UsageError

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
ROOT = "unohil"
CONSOLE_FORMAT = "%(levelname)s %(name)s: %(message)s"
FILE_FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s [%(threadName)s]: %(message)s"


def add_arguments(parser: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """The options, on the top-level parser (defaults=True) and on each command's (defaults=False: given
    after the command, they override the ones before it; not given, they leave them be)."""
    default = (lambda value: value) if defaults else (lambda _value: argparse.SUPPRESS)
    group = parser.add_argument_group("logging (the harness's records, on stderr)")
    group.add_argument("-v", "--verbose", action="count", default=default(0),
                       help="-v: INFO records (each scenario and race as it ends), -vv: DEBUG (every frame)")
    group.add_argument("--log-level", type=_level, metavar="LEVEL", default=default(None),
                       help=f"the records shown on stderr from this level up ({', '.join(LEVELS)}); "
                            "wins over -v")
    group.add_argument("--log-file", metavar="PATH", default=default(None),
                       help="also append every record to PATH, with timestamps (from DEBUG, or from --log-level "
                            "when given): a CI artefact")


def _level(text: str) -> str:
    if text.upper() not in LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a level: {', '.join(LEVELS)}")
    return text.upper()


def console_level(args) -> int | None:
    """The level of the records shown on stderr, or None: none asked for (Python's own default stays:
    warnings and errors only)."""
    if args.log_level:
        return logging.getLevelName(args.log_level)
    if args.verbose:
        return logging.DEBUG if args.verbose > 1 else logging.INFO
    return None


@contextlib.contextmanager
def configured(args) -> Iterator[None]:
    """The "unohil" loggers as the options ask, for as long as the command runs; put back after it (main
    may run more than once in a process)."""
    logger = logging.getLogger(ROOT)
    handlers: list[logging.Handler] = []
    shown = console_level(args)
    if shown is not None:
        console = logging.StreamHandler()       # stderr
        console.setLevel(shown)
        console.setFormatter(logging.Formatter(CONSOLE_FORMAT))
        handlers.append(console)
    if args.log_file:
        try:
            to_file = logging.FileHandler(args.log_file, mode="a", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--log-file {args.log_file}: cannot be written ({exc.strerror or exc})") from None
        to_file.setLevel(logging.getLevelName(args.log_level) if args.log_level else logging.DEBUG)
        to_file.setFormatter(logging.Formatter(FILE_FORMAT, datefmt="%Y-%m-%dT%H:%M:%S"))
        handlers.append(to_file)
    if not handlers:
        yield
        return
    saved = logger.level
    logger.setLevel(min(h.level for h in handlers))
    for h in handlers:
        logger.addHandler(h)
    try:
        yield
    finally:
        for h in handlers:
            logger.removeHandler(h)
            h.close()
        logger.setLevel(saved)
