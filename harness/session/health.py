"""Link-health counters: what the link did to the bytes, for every run's summary."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LinkHealth:
    frames_rx: int = 0
    frames_tx: int = 0
    bytes_rx: int = 0
    bytes_dropped: int = 0
    bad_frames: int = 0
    crc_errors: int = 0
    frames_missed: int = 0       # gaps in the device's header sequence numbers (any frame type)
    gaps_detected: int = 0       # gaps in event sequence numbers
    events_recovered: int = 0
    events_lost: int = 0         # gaps that EVENT_RESEND could not fill
    duplicates: int = 0
    resets: int = 0
    naks_unattributed: int = 0   # the device saw a corrupt frame from us
    retries: int = 0

    # vars() rather than dataclasses.asdict: these run twice per race and asdict deep-copies.
    def as_dict(self) -> dict:
        return dict(vars(self))

    def add(self, other: "LinkHealth") -> None:
        for k, v in vars(other).items():
            setattr(self, k, getattr(self, k) + v)

    def minus(self, earlier: "LinkHealth") -> "LinkHealth":
        e = vars(earlier)
        return LinkHealth(**{k: v - e[k] for k, v in vars(self).items()})

    def copy(self) -> "LinkHealth":
        return LinkHealth(**vars(self))
