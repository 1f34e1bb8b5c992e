"""The one tree of errors a user or a device can cause. Each says what went wrong, where, and what to do.

The exit statuses are named once (cli/exit.py); cli/app.py maps every HarnessError that escapes
a command to a usage, validation or connection problem (exit 2). Verdicts on a unit are results,
not errors, and never raised. (Conformance checks signal a breach with conform.wire.Fail, which
never leaves a check: it becomes the check's fail.)
"""
from __future__ import annotations

from dataclasses import dataclass


class HarnessError(Exception):
    """Base class of everything the harness reports as one clear message."""


@dataclass(frozen=True)
class Problem:
    """One problem at one place in a user's file."""
    file: str
    line: int
    col: int
    key: str
    message: str

    def __str__(self) -> str:
        """file:line:col: key: message; without line:col for a problem with the whole file (line 0),
        without the key when it is about no key (a path that does not exist, malformed YAML)."""
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    @classmethod
    def whole_file(cls, file: str, message: str) -> "Problem":
        """A problem with a path as a whole: it does not exist, it cannot be read."""
        return cls(file, 0, 0, "", message)


class ScenarioError(HarnessError):
    """One or more problems in scenario files; str() lists them all."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def print(self, tail: str = "", file=None) -> None:
        """Every problem on its own line, then a count (and tail), to stderr by default."""
        import sys
        out = sys.stderr if file is None else file
        for p in self.problems:
            print(str(p), file=out)
        print(f"{len(self.problems)} problem(s){tail}", file=out)


class DeviceURLError(HarnessError):
    """A device URL that cannot name a device, or a port that cannot be opened."""


class DeviceMismatch(HarnessError):
    """The device answered, but it is not what was asked for (kind, protocol version)."""


class OutputError(HarnessError):
    """A results file or trace directory that cannot be written."""


class UsageError(HarnessError):
    """Command-line options that do not go together, or a value an option does not take."""


class ScheduleError(HarnessError):
    """A scenario asks for a stimulus at a time that had passed before the host could know it."""


class SelectionError(HarnessError):
    """A -k expression that does not parse."""


class PoolExhausted(HarnessError):
    """No device of the pool is free for this process."""


class DeviceBusy(DeviceURLError):
    """The unit is driven by another process (or held on the coordinator by another user)."""

    def __init__(self, message: str, holder: dict | None = None):
        super().__init__(message)
        self.holder = holder or {}


class ConformError(HarnessError):
    """A conformance run that could not start: no answer, or not a unit."""


class LinkError(HarnessError):
    """The link failed under us: closed, unplugged, or too corrupt to trust."""


class LinkClosed(LinkError):
    pass


class LateStimulus(LinkError):
    """A stimulus reached the unit after its time because the host or the link was slow: the race
    judged nothing, and running it again is fair to the unit."""


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

    def __init__(self, command: str, error: str, detail: int = 0):
        super().__init__(f"{command} refused by the device: {error} (detail {detail})")
        self.command = command
        self.error = error
        self.detail = detail
