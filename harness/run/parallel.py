"""A rack of connected units, and running work on it: one thread per unit, each taking the next item
its kind can run, so the units of a rack work side by side."""
from __future__ import annotations

import queue
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, TypeVar
from urllib.parse import urlsplit

from unohil.protocol import catalogue as cat

from unohil.harness.errors import HarnessError
from unohil.harness.links.fd import FdLink
from unohil.harness.session.driver import Driver
from unohil.harness.session.health import LinkHealth

OPENING_AT_ONCE = 32        # units opened side by side by Rack.open
# With more units than this a rack's byte links wait for their bytes without kernel slices (links/fd.py
# FdLink.one_of_many): each slice that runs out costs a wake-up and the GIL, 10 a second per waiting unit
SLICED_UNITS_MAX = 64
# Units of a rack at work at the same time (Workers, Turns). Every unit at work needs the harness's attention
# in time (a press a fixed time after an event); past what one process can give, every race of the rack is
# late together. With 2,000 served units at work at once, a fifth of the races sent their stimuli too late
# and the process spent most of its time in the kernel (docs/performance.md, "Many units in one run").
RACING_AT_ONCE = 256

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Unopened:
    """A unit of the rack that could not be opened or handshaken: why, and its kind when its URL says it."""
    url: str
    kind: str | None
    error: str

    def covers(self, kind: str) -> bool:
        """Whether scenarios of this kind may have been this unit's (a URL without a kind may be any)."""
        return self.kind is None or self.kind == kind

    def describe(self) -> dict:
        return {"url": self.url, "kind": self.kind, "serial": None, "firmware": None, "boot_id": None,
                "catalog_crc": None, "trace": None, "error": self.error}


def url_kind(url: str) -> str | None:
    """The unit kind a URL names (emu://KIND), else None."""
    parts = urlsplit(url)
    kind = (parts.netloc or parts.path.lstrip("/")).lower() if parts.scheme == "emu" else ""
    return kind if kind in cat.UNITS else None


class Rack:
    """The units of a run, by kind; closed together."""

    def __init__(self, drivers: Iterable[Driver], unopened: Iterable[Unopened] = ()):
        self.drivers = list(drivers)
        self.unopened = list(unopened)

    @classmethod
    def open(cls, urls: list[str], kinds: set[str], trace_dir=None, opener=None) -> "Rack":
        """The devices named, or one built-in emulator (virtual clock) per kind when none are. Of several, one
        that cannot be opened or handshaken is kept in unopened and the others are used; when none opens,
        the first one's error is raised. opener: instead of open_link (--firmware's, which flashes first)."""
        kw = {"opener": opener} if opener is not None else {}
        todo = urls or [f"emu://{kind}?clock=virtual" for kind in sorted(kinds)]
        FdLink.one_of_many = len(todo) > SLICED_UNITS_MAX
        if len(todo) < 2:
            return cls([Driver.open(url, trace_dir=trace_dir, **kw) for url in todo])
        # several units open side by side (a handshake waits on its unit most of the time): 2,000 in seconds
        # (one at a time with an opener: flashing firmware starts a QEMU or a programmer per unit)
        pool = ThreadPoolExecutor(1 if opener is not None else min(OPENING_AT_ONCE, len(todo)),
                                  thread_name_prefix="open")
        futures = [pool.submit(Driver.open, url, trace_dir=trace_dir, **kw) for url in todo]
        opened: list[Driver] = []
        unopened: list[Unopened] = []
        first: HarnessError | None = None
        try:
            for url, fut in zip(todo, futures):
                try:
                    opened.append(fut.result())
                except HarnessError as exc:
                    first = first or exc
                    unopened.append(Unopened(url, url_kind(url), str(exc)))
        except BaseException:       # Ctrl-C: the opens under way end, and every unit opened is given back
            pool.shutdown(wait=True, cancel_futures=True)
            for fut in futures:
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    fut.result().close()
            raise
        pool.shutdown()
        if not opened and first is not None:
            raise first
        return cls(opened, unopened)

    def kinds(self) -> set[str]:
        """The kinds the rack's units are or, for a unit that could not be opened, say they are."""
        return {d.kind for d in self.drivers} | {u.kind for u in self.unopened if u.kind is not None}

    def unopened_for(self, kind: str) -> list[Unopened]:
        return [u for u in self.unopened if u.covers(kind)]

    def by_kind(self) -> dict[str, list[Driver]]:
        out: dict[str, list[Driver]] = {}
        for d in self.drivers:
            out.setdefault(d.kind, []).append(d)
        return out

    def health(self) -> LinkHealth:
        total = LinkHealth()
        for d in self.drivers:
            total.add(d.health)
        return total

    def describe(self) -> list[dict]:
        """What each unit is, for a results file."""
        out = []
        for d in self.drivers:
            ident = d.identity
            out.append({"url": d.url, "kind": d.kind, "serial": ident.serial if ident else None,
                        "firmware": f"{ident.fw_major}.{ident.fw_minor}.{ident.fw_patch}" if ident else None,
                        "boot_id": ident.boot_id if ident else None,
                        "catalog_crc": f"{ident.catalog_crc:#06x}" if ident else None,
                        "trace": str(d.trace.path) if d.trace is not None else None,
                        "health": d.health.as_dict(),
                        "clock": d.clock.estimate.as_dict() if d.clock.estimate else None,
                        **({"error": d.replaced} if d.replaced else {})})
        return out + [u.describe() for u in self.unopened]

    def close(self) -> None:
        for d in self.drivers:
            d.close()


