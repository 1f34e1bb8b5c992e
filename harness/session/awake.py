"""Staying awake for a frame the harness expects, so the waiting code has it soon after the read.

The waiting thread reads the link itself (no reader thread, no hand-off), yet after a blocking read
wakes it, the Python from the read to the waiter (the read's return, decoding, the event's
sequencing, the predicate) runs with caches its neighbours filled while it slept: measured on the
2-core VM, ~25-30 us against ~5 us warm. The harness often knows when a frame will come: it
scheduled a stimulus at a device time (the unit's events come at it), or a caller says so
(wait_for's expect_at_us). For such a window, the wait

  1. blocks, as any wait does, until LEAD_US before the expected time;
  2. rehearses: a throwaway driver reads a copy of the latest bytes read and waits for them as the
     real one does (driver.py, _rehearse), so the code from the read to the waiter is in the caches
     when the frame comes;
  3. polls the link (a read that does not block, then a yield of the core: the frame's sender may be
     a process on this host waiting for it) until the frame comes or the window ends, rehearsing
     again every REHEARSE_EVERY polls while twice a recent rehearsal's time is left before the
     expected time (a frame that comes during one waits for its end); after the window, a wait
     blocks again.

The cost is CPU: the window's length in polling, bounded by MAX_WINDOW_US per expectation;
`polled_us` counts it. It is off unless a driver is opened with stay_awake=True: on the shared
2-core VM it brought frames to the waiter 5-7 us sooner for ~0.25 ms of CPU each, short of the
10 us it was for (docs/performance.md, "The waiter and the command round trip"). A command's reply
is never polled for: polling made round trips to a unit on the same host slower. A virtual link
never polls: its clock stands still while nobody reads.
"""
from __future__ import annotations

import os
from collections import deque

from unohil.protocol import StreamDecoder

LEAD_US = 200           # wake this long before the expected time: the clock's and the host's slack
TAIL_US = 1_000         # ... and stay awake this long after it: the unit's processing and the link
MAX_WINDOW_US = 3_000   # no expectation keeps a wait polling longer than this
REHEARSE_EVERY = 16     # polls between rehearsals while awake (a poll is a select and a read)
SAMPLE_BYTES = 64       # the latest read kept for rehearsals: one frame at most


class Awake:
    """The window in which a driver's waits poll instead of blocking, and what they spent in it."""

    __slots__ = ("enabled", "replay", "from_us", "at_us", "until_us", "_sample", "_took", "windows", "polls",
                 "caught", "rehearsals", "polled_us")

    def __init__(self) -> None:
        self.enabled = False        # True: expectations open windows (Driver(stay_awake=True))
        self.replay = None          # replay(data): the bytes through a throwaway copy of the path (else decoded)
        self.from_us = 0
        self.at_us = 0              # when the frame is expected
        self.until_us = 0           # 0: no frame expected
        self._sample = b""
        self._took = deque([0], maxlen=8)   # how long the recent rehearsals took (us)
        self.windows = 0            # expectations set
        self.polls = 0              # reads that did not block, made while awake
        self.caught = 0             # reads that returned bytes while awake
        self.rehearsals = 0
        self.polled_us = 0          # host time spent polling: the CPU the windows cost

    def expect(self, at_us: int, lead_us: int = LEAD_US, tail_us: int = TAIL_US) -> None:
        """A frame is expected at host time at_us: stay awake from lead_us before it to tail_us after it
        (at most MAX_WINDOW_US in all). An earlier window still open is widened, never narrowed."""
        if not self.enabled:
            return
        start, end = at_us - lead_us, at_us + tail_us
        if end - start > MAX_WINDOW_US:         # around the expected time, at most MAX_WINDOW_US long
            start = max(start, at_us - MAX_WINDOW_US // 2)
            end = start + MAX_WINDOW_US
        if self.until_us:
            start, end, at_us = min(start, self.from_us), max(end, self.until_us), min(at_us, self.at_us)
        self.from_us, self.at_us, self.until_us = start, at_us, end
        self.windows += 1

    def clear(self) -> None:
        self.until_us = 0

    def keep(self, data: bytes) -> None:
        """The latest bytes read, as the material of the next rehearsal."""
        if len(data) <= SAMPLE_BYTES:
            self._sample = data

    def rehearse(self, link) -> int:
        """Run the path a frame takes on a copy of the latest bytes, if a rehearsal fits before the expected
        time. Returns the time after it."""
        now = link.now_us()
        took = self._took
        if not self._sample or self.at_us - now <= 2 * sorted(took)[len(took) // 2]:
            return now
        if self.replay is not None:
            self.replay(self._sample)
        else:
            StreamDecoder().feed(self._sample, 0)
        self.rehearsals += 1
        after = link.now_us()
        took.append(after - now)
        return after

    def read(self, link, deadline_us: int) -> tuple[bytes, int]:
        """A read of the link for a wait until deadline_us while a frame is expected: blocking until the
        window opens, then polling until bytes come, the window closes or the deadline passes."""
        now = link.now_us()
        if now >= self.until_us:
            self.until_us = 0
            return link.read(max(0, deadline_us - now))
        if now < self.from_us:
            data, now = link.read(min(self.from_us, deadline_us) - now)
            if data or now >= deadline_us:
                return data, now
        end = min(self.until_us, deadline_us)
        began = now
        polls = 0
        try:
            while True:
                if polls % REHEARSE_EVERY == 0:
                    self.rehearse(link)
                data, now = link.read(0)
                polls += 1
                if not data:
                    # the frame's sender may be a process on this host waiting for this very core: measured
                    # without the yield, most frames came only once the window had closed
                    os.sched_yield()
                if data:
                    self.caught += 1
                    return data, now
                if now >= end:
                    if now >= self.until_us:
                        self.until_us = 0
                    return data, now
        finally:
            self.polls += polls
            self.polled_us += now - began


class ReplayLink:
    """The link of a throwaway driver that rehearses: it reads the bytes given to it once, then nothing.
    Virtual, so that driver never stays awake itself."""

    virtual = True
    url = "rehearsal"

    def __init__(self) -> None:
        self.data = b""

    def now_us(self) -> int:
        return 0

    def read(self, timeout_us: int) -> tuple[bytes, int]:
        data, self.data = self.data, b""
        return data, 0

    def write(self, data: bytes) -> None:
        pass            # an EVENT_RESEND a gap in the replay asks for goes nowhere

    def close(self) -> None:
        pass
