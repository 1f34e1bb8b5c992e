"""Device-to-host clock mapping from NTP-style exchanges.

Each TIME_SYNC exchange gives four times: t1 (host send), t2 (device receive),
t3 (device reply), t4 (host read). Its round trip is (t4 - t1) - (t3 - t2); the
device's midpoint (t2 + t3) / 2 happened at host time (t1 + t4) / 2 give or take
half that round trip. Only the exchanges with the smallest round trips are kept
(queueing only ever adds delay), and a line host = a + b * device is fitted
through them, so drift is tracked as well as offset.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SyncSample:
    t1: int        # host µs
    t2: int        # device µs, unwrapped
    t3: int
    t4: int

    @property
    def rtt(self) -> int:
        return (self.t4 - self.t1) - (self.t3 - self.t2)

    @property
    def host_mid(self) -> float:
        return (self.t1 + self.t4) / 2

    @property
    def dev_mid(self) -> float:
        return (self.t2 + self.t3) / 2


@dataclass(frozen=True)
class ClockEstimate:
    offset_us: float        # host - device at dev_ref
    drift_ppm: float        # how much faster the host clock runs than the device's, in ppm
    dev_ref: float
    uncertainty_us: float   # half the best round trip plus the fit's worst residual
    samples: int
    best_rtt_us: int

    def to_host(self, dev_us: int | float) -> float:
        return dev_us + self.offset_us + (dev_us - self.dev_ref) * self.drift_ppm * 1e-6

    def to_device(self, host_us: int | float) -> float:
        return (host_us - self.offset_us + self.dev_ref * self.drift_ppm * 1e-6) / (1 + self.drift_ppm * 1e-6)

    def as_dict(self) -> dict:
        return {"offset_us": self.offset_us, "drift_ppm": self.drift_ppm, "uncertainty_us": self.uncertainty_us,
                "samples": self.samples, "best_rtt_us": self.best_rtt_us}


class ClockSync:
    """Keeps the last `window` exchanges and fits those within a slack of the best round trip."""

    def __init__(self, window: int = 64, rtt_slack_us: int = 20, min_span_for_drift_us: int = 2_000_000):
        self.window = window
        self.rtt_slack_us = rtt_slack_us
        self.min_span_for_drift_us = min_span_for_drift_us
        self.samples: list[SyncSample] = []
        self.estimate: ClockEstimate | None = None
        # whether a sync has ended (sync_clock made its exchanges) since the last reset: the estimate of a
        # sync's first exchange alone may rest on one slow round trip
        self.settled = False

    def reset(self) -> None:
        self.samples.clear()
        self.estimate = None
        self.settled = False

    def add(self, sample: SyncSample) -> ClockEstimate:
        if sample.rtt < 0:
            # Device time ran backwards relative to host time: a reset or a bad reply; do not trust it.
            return self.estimate  # type: ignore[return-value]
        self.samples.append(sample)
        if len(self.samples) > self.window:
            del self.samples[0]
        self.estimate = self._fit()
        return self.estimate

    def _fit(self) -> ClockEstimate:
        best_rtt = min(s.rtt for s in self.samples)
        # Keep every exchange close to the best round trip, wherever it lies in time, so the
        # fit spans the whole window (drift needs a span) without the queueing-delayed ones.
        limit = best_rtt + max(best_rtt // 2, self.rtt_slack_us)
        best = [s for s in self.samples if s.rtt <= limit]
        xs = [s.dev_mid for s in best]
        ys = [s.host_mid - s.dev_mid for s in best]
        x0 = sum(xs) / len(xs)
        y0 = sum(ys) / len(ys)
        sxx = sum((x - x0) ** 2 for x in xs)
        span = max(xs) - min(xs)
        slope = 0.0
        if len(best) >= 3 and span >= self.min_span_for_drift_us and sxx > 0:
            slope = sum((x - x0) * (y - y0) for x, y in zip(xs, ys)) / sxx
        resid = max(abs((y0 + slope * (x - x0)) - y) for x, y in zip(xs, ys))
        return ClockEstimate(offset_us=y0, drift_ppm=slope * 1e6, dev_ref=x0,
                             uncertainty_us=best_rtt / 2 + resid, samples=len(self.samples), best_rtt_us=best_rtt)
