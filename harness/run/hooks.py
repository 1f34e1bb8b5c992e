"""What the runner asks of a unit's stimulus-and-capture path beyond its Driver, with neutral defaults.

A unit driven directly (INPUT and INJECT through its Driver) needs nothing more: every scenario it can
run by kind and capability is playable, and a race ends with the unit's own events. A unit driven
through a rig (harness/rig/unit.py: RIG_EDGE and RIG_CAPTURE) brings its own UnitHooks: what no rig can
play, and the rig's view collected after each race. The runner asks `hooks_of(driver)` and names no
implementation, so rig mode is a second implementation here, not a branch in the runner."""
from __future__ import annotations

from unohil.harness.errors import ScheduleError


class UnitHooks:
    """The direct path: INPUT and INJECT through the Driver."""

    def unplayable(self, sc) -> str | None:
        """Why this path cannot play the scenario's steps (it is then not applicable), None if it can."""
        if sc.needs_rig:
            return f"needs a rig (--rig URL): {sc.needs_rig}"
        return None

    def seen(self, line: int, previous: int, next_: bool, timeout_us: int) -> int:
        """Unit time at which watched line went active (a step's seen_X anchor): only a rig captures lines."""
        raise ScheduleError(f"a seen_ anchor (watched line {line}) needs a rig capturing the unit's lines (--rig URL)")

    def after_race(self, sc, race, events: list, end_us: int) -> None:
        """What to collect and judge after a race that ended at unit time end_us, beside the unit's verdict."""
        return None


DIRECT = UnitHooks()


def hooks_of(driver) -> UnitHooks:
    """The hooks a driver brings (its `hooks` attribute), the direct path's when it brings none."""
    return getattr(driver, "hooks", None) or DIRECT
