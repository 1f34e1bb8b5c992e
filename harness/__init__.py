"""uno-hil harness: device links, the driver, scenarios, runs, conformance, reports.

Layers, from the wire up: links (bytes to and from one device), session (one connected
unit: commands, events in order, clock sync, traces), scenarios (the YAML format),
run (scheduling races and judging them), conform (the acceptance run), report (console,
JSON, JUnit), cli. docs/architecture.md draws the path of a frame through them.
"""
from unohil.harness.errors import (CommandTimeout, DeviceMismatch, DeviceReset, DeviceURLError, HarnessError, LinkClosed,
                            LinkError, Nak, WaitTimeout)
from unohil.harness.links import open_link, register_scheme
from unohil.harness.session.driver import Driver

__all__ = ["Driver", "CommandTimeout", "DeviceMismatch", "DeviceReset", "DeviceURLError", "HarnessError",
           "LinkClosed", "LinkError", "Nak", "WaitTimeout", "open_link", "register_scheme"]
