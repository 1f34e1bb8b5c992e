"""How the driver waits: for an event, until a device time, for the unit's last events to be confirmed
(STATUS), for a quiet link. Whoever waits reads the link itself in its own thread (no reader thread).
A part of Driver (driver.py)."""
from __future__ import annotations

from typing import Callable

from unohil.protocol import Frame

from unohil.harness.errors import CommandTimeout, LinkError, WaitTimeout
from unohil.harness.session.events import RESEND_TRIES


class Waiting:
    """The waits of a Driver (mixed into it)."""

    def wait_for(self, predicate: Callable[[Frame], bool], timeout_us: int, what: str,
                 collect: list | None = None, probe: bool = True, expect_at_us: int | None = None) -> Frame:
        """Consume events in order until one satisfies predicate.

        Events consumed on the way are appended to collect (when given); all stay
        in history. On timeout the device is asked for its event count once, so a
        lost trailing event (a verdict, say) is recovered rather than missed.
        expect_at_us: the host time the caller expects a frame at; the wait stays awake
        for it (session/awake.py), as it does for the stimuli this session scheduled.
        """
        deadline = self.link.now_us() + timeout_us
        probed = not probe
        if expect_at_us is not None:
            self.expect_frame(expect_at_us)
        awake, stimuli = self.awake, self._injected
        while True:
            inbox = self.inbox
            while inbox:
                f = inbox.popleft()
                if collect is not None:
                    collect.append(f)
                if predicate(f):
                    return f
            self._raise_if_reset()
            self._check_recovery()
            if stimuli and awake.enabled and not awake.until_us:
                self._expect_stimuli()
            # While a resend is outstanding, wake at its deadline too, to ask again in time.
            r = self.events.resend
            if self._pump(deadline if r is None else min(deadline, r.deadline)) or self.link.now_us() < deadline:
                continue
            if self.events.resend is not None:
                deadline = self.link.now_us() + self.command_timeout_us
                continue
            if not probed:
                # Ask how far the device got: a lost event is recovered, and one held up on the link
                # arrives ahead of the reply (a line does not reorder) and is looked at before giving up.
                probed = True
                if self._probe_trailing_gap():
                    deadline = self.link.now_us() + self.command_timeout_us
                continue
            raise WaitTimeout(f"{self.url}: no {what} within {timeout_us} us")

    def _probe_trailing_gap(self) -> bool:
        """True if the device has sent events we never saw (and recovery has started)."""
        try:
            st = self.status()
        except LinkError:
            return False
        ev = self.events
        missing = ev.missing_until(st.next_event_seq)
        if not missing:
            return False
        if ev.resend is None:
            ev.request(ev.next, missing, self.link.now_us())
        return True

    def confirm_events(self, collect: list | None = None) -> None:
        """Make sure every event the device has sent so far has been received (into collect).

        A lost event is found by the gap it leaves before the next one; a lost last event
        leaves none, so ask the device how far it has got (STATUS) and recover the rest.
        Events that cannot be recovered are counted in health.events_lost. Raises
        DeviceReset if the device rebooted."""
        self.catch_up()
        if collect is not None:
            collect.extend(self.inbox)
        self.inbox.clear()

    def catch_up(self, asks: int = 3):
        """Fetch back everything the unit says it has sent: its event count (STATUS, asked up to
        `asks` times, each with its retries, since a race is judged on the answer) and every event
        before it (EVENT_RESEND, retried). Returns the STATUS; what could not be fetched back is in
        health.events_lost and events.lost. Raises CommandTimeout when STATUS never comes back,
        DeviceReset when the unit rebooted."""
        self._raise_if_reset()
        for ask in range(asks):
            try:
                st = self.status()
                break
            except CommandTimeout:
                if ask == asks - 1:
                    raise
        self._raise_if_reset()
        self._events_until(st.next_event_seq)
        self._raise_if_reset()
        return st

    def wait_until(self, dev_us: int, collect: list | None = None, margin_us: int | None = None) -> None:
        """Return once every event up to device time dev_us has been received (into collect).

        On a virtual link that is exact: the clock stops at dev_us and all output
        due then is read. On a real link the wait lasts until the mapped host time
        plus a margin for the link's transit time.
        """
        est = self.clock.estimate
        if est is None:
            est = self.sync_clock()
        if self.link.virtual:
            target = round(est.to_host(dev_us))
        else:
            target = est.to_host(dev_us) + (self.transit_margin_us() if margin_us is None else margin_us)
        while self.link.now_us() < target:
            self._raise_if_reset()
            self._check_recovery()
            self._pump(self._resend_deadline(int(target)))
        # what has arrived by then is read too: on a virtual link all output due at dev_us; on a real one a
        # target already past (another device was waited for first) waits for nothing, but events up to
        # dev_us may be sitting in the link's buffer
        while self._pump(self.link.now_us()):
            pass
        self._raise_if_reset()
        if collect is not None:
            collect.extend(self.inbox)
        self.inbox.clear()

    def drain(self, quiet_us: int = 0) -> list[Frame]:
        """Everything that arrives until the link is quiet for quiet_us; the inbox is emptied."""
        while self._pump(self.link.now_us() + quiet_us):
            pass
        out = list(self.inbox)
        self.inbox.clear()
        return out

    def _events_until(self, next_seq: int) -> bool:
        """Receive (recovering gaps) every event before next_seq. False if some are lost."""
        lost = self.health.events_lost
        ev = self.events
        deadline = self.link.now_us() + (RESEND_TRIES + 1) * self.command_timeout_us
        while True:
            if ev.next is None or self._reset is not None or self.health.events_lost != lost:
                return False
            missing = ev.missing_until(next_seq)
            if not missing:
                return True
            if ev.resend is None:
                ev.request(ev.next, missing, self.link.now_us())
            self._check_recovery()
            if self.link.now_us() >= deadline:
                ev.give_up("no answer to EVENT_RESEND", self.link.now_us())
                return False
            self._pump(self._resend_deadline(deadline))
