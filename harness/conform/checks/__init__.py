"""Every conformance check, one module per SPEC section. The import order is the run order of the
MAIN phase: handshake, framing, commands, configuration, test mode, RESET, events, time, USB, the
Flash base's own (SPEC 8)."""
from unohil.harness.conform.checks import (handshake, framing, commands, config, inject, reset, events,  # noqa: F401
                                    timesync, usb, stream, flash)
