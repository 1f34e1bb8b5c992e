"""Device time: a u32 microsecond counter that wraps every 2**32 us (71 min 34.967296 s)."""
from __future__ import annotations

WRAP = 1 << 32
HALF = 1 << 31


def wrap(t_us: int) -> int:
    """The u32 a device puts on the wire for an unwrapped time."""
    return t_us & 0xFFFFFFFF


def diff(a: int, b: int) -> int:
    """Signed a - b between two u32 device times, assuming they lie within half a wrap."""
    d = (a - b) & 0xFFFFFFFF
    return d - WRAP if d >= HALF else d


class Unwrapper:
    """Turns a stream of u32 device times into a monotonic-ish 64-bit timeline.

    Each raw value is placed within +/- half a wrap (35.8 min) of the latest time
    seen so far, so events re-sent out of order unwrap to their original time.
    """

    __slots__ = ("latest",)

    def __init__(self, start: int | None = None):
        self.latest: int | None = start

    def unwrap(self, raw: int) -> int:
        latest = self.latest
        if latest is None:
            self.latest = raw
            return raw
        d = (raw - latest) & 0xFFFFFFFF         # diff(raw, wrap(latest)), inlined: once per frame
        t = latest + (d - WRAP if d >= HALF else d)
        if t > latest:
            self.latest = t
        return t

    def reset(self, start: int | None = None) -> None:
        self.latest = start
