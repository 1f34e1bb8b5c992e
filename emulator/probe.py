"""A minimal host for the emulator's own tests and measurements.

It speaks the protocol over any link with read(timeout_us) -> (bytes, host_us) and
write(bytes) (a VirtualLink, or SelectLink over a pty or socket), records every frame it
receives in order, and matches replies by cmd_seq. It is deliberately naive (no
time sync, no recovery): the harness is the real host, and harness.links.FdLink its
real link to a descriptor.
"""
from __future__ import annotations

import os
import select
import socket
import time

from unohil.protocol import Frame, FrameError, StreamDecoder, encode


class SelectLink:
    """A pty master/slave path or a socket, read with select; no more than the probe needs."""

    def __init__(self, fd: int | None = None, sock: socket.socket | None = None):
        self.sock = sock
        self.fd = sock.fileno() if sock is not None else fd

    @classmethod
    def open_path(cls, path: str) -> "SelectLink":
        import termios
        import tty
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(fd, termios.TCSANOW)     # TCSAFLUSH would discard what the unit already sent
        return cls(fd=fd)

    def now_us(self) -> int:
        return time.monotonic_ns() // 1000

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        ready, _, _ = select.select([self.fd], [], [], max(0, timeout_us) / 1e6)
        if not ready:
            return b"", self.now_us()
        data = self.sock.recv(4096) if self.sock is not None else os.read(self.fd, 4096)
        if not data:
            raise ConnectionError("the emulator closed the connection")
        return data, self.now_us()

    def write(self, data: bytes) -> None:
        if self.sock is not None:
            self.sock.sendall(data)
        else:
            os.write(self.fd, data)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        elif self.fd is not None:
            os.close(self.fd)
        self.fd = None


class Probe:
    def __init__(self, link):
        self.link = link
        self.decoder = StreamDecoder()
        self.seq = 0
        self.frames: list[Frame] = []
        self.errors: list[FrameError] = []
        self.raw = bytearray()             # every byte received, for determinism checks
        self.cursor = 0                    # frames before it were consumed by wait()

    def send(self, m, seq: int | None = None, time_us: int = 0) -> int:
        seq = self.seq if seq is None else seq
        self.seq = (seq + 1) & 0xFFFF
        self.link.write(encode(m, seq, time_us))
        return seq

    def read(self, timeout_us: int) -> list[Frame]:
        data, host_us = self.link.read(timeout_us)
        self.raw += data
        got = []
        for item in self.decoder.feed(data):
            if isinstance(item, FrameError):
                self.errors.append(item)
            else:
                item.host_us = host_us
                got.append(item)
        self.frames.extend(got)
        return got

    def wait(self, pred, timeout_us: int = 10_000_000, start: int | None = None) -> Frame:
        """The first frame from index start (default: the wait cursor) that satisfies pred, reading
        as needed; TimeoutError after timeout_us of link time. Moves the cursor past it."""
        deadline = self.link.now_us() + timeout_us
        i = self.cursor if start is None else start
        while True:
            while i < len(self.frames):
                f = self.frames[i]
                i += 1
                if pred(f):
                    if start is None:
                        self.cursor = i
                    return f
            left = deadline - self.link.now_us()
            if left < 0:
                raise TimeoutError(f"no matching frame within {timeout_us} us")
            self.read(left)
            if left == 0 and i == len(self.frames):
                raise TimeoutError(f"no matching frame within {timeout_us} us")

    def request(self, m, timeout_us: int = 1_000_000, **kw) -> Frame:
        """Send a command and return its reply (ACK, NAK or the typed reply)."""
        start = len(self.frames)
        seq = self.send(m, **kw)
        return self.wait(lambda f: f.msg.KIND == "reply" and f.msg.cmd_seq == seq, timeout_us, start=start)

    def wait_event(self, name: str, timeout_us: int = 10_000_000) -> Frame:
        return self.wait(lambda f: f.name == name, timeout_us)

    def run_for(self, duration_us: int) -> list[Frame]:
        """Read everything for duration_us of link time, what is due at exactly the end included."""
        end = self.link.now_us() + duration_us
        got: list[Frame] = []
        while (left := end - self.link.now_us()) >= 0:
            got += self.read(left)
            if left == 0:
                break
        return got

    def events(self, name: str | None = None) -> list[Frame]:
        return [f for f in self.frames if f.msg.KIND == "event" and (name is None or f.name == name)]
