"""A unit model's pending deadlines, with the deadline-first rule at one instant.

The clock runs inputs before timers due at the same device time (SPEC.md 4.8), and
on the real clock a timer may not have run yet when a later input is handled. The
Flash and launcher rules put every deadline before an input at the same instant
(half-open windows: a press at exactly the end of a turn is a timeout). So a model
calls catch_up(t) before handling an input at t: every deadline due at or before t
runs first, at its own due time, in (due time, order set).
"""
from __future__ import annotations

from itertools import count
from typing import Callable


class Deadline:
    __slots__ = ("t", "order", "fn", "handle")

    def __init__(self, t: int, order: int, fn: Callable[[int], None]):
        self.t = t
        self.order = order
        self.fn = fn
        self.handle = None


class Deadlines:
    def __init__(self, model):
        self.model = model
        self.pending: list[Deadline] = []
        self._order = count()

    def set(self, t: int, fn: Callable[[int], None]) -> Deadline:
        d = Deadline(t, next(self._order), fn)
        d.handle = self.model.at(t, self._fire, d)
        self.pending.append(d)
        return d

    def clear(self, d: Deadline | None) -> None:
        if d is not None and d in self.pending:
            self.pending.remove(d)
            d.handle.cancel()

    def clear_all(self) -> None:
        for d in self.pending:
            d.handle.cancel()
        self.pending.clear()

    def _fire(self, _t: int, d: Deadline) -> None:
        if d in self.pending:
            self.pending.remove(d)
            d.fn(d.t)

    def catch_up(self, t: int) -> None:
        """Run every deadline due at or before t (and those they set in turn), oldest first."""
        while True:
            due = [d for d in self.pending if d.t <= t]
            if not due:
                return
            d = min(due, key=lambda d: (d.t, d.order))
            self.clear(d)
            self.model.core.run_timer(d.fn, d.t)
