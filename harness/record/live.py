"""Recording a live unit: what people do on it, read as it happens, kept as trace records.

The recorder only listens (it sends no input): it reads the unit's configuration back, restarts the
generator from the seed the unit has (CONFIG_SET rng_seed to its own value: nothing else changes, and
the first piece's draws follow from a known seed), then keeps every event until the time is up or the
user stops it. Records are kept as they arrive, so an interrupt loses nothing already seen.
"""
from __future__ import annotations

from typing import Callable

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.errors import HarnessError, Nak, WaitTimeout
from unohil.harness.record.segments import segments_of
from unohil.harness.session.driver import Driver
from unohil.harness.session.trace import frame_record

POLL_US = 200_000      # how long one wait for an event lasts: how soon a deadline or an interrupt is noticed


class LiveRecording:
    def __init__(self, d: Driver):
        self.d = d
        self.records: list[dict] = []
        self.notes: list[str] = []
        self.config: dict[str, int] = {}
        self.seed: int | None = None
        self.state: str | None = None

    def start(self) -> None:
        d = self.d
        ident = d.identity
        self.records.append({"dir": "rx", "type": "IDENTITY", "fields": ident.to_dict(), "dev_us": d.last_reply_dev_us})
        for p in cat.UNITS[d.kind].params:
            try:
                self.config[p.name] = d.config_get(p.name)
            except Nak as exc:
                self.notes.append(f"{p.name} could not be read back ({exc.error}): the scenario leaves it at the default")
        if d.has_cap("config_set"):
            self.seed = d.config_get("rng_seed")
            d.config_set("rng_seed", self.seed)     # the generator restarts from the seed the unit has
        self.state = cat.enum_name(cat.UNITS[d.kind].enum_for("STATE", "state"), d.status().state)
        self.notes.append("the switches' positions at the start are not known to the host: the scenario puts them "
                          "where a booted unit has them")

    def run(self, duration_us: int | None, on_event: Callable[[Frame], None] | None = None) -> None:
        """Keep every event until duration_us of device time has passed (None: until interrupted)."""
        d = self.d
        end = None if duration_us is None else d.device_now() + duration_us
        try:
            while end is None or d.device_now() < end:
                wait = POLL_US if end is None else max(1, min(POLL_US, end - d.device_now()))
                try:
                    f = d.wait_for(lambda f: True, wait, "an event", probe=False)
                except WaitTimeout:
                    continue
                self._keep(f, on_event)
        finally:
            tail: list[Frame] = []
            try:
                d.confirm_events(tail)         # an event lost at the very end has no later one to reveal it
            except HarnessError:
                pass
            for f in tail:
                self._keep(f, on_event)

    def _keep(self, f: Frame, on_event) -> None:
        self.records.append(frame_record("rx", f))
        if on_event is not None:
            on_event(f)

    def segments(self):
        return segments_of(self.records, kind=self.d.kind, config=self.config, seed=self.seed, state=self.state)
