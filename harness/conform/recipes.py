"""What conformance knows of each unit kind, from the catalogue's unit facts (messages.yaml `units`):
its SPEC section, its power-on state, the inputs that bring a fresh unit to the situation a check
needs (the last input of each is the one judged), and the cross-parameter rules of SPEC 4.7."""
from __future__ import annotations

from typing import Mapping

from unohil.protocol.catalogue import UNITS

KIND_SECTION = {kind: u.section for kind, u in UNITS.items()}
POWER_ON = {kind: u.power_on_state for kind, u in UNITS.items()}
RECIPES = {kind: u.situations for kind, u in UNITS.items()}


def cross_rules_ok(kind: str, config: Mapping[str, int]) -> bool:
    return all(rule.holds(config) for rule in UNITS[kind].cross_rules)
