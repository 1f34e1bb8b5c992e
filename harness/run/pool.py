"""Device pools: each process claims devices for itself, never sharing one.

A claim is an exclusive lock on a file named after the device URL in the system's
temporary directory, held for as long as the process uses the device. Two pytest
workers (or two harness runs on one host) therefore never drive the same unit;
a process that finds every device of a kind claimed waits up to `wait_s`, then
fails saying so.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from pathlib import Path

from harness.session.driver import Driver
from harness.errors import PoolExhausted



LOCK_DIR = Path(tempfile.gettempdir()) / "unohil-locks"


class DevicePool:
    def __init__(self, urls: list[str], *, trace_dir=None, wait_s: float = 0.0, owner: str = ""):
        self.urls = list(urls)
        self.trace_dir = trace_dir
        self.wait_s = wait_s
        self.owner = owner or f"pid {os.getpid()}"
        self.held: dict[str, Driver] = {}         # url -> driver
        self._locks: dict[str, int] = {}
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
            busy = []
            for url in self.urls:
                if url in self.held:
                    continue
                if not self._lock(url):
                    busy.append(url)
                    continue
                try:
                    d = Driver.open(url, trace_dir=self.trace_dir)
                except BaseException:
                    self._unlock(url)
                    raise
                self.held[url] = d
                if d.kind == kind:
                    return d
            kinds = {u: d.kind for u, d in self.held.items()}
            if not busy:
                raise PoolExhausted(f"no {kind} device in the pool ({', '.join(f'{u}: {k}' for u, k in kinds.items())})")
            if time.monotonic() >= deadline:
                raise PoolExhausted(
                    f"{self.owner}: every {kind} device in the pool is claimed by another worker "
                    f"({', '.join(busy)}); give as many --device URLs as workers (-n), or --hil-wait SECONDS")
            time.sleep(0.2)

    def _lock(self, url: str) -> bool:
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        path = LOCK_DIR / (hashlib.sha1(url.encode()).hexdigest()[:16] + ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{url}\n{self.owner}\n".encode())
        self._locks[url] = fd
        return True

    def _unlock(self, url: str) -> None:
        fd = self._locks.pop(url, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for d in list(self.held.values()) + list(self._private.values()):
            d.close()
        self.held.clear()
        self._private.clear()
        for url in list(self._locks):
            self._unlock(url)
