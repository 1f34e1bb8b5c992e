"""Clocks that drive emulated units: one scheduling queue, two ways for time to pass.

Both clocks count integer microseconds and keep one queue of scheduled calls.
Entries run in (time, priority, scheduling order): at one instant every INPUT
entry runs before every TIMER entry (protocol/SPEC.md 4.8, "Ordering at one
device time"), and entries of one priority run in the order they were scheduled.

VirtualClock: time moves only when run forward (advance_to / run_next), and each
entry runs with now() equal to its own due time, so a model's processing takes
zero time and a run is a pure function of its inputs.

RealClock: now() follows time.monotonic_ns(); a serving loop sleeps until the next
due entry and calls run_due(). With pin_due=True each entry runs with now() pinned
to its due time (header times exact, pacing real): the "virtual" clock of a
served emulator.
"""
from __future__ import annotations

import heapq
import time
from typing import Callable

INPUT = 0
TIMER = 1


class Handle:
    """A scheduled call; cancel() makes it never run (cheap: the entry is skipped when reached)."""

    __slots__ = ("t", "fn", "args")

    def __init__(self, t: int, fn: Callable, args: tuple):
        self.t = t
        self.fn: Callable | None = fn
        self.args = args

    @property
    def active(self) -> bool:
        return self.fn is not None

    def cancel(self) -> None:
        self.fn = None
        self.args = ()


class Clock:
    def __init__(self) -> None:
        self._heap: list = []
        self._order = 0

    def now(self) -> int:
        raise NotImplementedError

    def call_at(self, t: int, fn: Callable, *args, priority: int = TIMER) -> Handle:
        handle = Handle(int(t), fn, args)
        self._order += 1
        heapq.heappush(self._heap, (handle.t, priority, self._order, handle))
        return handle

    def next_due(self) -> int | None:
        heap = self._heap
        while heap and heap[0][3].fn is None:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def next_handle(self) -> Handle | None:
        """The entry due next (not cancelled), or None."""
        return None if self.next_due() is None else self._heap[0][3]

    def _pop_due(self, upto: int, priority: int = TIMER) -> Handle | None:
        due = self.next_due()
        if due is None or due > upto or self._heap[0][1] > priority:
            return None
        return heapq.heappop(self._heap)[3]

    @staticmethod
    def _fire(handle: Handle) -> None:
        fn, args = handle.fn, handle.args
        handle.fn = None
        fn(*args)


class VirtualClock(Clock):
    def __init__(self, start: int = 0) -> None:
        super().__init__()
        self._now = start

    def now(self) -> int:
        return self._now

    def advance_to(self, t: int) -> None:
        """Run every entry due at or before t, each at its own time, then stand at t."""
        heap = self._heap
        while heap:
            due, _priority, _order, handle = heap[0]
            if due > t:
                break
            heapq.heappop(heap)
            fn = handle.fn
            if fn is None:
                continue                # cancelled
            if due > self._now:
                self._now = due
            args, handle.fn = handle.args, None
            fn(*args)
        if t > self._now:
            self._now = t

    def run_due(self, priority: int = TIMER) -> None:
        """Run what is due now (only inputs with priority=INPUT)."""
        while (handle := self._pop_due(self._now, priority)) is not None:
            self._fire(handle)

    def move_to(self, t: int) -> None:
        """Stand at t without running what is due at t; nothing may be due before it."""
        due = self.next_due()
        if due is not None and due < t:
            raise ValueError(f"entries due at {due} would be skipped by moving to {t}")
        self._now = max(self._now, t)

    def run_next(self, limit: int) -> int | None:
        """Jump to the next due time if it is at most limit and run everything due then."""
        due = self.next_due()
        if due is None or due > limit:
            return None
        self.advance_to(max(due, self._now))
        return due


class RealClock(Clock):
    def __init__(self, pin_due: bool = False) -> None:
        super().__init__()
        self._origin = time.monotonic_ns() // 1000
        self._pinned: int | None = None
        self.pin_due = pin_due

    @property
    def origin_us(self) -> int:
        """time.monotonic_ns() // 1000 at which this clock read 0."""
        return self._origin

    def now(self) -> int:
        if self._pinned is not None:
            return self._pinned
        return time.monotonic_ns() // 1000 - self._origin

    def run_due(self, ran: list | None = None) -> int:
        """Run every entry due by now; returns how many ran. ran, when given, gets the function of
        each (a unit's are its bound methods: a server learns which units acted)."""
        n = 0
        while (handle := self._pop_due(self.now())) is not None:
            if ran is not None:
                ran.append(handle.fn)
            if self.pin_due:
                self._pinned = handle.t
            try:
                self._fire(handle)
            finally:
                self._pinned = None
            n += 1
        return n
