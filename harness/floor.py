"""The raw floor of a pty: what the same kind of link costs with no protocol at all.

python -m harness.floor emit FD N INTERVAL_US   write N stamped 16-byte packets, one every INTERVAL_US
python -m harness.floor echo FD                  echo every byte read until EOF
python -m harness.floor frames FD N INTERVAL_US BASE_US
                                                 write N protocol event frames, each stamped
                                                 (header time = monotonic us - BASE_US) just
                                                 before its os.write

The writer stamps each packet with time.monotonic_ns() // 1000 just before os.write;
the reader (the benchmark) blocks in os.read and subtracts, so the one-way figure
needs no clock sync: both ends read the same CLOCK_MONOTONIC.
"""
from __future__ import annotations

import os
import struct
import sys
import time

PACKET = struct.Struct("<Q8x")


def emit(fd: int, n: int, interval_us: int) -> None:
    for _ in range(n):
        time.sleep(interval_us / 1e6)
        os.write(fd, PACKET.pack(time.monotonic_ns() // 1000))


def frames(fd: int, n: int, interval_us: int, base_us: int) -> None:
    from protocol import encode, msg
    for i in range(n):
        time.sleep(interval_us / 1e6)
        t = time.monotonic_ns() // 1000 - base_us
        os.write(fd, encode(msg.SD_BEEP(event_seq=i & 0xFFFF, index=i & 0xFFFF), i & 0xFFFF, t & 0xFFFFFFFF))


def echo(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            return
        if not data:
            return
        os.write(fd, data)


def main(argv: list[str]) -> int:
    mode, fd = argv[0], int(argv[1])
    if mode == "emit":
        emit(fd, int(argv[2]), int(argv[3]))
    elif mode == "echo":
        echo(fd)
    elif mode == "frames":
        frames(fd, int(argv[2]), int(argv[3]), int(argv[4]))
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
