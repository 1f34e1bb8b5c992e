"""SIGINT, SIGTERM and SIGHUP during a command: stop at a safe point, keep what was found.

Ctrl-C sends SIGINT; a CI runner that times a job out sends SIGTERM (then SIGKILL a few seconds
later); a closed terminal or ssh session sends SIGHUP. The first signal asks the work to stop at its next safe point (for `unohil run`: after
the race in progress, so no race is cut in half); a second one stops it at once. Either way the
command still writes what it has, and exits 128 + the signal's number (130, 143, 129).

The handlers are installed whatever the process inherited: a command started with `&` from a
non-interactive shell has SIGINT ignored, and would otherwise run to the end whoever asks it to stop.
"""
from __future__ import annotations

import os
import signal
import threading

from unohil.harness.cli.exit import Exit

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """Raised in the main thread by a signal that must stop the work at once. A BaseException,
    like KeyboardInterrupt, so no `except Exception` on the way up mistakes it for an item's error."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


def exit_for(signum: int) -> Exit:
    """What a shell reports for a command a signal ended: 128 + its number."""
    return {signal.SIGINT: Exit.INTERRUPTED, signal.SIGHUP: Exit.HANGUP}.get(signum, Exit.TERMINATED)


class StopRequest:
    """While entered (in the main thread), SIGINT, SIGTERM and SIGHUP ask for a stop instead of ending the process.

    The first signal only records itself (reason() says it, for the work to check at its safe points);
    the second raises Interrupted. Once the work is over (finishing()), signals are ignored while what
    was found is written: a few milliseconds, and SIGKILL still ends the process."""

    def __init__(self, soft_note: str = "stopping after the race in progress; again to stop at once"):
        self.signum: int | None = None
        self.count = 0
        self.soft_note = soft_note
        self._finishing = False
        self._saved: dict[int, object] = {}

    def __enter__(self) -> "StopRequest":
        if threading.current_thread() is threading.main_thread():
            for s in STOP_SIGNALS:
                self._saved[s] = signal.signal(s, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._saved.items():
            signal.signal(s, handler)
        self._saved.clear()

    def finishing(self) -> None:
        """The work is over: from now on a signal changes nothing (the results are being written)."""
        self._finishing = True

    def _on_signal(self, signum: int, _frame) -> None:
        if self._finishing:
            return
        self.count += 1
        if self.count == 1:
            self.signum = signum
            # os.write, not print: a handler that prints while the main thread is printing gets
            # "reentrant call" from the buffered stream.
            os.write(2, f"{signal_name(signum)}: {self.soft_note}\n".encode())
        elif self.count == 2:
            raise Interrupted(self.signum)

    def reason(self) -> str | None:
        """Why to stop ("interrupted by SIGTERM"), or None while no signal came."""
        return None if self.signum is None else f"interrupted by {signal_name(self.signum)}"
