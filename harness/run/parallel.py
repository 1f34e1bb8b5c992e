"""A rack of connected units, and running work on it: one thread per unit, each taking the next item
its kind can run, so the units of a rack work side by side."""
from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, TypeVar
from urllib.parse import urlsplit

from unohil.protocol import catalogue as cat

from unohil.harness.errors import HarnessError
from unohil.harness.session.driver import Driver
from unohil.harness.session.health import LinkHealth

OPENING_AT_ONCE = 32        # units opened side by side by Rack.open

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


class Workers(Generic[T, R]):
    """Runs work(worker, item) for every item, on the workers of the item's kind, one thread each.

    Results keep the items' order; an item no worker can take gets unrunnable(item), and one whose
    work raised gets failed(item, exception), so one unit's trouble never loses the others' results."""

    def __init__(self, workers: dict[str, list], kind_of: Callable[[T], str], name_of: Callable[[object], str] = str,
                 retired: Callable[[object], bool] = lambda worker: False):
        self.workers = workers
        self.kind_of = kind_of
        self.name_of = name_of          # a worker's thread name
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

        def serve(worker, q: queue.SimpleQueue, kind: str) -> None:
            while True:
                if self.retired(worker) and not all(map(self.retired, self.workers[kind])):
                    return
                try:
                    i = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[i] = work(worker, items[i])
                except Exception as exc:
                    results[i] = failed(items[i], exc)

        threads = [threading.Thread(target=serve, args=(w, q, kind), name=self.name_of(w), daemon=True)
                   for kind, q in queues.items() for w in self.workers[kind]]
        if len(threads) == 1:
            threads[0].run()        # one unit: in this thread, so a Ctrl-C lands where it is
        else:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return results