class Turns:
    """At most `at_once` holders at a time, the others served in the order they came: a turn given back
    goes to the one that has waited longest, never to a thread that asks again at once (a unit that
    finished a scenario does not take the next before the units still waiting for their first).

    A thread waiting here sleeps on its own lock until its turn is handed to it, at no cost; a thread
    waiting for the GIL wakes every 5 ms (sys.getswitchinterval()) to ask for it again."""

    def __init__(self, at_once: int):
        self._free = at_once
        self._mutex = threading.Lock()
        self._waiting: deque[threading.Lock] = deque()

    def ticket(self) -> threading.Lock:
        """A place in the line, taken now (possibly for another thread, in the order the threads are
        started): the turn is its holder's once wait(ticket) returns."""
        mine = threading.Lock()
        with self._mutex:
            if self._free and not self._waiting:
                self._free -= 1         # a turn free at once: the ticket is left open
            else:
                mine.acquire()          # released by the holder whose turn passes to it
                self._waiting.append(mine)
        return mine

    @staticmethod
    def wait(ticket: threading.Lock) -> None:
        ticket.acquire()

    def give_back(self) -> None:
        """The turn handed to the longest waiting, else kept free."""
        with self._mutex:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._free += 1

    def __enter__(self) -> None:
        self.wait(self.ticket())

    def __exit__(self, *exc) -> None:
        self.give_back()


class Workers(Generic[T, R]):
    """Runs work(worker, item) for every item, on the workers of the item's kind, one thread each.

    Results keep the items' order; an item no worker can take gets unrunnable(item), and one whose
    work raised gets failed(item, exception), so one unit's trouble never loses the others' results.
    At most RACING_AT_ONCE items are worked on at a time (Turns; a turn lasts one item): with more units
    than that, the others wait for a turn, and each unit has had one, in the rack's order, before any
    has a second."""

    def __init__(self, workers: dict[str, list], kind_of: Callable[[T], str], name_of: Callable[[object], str] = str,
                 retired: Callable[[object], bool] = lambda worker: False, at_once: int | None = None):
        self.workers = workers
        self.kind_of = kind_of
        self.name_of = name_of          # a worker's thread name
        self.turns = Turns(RACING_AT_ONCE if at_once is None else at_once)
        # a worker that can do no more (its unit was replaced by another) leaves the rest to the others of its
        # kind; the last of them takes every item still queued, so none is lost
        self.retired = retired

    def run(self, items: list[T], work: Callable[[object, T], R], unrunnable: Callable[[T], R],
            failed: Callable[[T, Exception], R]) -> list[R]:
        results: list = [None] * len(items)
        queues: dict[str, queue.SimpleQueue] = {}
        for i, item in enumerate(items):
            kind = self.kind_of(item)
            if self.workers.get(kind):
                queues.setdefault(kind, queue.SimpleQueue()).put(i)
            else:
                results[i] = unrunnable(item)

        turns = self.turns

        def next_item(worker, q: queue.SimpleQueue, kind: str) -> int | None:
            if self.retired(worker) and not all(map(self.retired, self.workers[kind])):
                return None
            try:
                return q.get_nowait()
            except queue.Empty:
                return None

        def serve(worker, q: queue.SimpleQueue, kind: str, turn: threading.Lock, i: int | None) -> None:
            while True:
                turns.wait(turn)
                try:
                    if i is None:
                        return
                    try:
                        results[i] = work(worker, items[i])
                    except Exception as exc:
                        results[i] = failed(items[i], exc)
                finally:
                    turns.give_back()
                # the next item is taken before the turn is waited for: a unit holds one while it waits,
                # so one that finishes fast never takes the items of the units in line before it
                i = next_item(worker, q, kind)
                turn = turns.ticket()

        # each unit's first item and its place in the line are taken here, in the rack's order
        threads = [threading.Thread(target=serve, args=(w, q, kind, turns.ticket(), next_item(w, q, kind)),
                                    name=self.name_of(w), daemon=True)
                   for kind, q in queues.items() for w in self.workers[kind]]
        if len(threads) == 1:
            threads[0].run()        # one unit: in this thread, so a Ctrl-C lands where it is
        else:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return results
