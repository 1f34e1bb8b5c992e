"""Errors a user or a device can cause. Each says what went wrong, where, and what to do."""
from __future__ import annotations


class HarnessError(Exception):
    """Base class; exit_code is what the CLI exits with."""

    exit_code = 2


class DeviceURLError(HarnessError):
    """A device URL that cannot name a device, or a port that cannot be opened."""


class DeviceMismatch(HarnessError):
    """The device answered, but it is not what was asked for (kind, protocol version)."""


class LinkError(HarnessError):
    """The link failed under us: closed, unplugged, or too corrupt to trust."""

    exit_code = 3


class LinkClosed(LinkError):
    pass


class WaitTimeout(LinkError):
    """A deadline passed. The message names what was waited for."""


class CommandTimeout(WaitTimeout):
    pass


class DeviceReset(LinkError):
    """The device rebooted (its boot id changed): nothing after this may count as a pass."""

    def __init__(self, message: str, old_boot_id: int | None = None, new_boot_id: int | None = None):
        super().__init__(message)
        self.old_boot_id = old_boot_id
        self.new_boot_id = new_boot_id


class Nak(HarnessError):
    """The device refused a command."""

    exit_code = 1

    def __init__(self, command: str, error: str, detail: int = 0):
        super().__init__(f"{command} refused by the device: {error} (detail {detail})")
        self.command = command
        self.error = error
        self.detail = detail
