"""How far a verdict's times may be off what a scenario expects on a unit that stamps its timers late
(SPEC 3.1, PR-1): per field, per anchor kind, one way. Pure: from the scenario's steps, the stimuli
the runner scheduled and the verdict.

SPEC 3.1: an event of one of the unit's own timers "MAY stamp later than the scheduled time ... and
MUST NOT stamp earlier"; "Whatever a unit stamps, the rules are judged on scheduled times, and the
time fields in payloads carry them"; "A host that anchors a stimulus on a timer event ("green +
180000") places it relative to the header time it received, so against a unit that stamps late by L
the press lands L late and its reaction is L longer: the reference harness measures L as SD_GREEN's
header time minus the verdict's green_us ... and judges that verdict's reaction times within L".

So the harness's own times are exact (a press is where it put it) and only a timer event's header
time, used as an anchor, may be up to L after the scheduled time the unit judges by:
- a time counted from an input-caused event (or start) is exact: no slack at all, in either field;
- a press counted from a timer event lands up to L late: its time, and its reaction, may be up to L
  more than expected (never less);
- a time field expected from a timer event's anchor carries a scheduled time (green_us, a deadline
  such as no_press's knowable_us), up to L before that anchor (never after);
- both at once from the same timer event: the press and the expectation moved together: exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from unohil.protocol import Frame, devtime

from unohil.harness.scenarios.model import Scenario, TimeSpec


def timer_events(unit) -> frozenset[str]:
    """The events a unit stamps from its own timers (the catalogue's timers, and those whose scheduled
    time a verdict carries): the anchors whose header time may be late."""
    return frozenset(r.event for r in unit.timers) | frozenset(unit.scheduled_times)


def timer_sources(sc: Scenario, unit) -> dict[int, str | None]:
    """Per step (by line), the timer event its time counts from, through `previous` back to the step that
    named an anchor (None: from start, an input-caused event or a verdict, which the unit stamps exactly)."""
    timers = timer_events(unit)
    out: dict[int, str | None] = {}
    previous: str | None = None
    for st in sc.steps:
        if st.action == "wait_for":         # later steps count from the awaited event's header time
            previous = st.awaited.name if st.awaited is not None and st.awaited.name in timers else None
            continue
        anchor = st.at.anchor
        if anchor != "previous":
            event = unit.anchors.get(anchor)
            previous = event if event in timers else None
        # a line holding two steps (flow style) counts as from a timer if either does: the looser, never a false fail
        out[st.line] = out.get(st.line) or previous
    return out


@dataclass
class Slack:
    """How far each field of one verdict may be off: (below, above) in us. host_us: a host-timed press's
    measured error, either way; late_us: this verdict's measured timer lateness L."""

    host_us: int = 0
    late_us: int = 0
    verdict: Frame | None = None
    unit: object = None
    stimuli: list[tuple[int, str | None]] = field(default_factory=list)   # (device time, timer source), in time order

    def source(self, t: int) -> str | None:
        """The timer event the latest stimulus at or before device time t counted from: what a time the unit
        derives from the inputs (a press, its decisive input, a window after it) moved with."""
        found = None
        for at, src in self.stimuli:
            if at > t + self.host_us:
                break
            found = src
        return found

    def _value(self, name: str) -> int:
        v = self.verdict
        return v.dev_us + devtime.diff(getattr(v.msg, name), v.time_us)

    def time(self, name: str, spec: TimeSpec) -> tuple[int, int]:
        """A device-time field expected from spec's anchor."""
        if not self.late_us or self.verdict is None:
            return self.host_us, self.host_us
        event = self.unit.anchors.get(spec.anchor)
        anchor = event if event in timer_events(self.unit) else None
        moved = self.source(self._value(name))
        if anchor is not None and anchor == moved:
            return self.host_us, self.host_us
        return self.host_us + (self.late_us if anchor else 0), self.host_us + (self.late_us if moved else 0)

    def reaction(self, name: str) -> tuple[int, int]:
        """A reaction field (reaction_a_us): longer by up to L when its press counted from a timer event."""
        press = next((p for p, r in (self.unit.optional_times.items() if self.unit else ()) if r == name), None)
        if not self.late_us or self.verdict is None or press is None:
            return self.host_us, self.host_us
        moved = self.source(self._value(press))
        return self.host_us, self.host_us + (self.late_us if moved else 0)


def allowed(below: int, above: int) -> str:
    """The slack a failure message names: what the expectation was widened by."""
    if not below and not above:
        return ""
    return f" (within {-below} to +{above} us: the host's measured press error and the unit's timer lateness, SPEC PR-1)"


def slack_for(sc: Scenario, unit, scheduled, host_us: int, late: list[int], verdicts: list[Frame]) -> list[Slack]:
    """One Slack per verdict of the race."""
    sources = timer_sources(sc, unit)
    stimuli = sorted(((at, sources.get(step.line)) for step, _inp, _edge, at in scheduled), key=lambda x: x[0])
    return [Slack(host_us, late[i] if i < len(late) else 0, v, unit, stimuli) for i, v in enumerate(verdicts)]
