"""The raw floor of a pty: what the same kind of link costs with no protocol at all.

python -m unohil.harness.measure.link_floor paired RAW_FD FRAME_FD N INTERVAL_US
        N times, INTERVAL_US apart each: a 16-byte packet stamped with the time of its
        write on RAW_FD, then a protocol event frame (SD_BEEP, event_seq 0, 1, ...) on
        FRAME_FD; at the end, one line per frame: the monotonic us just before its write
python -m unohil.harness.measure.link_floor echo FD
        echo every byte read until EOF

The reader (the benchmark) blocks in os.read on one pty and in the harness's driver
on the other, turn about, so each floor sample and the harness sample after it see
the same machine. Both ends read the same CLOCK_MONOTONIC, so no clock sync is
needed. A frame cannot carry the time of its own write (encoding it comes after the
stamp, and right after a sleep that alone takes ~30 us on this VM), so the frame
write times are reported at the end.
"""
from __future__ import annotations

import os
import struct
import sys
import time

PACKET = struct.Struct("<Q8x")


def paired(raw_fd: int, frame_fd: int, n: int, interval_us: int) -> None:
    from unohil.protocol import encode, msg
    written = []
    for i in range(n):
        time.sleep(interval_us / 1e6)
        os.write(raw_fd, PACKET.pack(time.monotonic_ns() // 1000))
        time.sleep(interval_us / 1e6)
        data = encode(msg.SD_BEEP(event_seq=i & 0xFFFF, index=i & 0xFFFF), i & 0xFFFF, 0)
        written.append(time.monotonic_ns() // 1000)
        os.write(frame_fd, data)
    print("\n".join(map(str, written)))


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
    if mode == "paired":
        paired(fd, int(argv[2]), int(argv[3]), int(argv[4]))
    elif mode == "echo":
        echo(fd)
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
