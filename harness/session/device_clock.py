"""The driver's view of the unit's clock: TIME_SYNC exchanges to map device time to host time, the
device's now, and the leads a stimulus needs over this link. A part of Driver (driver.py)."""
from __future__ import annotations

from unohil.protocol import Frame, devtime
from unohil.protocol import msg as M

from unohil.harness.errors import CommandTimeout, LinkError
from unohil.harness.session.clocksync import ClockEstimate, SyncSample


class DeviceClock:
    """The clock of a Driver (mixed into it)."""

    def now_us(self) -> int:
        return self.link.now_us()

    def sync_clock(self, exchanges: int = 8, deadline_us: int | None = None) -> ClockEstimate:
        """Add `exchanges` samples to the clock mapping. An exchange that gets no answer (its retries
        spent) is skipped and the good samples kept: only a deadline (HANDSHAKE_BUDGET_US from now
        by default) that passes without a single good sample is an error."""
        if deadline_us is None:
            deadline_us = self.link.now_us() + self.HANDSHAKE_BUDGET_US
        exchange = self._sync_exchange if self.has_cap("time_sync") else self._status_exchange
        done = 0
        while done < exchanges:
            try:
                exchange()
                done += 1
            except CommandTimeout:
                if self.link.now_us() < deadline_us:
                    continue
                if self.clock.estimate is None:
                    raise
                break
        if self.clock.estimate is None:
            # every exchange was refused by the fit: the unit counted more time between request and reply
            # than the host's whole round trip (a clock not running at host rate, e.g. QEMU's -icount)
            raise LinkError(f"{self.url}: no usable clock sync: in each of {exchanges} exchanges the unit's clock "
                            f"advanced more than the host's round trip; its time does not run at host rate")
        self.clock.settled = True
        return self.clock.estimate

    def _timed(self, make) -> tuple[int, Frame]:
        """(host send time, reply) of a command made by make(t1). Each try is sent afresh with its own send
        time: a retry's reply timed from the first try would count that try's timeout into the round trip
        and shift the clock mapping by half of it (seconds, once every exchange of a sync needed a retry)."""
        for attempt in range(3):
            t1 = self.link.now_us()
            try:
                return t1, self.command(make(t1), retries=0)
            except CommandTimeout:
                if attempt == 2:
                    raise
                self.health.retries += 1
        raise AssertionError("unreachable")

    def _sync_exchange(self) -> None:
        t1, reply = self._timed(lambda t1: M.TIME_SYNC(t1_host_us=t1))
        m = reply.msg
        if m.t1_host_us != t1:
            return      # the answer to another exchange (a duplicate, a retry's): not a sample
        t3 = reply.dev_us
        t2 = t3 - devtime.diff(m.t3_us, m.t2_us)
        self.clock.add(SyncSample(t1, t2, t3, reply.host_us))

    def _status_exchange(self) -> None:
        """For a unit without TIME_SYNC (an optional capability): a reply's header time is a device
        time between its command's arrival and the reply's departure (SPEC 3), so STATUS_GET round
        trips bound the offset as TIME_SYNC's do, with the unit's turnaround inside the round trip."""
        t1, reply = self._timed(lambda t1: M.STATUS_GET())
        self.clock.add(SyncSample(t1, reply.dev_us, reply.dev_us, reply.host_us))

    def device_now(self) -> int:
        """Best estimate of the device's unwrapped time now."""
        if self.clock.estimate is None:
            self.sync_clock()
        return int(self.clock.estimate.to_device(self.link.now_us()))

    def transit_margin_us(self) -> int:
        """How long after the host time of a device time its events may still be on their way: what
        wait_until waits beyond it on a real link (0 on a virtual one, whose reads are exact)."""
        if self.link.virtual:
            return 0
        est = self.clock.estimate or self.sync_clock()
        return 2000 + int(2 * est.uncertainty_us) + est.best_rtt_us + self.timing.late_us()

    def stimulus_lead_us(self) -> int:
        """How far ahead of the device's now a stimulus must be sent to get there in time (session/timing.py:
        the link's measured round trips and jitter, its byte time, USB frames, the clock's uncertainty)."""
        est = self.clock.estimate or self.sync_clock()
        return self.timing.stimulus_lead_us(est.uncertainty_us)

    def stimulus_placement_us(self) -> int:
        """How far from its scheduled device time a scheduled stimulus may land: 0, an INJECT lands on its
        exact microsecond (SPEC 4.8)."""
        return 0
