"""RigSession: one unit and the rig wired to it, driven together.

The rig gets the reference wiring of the unit's kind (messages.yaml `rig.wiring`, SPEC 13.3). Presses
are RIG_EDGEs at rig times; what the rig saw comes back as RIG_CAPTURE events in rig time, what the unit
decided as its own events in unit time. The two clocks are compared only through their time syncs
(rig_to_unit), and only where a measurement needs it. The rig's loopback (SPEC 13.7) is one more drive
line, named "loopback": a pulse round it measures the rig's own floor.
"""
from __future__ import annotations

import math

from unohil.protocol import catalogue as cat, msg as M
from unohil.protocol.devtime import wrap

from unohil.harness.session.driver import Driver

AHEAD_US = 50_000           # an edge this far ahead of the rig's last word reaches it in time
HOLD_US = 50_000            # a press holds the switch this long
WAIT_US = 10_000_000
SIGNAL = cat.ENUM_VALUES["rig_signal"]
POLARITY = cat.ENUM_VALUES["rig_polarity"]
ACTION = cat.ENUM_VALUES["action"]
LOOPBACK = cat.RIG.loopback
LOOP_HOLD_US = 1_000        # a loopback pulse: long enough for any rig to see, short beside a race


class RigSession:
    def __init__(self, unit: Driver, rig: Driver):
        self.unit = unit
        self.rig = rig
        self.kind = unit.kind
        self.wiring = cat.RIG.wiring[self.kind]
        self.drive_line = {w.name: w.line for w in self.wiring if w.drives}
        if LOOPBACK is not None:
            self.drive_line[LOOPBACK.name] = LOOPBACK.id
        self.last_edge_us = 0           # rig time of the latest edge asked for
        self.seen: list = []            # the rig's events of the current race, in order
        self.held: set[str] = set()         # the inputs whose line was last driven active
        unit = cat.UNITS[self.kind]
        self.actuated = frozenset(unit.valued_inputs) | frozenset(unit.switches)   # SPEC 13.2

    def wire(self) -> None:
        """Send the reference wiring, line by line."""
        for w in self.wiring:
            self.rig.command(M.RIG_WIRE(line=w.line, signal=SIGNAL[w.signal], id=w.id, target=w.target,
                                        polarity=POLARITY[w.polarity]))

    def line(self, signal: str, name: str | None = None, target: int | None = None) -> int:
        return cat.RIG.line_of(self.kind, signal, name, target)

    # ---- time ----
    def rig_now(self) -> int:
        """The rig's time now, as best known: its last word or the time sync, whichever is later."""
        return max(self.rig.device_now(), self.rig.last_reply_dev_us, self.last_edge_us - AHEAD_US)

    def placement_us(self) -> int:
        """How far from its unit time a rig edge may land: both syncs' uncertainty and the map's rounding; 0 when
        both clocks are exact (the virtual clock)."""
        unit, rig = self.unit.clock.estimate or self.unit.sync_clock(), self.rig.clock.estimate or self.rig.sync_clock()
        if unit.uncertainty_us == 0 and rig.uncertainty_us == 0:
            return 0
        return math.ceil(unit.uncertainty_us + rig.uncertainty_us) + 1

    def rig_to_unit(self, rig_us: float) -> float:
        """A rig time as unit time, through both time syncs (uncertain by both estimates' uncertainty)."""
        return self.unit.clock.estimate.to_device(self.rig.clock.estimate.to_host(rig_us))

    # ---- stimuli ----
    def edge(self, at: int, name: str, action: str = "press", value: int = 0) -> int:
        """Drive the line of input name at rig time at (a feeder's press: carrying value); the stimulus id."""
        self.last_edge_us = max(self.last_edge_us, at)
        (self.held.add if action == "press" else self.held.discard)(name)
        r = self.rig.command(M.RIG_EDGE(at_us=wrap(at), line=self.drive_line[name], action=ACTION[action],
                                        value=value))
        return r.msg.value

    def press(self, at: int, name: str, hold_us: int = HOLD_US) -> int:
        """A press at rig time at and its release hold_us later; the press's stimulus id."""
        sid = self.edge(at, name, "press")
        self.edge(at + hold_us, name, "release")
        return sid

    def let_go(self, keep=()) -> None:
        """Release every input still held but those in keep (switches stay where they are); wait for it."""
        at = self.rig_now() + AHEAD_US
        for name in sorted(self.held - set(keep)):
            self.edge(at, name, "release")
        self.settle()

    def settle(self) -> None:
        """Wait until every edge asked for has been driven (the next race starts with the switches open)."""
        self.rig.wait_until(self.last_edge_us, collect=self.seen)

    # ---- what came back ----
    def wait_capture(self, line: int, action: str = "press", origin: str = "watched", after_us: int | None = None,
                     timeout_us: int = WAIT_US):
        """The next RIG_CAPTURE of this line and action (at or after rig time after_us)."""
        want = (line, ACTION[action], cat.ENUM_VALUES["rig_origin"][origin])

        def match(f) -> bool:
            m = f.msg
            return (m.NAME == "RIG_CAPTURE" and (m.line, m.action, m.origin) == want
                    and (after_us is None or f.dev_us >= after_us))
        for f in self.seen:
            if match(f):
                return f
        return self.rig.wait_for(match, timeout_us, f"RIG_CAPTURE of line {line} {action}", collect=self.seen)

    def loopback(self) -> int:
        """One pulse round the rig's loopback: the watched capture's rig time minus the driven edge's (the floor,
        SPEC 13.7). Between races: it waits until its edges have been driven."""
        at = self.rig_now() + AHEAD_US
        self.press(at, LOOPBACK.name, LOOP_HOLD_US)
        got = self.wait_capture(LOOPBACK.line, after_us=at)
        self.settle()
        return got.dev_us - at

    def new_race(self) -> None:
        """Forget the last race's rig events (they have all been driven: settle() first)."""
        self.rig.confirm_events()
        self.seen.clear()

    def wait_unit(self, name: str, timeout_us: int = WAIT_US):
        return self.unit.wait_for(lambda f: f.msg.NAME == name, timeout_us, name)
