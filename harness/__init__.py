"""uno-hil harness: device links, the driver, scenarios, runs, conformance, reports.

Layers, from the wire up: links (bytes to and from one device), session (one connected
unit: commands, events in order, clock sync, traces), scenarios (the YAML format and its
validator), run (scheduling races and judging them), rig (a stimulus-and-capture rig), measure
(latency against the link's floor, latency and fairness through a rig), conform (the acceptance
run), store (runs kept across runs), report (console, JSON, JUnit, HTML, VCD, Perfetto, metrics),
record (sessions into scenarios), games (whole games with simulated players), the pytest plugin and
cli; beneath them all errors, outcome and text.
docs/architecture.md lists them (tests/test_layers.py holds the imports to it) and draws the
path of a frame through them.

The names below are imported when first used: the pytest plugin and `unohil --version` import a
submodule of this package, and must not pay for the driver, the links and the catalogue with it.
"""
from __future__ import annotations

import _signal          # the interpreter's own (signal's enums cost milliseconds to import: a window)
import importlib
import os
import sys


def _started_as_the_command() -> bool:
    """Whether this process is the command line (the `unohil` script, `python -m unohil.harness.cli`),
    not a program that imports it (a test, a user's script), whose signals are its own business."""
    argv = getattr(sys, "orig_argv", sys.argv)
    return os.path.basename(sys.argv[0]) == "unohil" or any(
        a == "-m" and b in ("unohil.harness.cli", "unohil.harness.cli.__main__") for a, b in zip(argv, argv[1:]))


def _interrupted_at_start_up(signum, _frame) -> None:
    # os.write: a print here could land in the middle of another print's buffer
    os.write(2, b"interrupted by SIGINT\n")
    raise SystemExit(128 + signum)      # SystemExit: the interpreter ends quietly, wherever it was


if _started_as_the_command() and _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
    # The first project code to run: Ctrl-C from here on is one line, not a traceback from whatever module
    # was loading. (Before this line only the interpreter's own start-up runs.) A SIGINT ignored by
    # inheritance (`&`) stays ignored until app.main decides.
    _signal.signal(_signal.SIGINT, _interrupted_at_start_up)

_FROM = {
    **dict.fromkeys(("CommandTimeout", "DeviceMismatch", "DeviceReset", "DeviceURLError", "HarnessError",
                     "LinkClosed", "LinkError", "Nak", "WaitTimeout"), "unohil.harness.errors"),
    "open_link": "unohil.harness.links", "register_scheme": "unohil.harness.links",
    "Driver": "unohil.harness.session.driver",
}

__all__ = ["Driver", "CommandTimeout", "DeviceMismatch", "DeviceReset", "DeviceURLError", "HarnessError",
           "LinkClosed", "LinkError", "Nak", "WaitTimeout", "open_link", "register_scheme"]


def __getattr__(name: str):
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_FROM[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
