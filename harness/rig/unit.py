"""A unit on a bench, driven as the runner drives any unit: its stimuli go through the rig (rig mode).

RigUnitDriver is the unit's Driver with one change: an input edge is never INPUT or INJECT to the
unit but a RIG_EDGE at the rig time that the unit's device time maps to (through both time syncs), so
the unit sees a physical press and reports it with source physical. The runner, the judge and the
scenario library need nothing else: a scenario's step at `green + 180000` is driven at the rig time of
that unit time. An actuated input (a card feeder, a selector, the door, the power switch: SPEC 13.2)
takes every edge with its value (RIG_EDGE.value).

The runner knows rig mode only through the driver's hooks (RigHooks, an implementation of
harness/run/hooks.py's UnitHooks): after each race they collect the rig's view of it (judge_race:
harness/rig/views.py), kept in the race's results beside the unit's. A scenario that asks for an edge no rig can make (a value on a switch,
the release of a button never pressed: unplayable) is skipped in rig mode, saying why.
"""
from __future__ import annotations

from unohil.protocol import catalogue as cat

from unohil.harness.errors import ScheduleError
from unohil.harness.outcome import Outcome
from unohil.harness.run.hooks import UnitHooks
from unohil.harness.session.driver import Driver
from unohil.harness.rig.views import OUTPUT_LAG_US, Driven, check, race_view


def unplayable(sc) -> str | None:
    """Why no rig can play a scenario's steps, from the steps and the catalogue; None if one can.

    A rig closes and opens switches: a press carries a value only on an actuated input (a feeder, a
    selector: valued_inputs), and a button that is open cannot be let go, so releasing one the steps
    never pressed makes no edge (the rig lets go of every button between races; switches stay). Steps
    naming their input by role or expression leave which button moves to the race: releases after
    them are not judged here."""
    unit = cat.UNITS[sc.unit]
    actuated = set(unit.valued_inputs) | set(unit.switches)
    held: set[str] = set()
    known = True
    for step in sc.steps:
        if step.action == "hold":       # whatever it held is let go at its end
            held -= {name for name, i in unit.inputs.items() if step.value >> i & 1}
        if step.action not in ("press", "release") or step.input is None or step.roles or step.names:
            known = known and not (step.roles or step.names)
            continue
        name = cat.enum_name(f"{sc.unit}_input", step.input)
        if name in actuated:
            continue
        if step.value:
            return f"a rig closes a switch: {name} carries no value (the step at line {step.line}, {step.text})"
        if step.action == "press":
            held.add(name)
        elif name in held:
            held.discard(name)
        elif known:
            return (f"a rig cannot release {name} without pressing it first: no edge exists (the step at line "
                    f"{step.line}, {step.text})")
    return None

# the host's turnaround for the rig's commands, beyond their round trips: a busy host's scheduler tick, or
# the interpreter's thread switch (5 ms) when the rig is served in this process (emurig:// on clock=real)
RIG_TURNAROUND_US = 5000
ORIGIN_WATCHED = cat.ENUM_VALUES["rig_origin"]["watched"]
ACTION = cat.ENUM_VALUES["action"]


class RigHooks(UnitHooks):
    """The runner's hooks for a unit driven through its rig: what no rig can play, the rig's captures of watched
    lines (seen_X anchors) and the rig's view of each race (harness/run/hooks.py)."""

    def __init__(self, driver: RigUnitDriver):
        self.driver = driver

    def unplayable(self, sc) -> str | None:
        return unplayable(sc)

    def seen(self, line: int, previous: int, next_: bool, timeout_us: int) -> int:
        return self.driver.seen(line, previous, next_, timeout_us)

    def after_race(self, sc, race, events: list, end_us: int) -> None:
        self.driver.judge_race(sc, race, events, end_us)


