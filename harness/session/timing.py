"""The one place that knows how slow a link is: how long a reply is waited for, how far ahead a scheduled
stimulus is sent, how long after a reply the rest of its burst may still be on its way.

Everything is derived from SPEC 4.3 (a unit replies within 50 ms) and from what the link has shown: the round
trips of the commands it carried (write to reply, queueing behind earlier output included), how far apart the
frames of one burst arrived (a TCP bridge without TCP_NODELAY, a slow adapter), the byte time where the baud
rate is known (serial, RFC 2217, an emulated slow line: 10 bits a byte, 8N1) and USB's 1 ms frames. A link
that has shown nothing yet (the first HELLO) gets UNMEASURED_US on top of the SPEC's 50 ms; a real-clock one
HOST_SLACK_US more, for the host's own scheduling.
"""
from __future__ import annotations

from collections import deque

SPEC_REPLY_US = 50_000      # SPEC 4.3: a unit MUST reply within 50 ms of the command's delimiter
UNIT_BURST_US = 20_000      # what a unit may take to send the events a command causes after its reply
USB_FRAME_US = 1000         # full-speed USB: the host controller moves data in 1 ms frames, each way
UNMEASURED_US = 450_000     # a link nothing was timed on yet: room for an unknown adapter's round trip
MARGIN_US = 1000            # the host's own turnaround between deciding and writing
# A host process on a loaded machine (a CI runner, a box shared by many) can be off the CPU this long between a
# reply's arrival and its read; on the virtual clock it never is
HOST_SLACK_US = 200_000
MAX_FRAME_BYTES = 64        # 63 encoded bytes and the delimiter (SPEC 2.4)
INJECT_BYTES = 19           # an INJECT on the wire: 14 bytes decoded, COBS and the delimiter
WINDOW = 32                 # the latest measurements kept: a link's character may change (a stall, a queue)


class LinkTiming:
    """What a link has shown, and the waits and leads derived from it."""

    def __init__(self, baud: int | None = None, usb: bool = False, virtual: bool = True):
        self.baud = baud
        self.usb = usb
        self.host_slack_us = 0 if virtual else HOST_SLACK_US
        self.round_trips: deque[int] = deque(maxlen=WINDOW)     # us from a command's write to its reply
        # us a frame of a burst came after its reply, beyond what the unit's own stamps say
        self.spreads: deque[int] = deque(maxlen=WINDOW)
        self._reply_timeout_us: int | None = None   # reply_timeout_us() until the next round trip: asked twice a command

    def observe_reply(self, us: int) -> None:
        self.round_trips.append(max(0, int(us)))
        self._reply_timeout_us = None

    def observe_spread(self, us: int) -> None:
        self.spreads.append(max(0, int(us)))

    def bytes_us(self, n: int) -> int:
        """How long n bytes take on the wire (0 where the baud rate is not known)."""
        return -(-n * 10_000_000 // self.baud) if self.baud else 0

    @property
    def measured(self) -> bool:
        return bool(self.round_trips)

    def worst_round_trip_us(self) -> int:
        return max(self.round_trips, default=0)

    def jitter_us(self) -> int:
        """How much the round trips varied: a later one may be that much slower than the worst seen."""
        rt = self.round_trips
        return max(rt) - min(rt) if rt else 0

    def _usb_us(self) -> int:
        return 2 * USB_FRAME_US if self.usb else 0

    def reply_timeout_us(self) -> int:
        """How long a reply is waited for: the SPEC's 50 ms, the command and a longest reply on the wire, the
        link's worst round trip and jitter (or UNMEASURED_US before any) and, on a real clock, the host's slack."""
        if self._reply_timeout_us is None:
            link = self.worst_round_trip_us() + self.jitter_us() if self.measured else UNMEASURED_US
            self._reply_timeout_us = (SPEC_REPLY_US + self.bytes_us(2 * MAX_FRAME_BYTES) + self._usb_us() + link
                                      + self.host_slack_us + MARGIN_US)
        return self._reply_timeout_us

    def stimulus_lead_us(self, clock_uncertainty_us: float = 0.0) -> int:
        """How far ahead of the unit's now a stimulus is sent: the link's worst round trip and its jitter
        (a reply queued behind earlier output shows it), the INJECT's own bytes, USB's frames, the clock's
        uncertainty both ways and a margin."""
        return (self.worst_round_trip_us() + self.jitter_us() + self.bytes_us(INJECT_BYTES) + self._usb_us()
                + 2 * int(clock_uncertainty_us) + MARGIN_US)

    def late_us(self) -> int:
        """How much later than its burst's first frame a frame may arrive: the worst spread seen plus how much
        the spreads varied, a few frames on the wire and USB's frames."""
        s = self.spreads
        spread = max(s) + (max(s) - min(s)) if s else 0
        return spread + self.bytes_us(4 * MAX_FRAME_BYTES) + self._usb_us()

    def burst_us(self) -> int:
        """How long after a reply the rest of its burst may still come: what the unit itself may take to send
        it, and how late the link has delivered such frames."""
        return UNIT_BURST_US + self.late_us()

    def describe(self) -> dict:
        return {"reply_timeout_us": self.reply_timeout_us(), "stimulus_lead_us": self.stimulus_lead_us(),
                "burst_us": self.burst_us(), "worst_round_trip_us": self.worst_round_trip_us(),
                "jitter_us": self.jitter_us(), "baud": self.baud, "usb": self.usb}


def link_timing(link) -> LinkTiming:
    """A LinkTiming for a link, with what the link says of itself: its baud rate (serial, RFC 2217, an
    emulated slow line) and whether it is USB."""
    return LinkTiming(baud=getattr(link, "baud", None), usb=bool(getattr(link, "usb", False)),
                      virtual=bool(getattr(link, "virtual", False)))
