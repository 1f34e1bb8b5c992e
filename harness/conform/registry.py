"""The conformance checks, registered where they are written: each names its SPEC section, the phase
of the run it belongs to, the capabilities it needs, and may name the decision ids of SPEC 12
(SD-n, FL-n, LA-n) it covers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from unohil.protocol import catalogue as cat
from unohil.protocol.catalogue import UNITS

SECTIONS = {
    "2": "2 Framing",
    "3": "3 Header and device time",
    "4.2": "4.2 Handshake and versions",
    "4.3": "4.3 Commands and replies",
    "4.5": "4.5 Events and EVENT_RESEND",
    "4.6": "4.6 Time sync",
    "4.7": "4.7 Configuration",
    "4.8": "4.8 Test mode",
    "4.9": "4.9 RESET and BOOT",
    **{u.section: f"{u.section} {u.title}" for u in UNITS.values()},
    "10": "10 Transport bindings",
}

# The phases of a run, in order. START brings the unit to power-on; MAIN is the checks of
# single behaviours; END reboots again and checks what that restored; OVERALL judges rules
# over every frame the run received, so a fault in any corner of it fails them.
START, MAIN, END, OVERALL = "start", "main", "end", "overall"
PHASES = (START, MAIN, END, OVERALL)


@dataclass(frozen=True)
class Check:
    section: str
    name: str
    run: Callable                   # run(session): None or a detail text; raises Fail
    phase: str = MAIN
    decisions: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()     # capabilities (IDENTITY.caps) without which it is skipped, saying so
    when: Callable | None = None    # when(session) -> bool: whether the check applies to this link at all


CHECKS: list[Check] = []


def check(section: str, name: str, *, phase: str = MAIN, decisions: tuple[str, ...] = (),
          needs: tuple[str, ...] = (), when: Callable | None = None):
    """Register the decorated function as a check; checks of a phase run in the order registered."""
    if section not in SECTIONS:
        raise ValueError(f"check {name!r}: unknown SPEC section {section!r}")
    unknown = set(needs) - set(cat.ENUM_VALUES["capability"])
    if unknown:
        raise ValueError(f"check {name!r}: unknown capabilities {sorted(unknown)}")
    unknown = set(decisions) - set(cat.DECISIONS)
    if unknown:
        raise ValueError(f"check {name!r}: unknown decision ids {sorted(unknown)} (protocol/decisions.yaml)")
    if phase not in PHASES:
        raise ValueError(f"check {name!r}: unknown phase {phase!r}")

    def register(fn: Callable) -> Callable:
        CHECKS.append(Check(section, name, fn, phase, tuple(decisions), tuple(needs), when))
        return fn
    return register


def checks(phase: str) -> list[Check]:
    return [c for c in CHECKS if c.phase == phase]
