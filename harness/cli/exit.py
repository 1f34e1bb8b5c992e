"""Exit statuses of the command line, and the error for a bad combination of options."""
from __future__ import annotations

import enum

from harness.errors import HarnessError


class Exit(enum.IntEnum):
    OK = 0              # everything passed (or conformed)
    FAILED = 1          # a unit failed something, or the link lost what it could not recover
    USAGE = 2           # usage, validation or connection errors: nothing to judge a unit on
    INTERRUPTED = 130   # Ctrl-C


class UsageError(HarnessError):
    """Options that do not go together, or a value an option does not take."""