class RigUnitDriver(Driver):
    """The unit's driver in rig mode (session: the RigSession of this unit and its rig)."""

    session = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.driven: list[Driven] = []      # the stimuli given through the rig since the race's RESET
        self.hooks = RigHooks(self)         # what the runner asks of rig mode (harness/run/hooks.py)

    def has_cap(self, name: str) -> bool:
        if name == "test_mode":
            return True         # the rig places every edge on an exact time, as test mode does
        return super().has_cap(name)

    def stimulus_lead_us(self) -> int:
        # the edge goes to the rig, at a time mapped through both clocks, and a button held is first let go
        # (two RIG_EDGEs, each acknowledged), with the host's turnaround for the second device
        rig = self.session.rig
        return super().stimulus_lead_us() + 2 * rig.stimulus_lead_us() + RIG_TURNAROUND_US

    def stimulus_placement_us(self) -> int:
        # an edge at a rig time lands on the unit time that rig time maps to, through both clocks
        return self.session.placement_us()

    def seen(self, line: int, previous: int, next_: bool, timeout_us: int) -> int:
        """Unit time at which the rig saw watched line go active (a step's seen_X anchor): the latest capture at or
        before previous, else the first to come; with next_, the first at or after previous."""
        s = self.session
        s.seen.extend(s.rig.inbox)          # what the rig said while the unit was heard
        s.rig.inbox.clear()
        want = (line, ACTION["press"], ORIGIN_WATCHED)
        times = [round(s.rig_to_unit(f.dev_us)) for f in s.seen
                 if f.msg.NAME == "RIG_CAPTURE" and (f.msg.line, f.msg.action, f.msg.origin) == want]
        if next_:
            times = [t for t in times if t >= previous]
        elif times:
            before = [t for t in times if t <= previous]
            return before[-1] if before else times[0]
        if times:
            return times[0]
        f = s.wait_capture(line, after_us=self.unit_to_rig(previous) if next_ else None, timeout_us=timeout_us)
        return round(s.rig_to_unit(f.dev_us))

    def unit_to_rig(self, dev_us: int) -> int:
        return round(self.session.rig.clock.estimate.to_device(self.clock.estimate.to_host(dev_us)))

    def inject(self, at_dev_us: int, name: str | int, action: str = "press", value: int = 0) -> int:
        s = self.session
        inp = self._input(name)         # a switch's position is unknown from here (it may be refused)
        input_name = cat.enum_name(f"{self.kind}_input", inp)
        if input_name not in s.drive_line:
            raise ScheduleError(f"the rig's wiring of the {self.kind} unit has no line for input {input_name}")
        at = self.unit_to_rig(at_dev_us)
        unit = cat.UNITS[self.kind]
        if value and input_name not in unit.valued_inputs:
            raise ScheduleError(f"{input_name} with value {value}: a switch the rig closes carries no value")
        if action == "press" and input_name in s.held and input_name not in s.actuated:
            s.edge(at - 1, input_name, "release")      # a person lets go before pressing again
        sid = s.edge(at, input_name, action, value)
        self._injected.append(at_dev_us)
        self.driven.append(Driven(sid, input_name, action, at_dev_us))
        return sid

    def judge_race(self, sc, race, events: list, end_us: int) -> None:
        """The rig's view of a race that ended at unit time end_us (race.rig), and the scenario's expectations
        on it (expect: rig): both are heard until OUTPUT_LAG_US after the end, for outputs the unit switched
        late and outputs that came late."""
        s = self.session
        later: list = []            # what the unit switched just after the race's end: its verdict's late outputs
        self.wait_until(end_us + OUTPUT_LAG_US, collect=later)
        s.rig.wait_until(self.unit_to_rig(end_us + OUTPUT_LAG_US), collect=s.seen)
        since = self.unit_to_rig(race.start_dev_us)
        frames = [f for f in s.seen if f.dev_us >= since]
        driven = [d for d in self.driven if d.at_us >= race.start_dev_us]
        race.rig = race_view(s, driven, events + later, frames, race.start_dev_us, cat.UNITS[self.kind].verdict)
        fails = check(sc.expectations, race.rig, race.env)
        if fails:
            race.failures += fails
            race.status = Outcome.FAIL

    def reset(self, mode: str = "new_game", retries: int = 0) -> None:
        # a new game: what a race cut short left pending on the rig is dropped, and the players let go of the
        # buttons; switches (door, power, speed) stay where they are (LA-7, FL-17)
        s = self.session
        self.driven = []
        s.seen.clear()
        if s.rig.cancel_injections():
            s.held &= set(cat.UNITS[self.kind].switches)     # those edges may never have been driven
            s.rig.confirm_events()
        s.let_go(keep=cat.UNITS[self.kind].switches)
        super().reset(mode, retries)

    def input(self, name: str | int, action: str = "press", value: int = 0):
        raise ScheduleError("in rig mode a unit takes no INPUT: its inputs come through the rig")

    def cancel_injections(self, retries: int | None = None) -> int:
        return self.session.rig.cancel_injections(retries)

    def reboot(self):
        self.session.rig.cancel_injections()
        return super().reboot()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.session is not None:
                self.session.rig.close()
