"""uno-hil harness: device links, the driver, scenarios, runs, conformance, reports.

Layers, from the wire up: links (bytes to and from one device), session (one connected
unit: commands, events in order, clock sync, traces), scenarios (the YAML format and its
validator), run (scheduling races and judging them), bench (latency against the link's floor),
rig (a stimulus-and-capture rig), conform (the acceptance run), report (console, JSON, JUnit,
HTML, VCD, Perfetto), record (sessions into scenarios), the pytest plugin and cli.
docs/architecture.md lists them (tests/test_layers.py holds the imports to it) and draws the
path of a frame through them.

The names below are imported when first used: the pytest plugin and `unohil --version` import a
submodule of this package, and must not pay for the driver, the links and the catalogue with it.
"""
from __future__ import annotations

import importlib

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
