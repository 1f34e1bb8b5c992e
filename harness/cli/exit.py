"""Exit statuses of the command line."""
from __future__ import annotations

import enum


class Exit(enum.IntEnum):
    OK = 0              # everything passed (or conformed)
    FAILED = 1          # a unit failed something, or the link lost what it could not recover
    USAGE = 2           # usage, validation or connection errors: nothing to judge a unit on
    NOT_JUDGED = 3      # conform: the link cut checks short, so the unit was neither passed nor failed
    HANGUP = 129        # SIGHUP (the terminal or the ssh session that started it went away): 128 + 1
    INTERRUPTED = 130   # Ctrl-C (SIGINT): 128 + 2, as a shell reports it
    TERMINATED = 143    # SIGTERM (a CI runner's timeout): 128 + 15
