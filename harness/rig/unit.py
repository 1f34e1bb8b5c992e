"""A unit on a bench, driven as the runner drives any unit: its stimuli go through the rig (rig mode).

RigUnitDriver is the unit's Driver with one change: an input edge is never INPUT or INJECT to the
unit but a RIG_EDGE at the rig time that the unit's device time maps to (through both time syncs), so
the unit sees a physical press and reports it with source physical. The runner, the judge and the
scenario library need nothing else: a scenario's step at `green + 180000` is driven at the rig time of
that unit time. An actuated input (a card feeder, a selector, the door, the power switch: SPEC 13.2)
takes every edge with its value (RIG_EDGE.value).
"""
from __future__ import annotations

from protocol import catalogue as cat

from harness.errors import ScheduleError
from harness.session.driver import Driver


class RigUnitDriver(Driver):
    """The unit's driver in rig mode (session: the RigSession of this unit and its rig)."""

    session = None

    def has_cap(self, name: str) -> bool:
        if name == "test_mode":
            return True         # the rig places every edge on an exact time, as test mode does
        return super().has_cap(name)

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
        return sid

    def reset(self, mode: str = "new_game", retries: int = 0) -> None:
        # a new game: what a race cut short left pending on the rig is dropped, and the players let go of the
        # buttons; switches (door, power, speed) stay where they are (LA-7, FL-17)
        s = self.session
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
