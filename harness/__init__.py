"""uno-hil harness: device links, the driver, scenarios, reports."""
from . import emu as _emu  # noqa: F401  (registers emu://)
from . import usb_link as _usb_link  # noqa: F401  (registers usb://)
from .driver import Driver
from .errors import (CommandTimeout, DeviceMismatch, DeviceReset, DeviceURLError, HarnessError, LinkClosed,
                     LinkError, Nak, WaitTimeout)
from .links import open_link, register_scheme

__all__ = ["Driver", "CommandTimeout", "DeviceMismatch", "DeviceReset", "DeviceURLError", "HarnessError",
           "LinkClosed", "LinkError", "Nak", "WaitTimeout", "open_link", "register_scheme"]
