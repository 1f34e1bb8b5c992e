"""Device pools: each process claims devices for itself, never sharing one.

Every device is opened through open_link, which claims the unit for this process for as long
as it is held (harness/links/claim.py: on one host, by its address and by its identity, kind
and serial; across hosts, labgrid's coordinator). Two pytest workers, or a worker and an
`unohil run`, therefore never drive the same unit: a process that finds every device of a kind
claimed waits up to `wait_s`, then fails saying who holds them.
"""
from __future__ import annotations

import os
import time
from typing import Callable

from unohil.harness.errors import DeviceBusy, PoolExhausted
from unohil.harness.links import claim
from unohil.harness.session.driver import Driver

RETRY_S = 0.2


def unserved_reason(kind: str) -> str:
    """Why a scenario (or a test) for a unit of this kind is skipped when no device of it was given: `unohil
    run` and the pytest plugin say the same."""
    return f"no {kind} device given"


class DevicePool:
    def __init__(self, urls: list[str], *, trace_dir=None, wait_s: float = 0.0, owner: str = "",
                 open_unit: Callable[[str], Driver] | None = None):
        """open_unit: how a device's URL is opened, when not as a unit driven directly (rig mode: through the
        rig wired to the one device of urls, harness/rig/links.py)."""
        self.urls = list(urls)
        self.open_unit = open_unit
        self.trace_dir = trace_dir
        self.wait_s = wait_s
        self.owner = owner or f"pid {os.getpid()}"
        self.held: dict[str, Driver] = {}         # url -> driver
        self._private: dict[str, Driver] = {}     # kind -> emulator of our own (no URLs given)

    def get(self, kind: str) -> Driver:
        """A connected driver of this kind, claimed for this process."""
        if not self.urls:
            d = self._private.get(kind)
            if d is None:
                d = self._private[kind] = Driver.open(f"emu://{kind}?clock=virtual", trace_dir=self.trace_dir)
            return d
        deadline = time.monotonic() + self.wait_s
        while True:
            for d in self.held.values():
                if d.kind == kind:
                    return d
            free = [url for url in self.urls if url not in self.held]
            busy: list[str] = []
            for url in free:
                # one URL left: wait on it (a labgrid reservation keeps its place in the queue); several:
                # try each in turn, so whichever comes free first is taken
                left = max(0.0, deadline - time.monotonic()) if len(free) == 1 else 0.0
                try:
                    with claim.waiting(left):
                        d = self._open(url)
                except DeviceBusy as exc:
                    busy.append(str(exc))
                    continue
                self.held[url] = d
                if d.kind == kind:
                    return d
            kinds = {u: d.kind for u, d in self.held.items()}
            if not busy:
                raise PoolExhausted(f"no {kind} device in the pool ({', '.join(f'{u}: {k}' for u, k in kinds.items())})")
            if time.monotonic() >= deadline:
                raise PoolExhausted(
                    f"{self.owner}: every {kind} device in the pool is claimed by another process: "
                    + "; ".join(busy) + ". Give as many devices as workers (-n), or --hil-wait SECONDS")
            time.sleep(RETRY_S)

    def lacks(self, kind: str) -> bool:
        """Every device given is open here and none is of this kind: no wait brings one (a device that another
        process holds is not known to lack it)."""
        return bool(self.urls) and len(self.held) == len(self.urls) and all(d.kind != kind for d in self.held.values())

    def _open(self, url: str) -> Driver:
        if self.open_unit is None:
            return Driver.open(url, trace_dir=self.trace_dir)
        return self.open_unit(url)

    def close(self) -> None:
        for d in list(self.held.values()) + list(self._private.values()):
            d.close()
        self.held.clear()
        self._private.clear()
