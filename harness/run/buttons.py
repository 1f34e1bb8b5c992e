"""Which races a unit's buttons allow: a Flash base has IDENTITY.players Player buttons, 2 to 8 (SPEC 8:
"the retail base has 6; up to 8 here"; 8.1: "A button index >= IDENTITY.players is refused bad_value").
A race that presses a Player button the base does not have, expecting it to act, is written for a bigger
base: skipped on this one, saying so, never failed. Pure: from the scenario and the unit's player count."""
from __future__ import annotations

from unohil.harness.scenarios.model import REP, UNIT_PLAYERS, Scenario
from unohil.harness.scenarios.units import UNITS


def unit_names(kind: str, players: int | None) -> dict[str, int]:
    """The names of the unit's own facts an input name may use ('player_{unit_players}'), for a unit with
    Player buttons (roles); none for another."""
    return {UNIT_PLAYERS: players} if UNITS[kind].roles is not None and players is not None else {}


def beyond_the_unit(sc: Scenario, env: dict[str, int], players: int | None) -> tuple[str, bool] | None:
    """Why this race cannot run on a base with `players` Player buttons, and whether it applies to such a base
    (None if it can run): a step presses a button the base does not have and does not expect a refusal (the
    same rules on a bigger base: applies, left unchecked here), or names an input the base has none of
    (player_{unit_players} on a base of 8: nothing of the kind to check on it)."""
    unit = UNITS[sc.unit]
    if unit.roles is None or players is None:
        return None
    buttons = unit.roles.buttons
    for st in sc.steps:
        if st.action not in ("press", "release", "hold"):
            continue
        named = [n for n, i in unit.inputs.items()
                 if (i == st.input and not st.names) or (st.action == "hold" and st.value >> i & 1)]
        for k in range(st.count(env)):
            named += [t.name(env | {REP: k, UNIT_PLAYERS: players}) for t in st.names]
        for name in dict.fromkeys(named):
            if name not in unit.inputs:
                return (f"the step at line {st.line} ({st.text}) names {name} on this base of {players} Player "
                        f"buttons (IDENTITY.players), which is no input of the {sc.unit} unit: a race for "
                        f"another base"), False
            if name in buttons and buttons.index(name) >= players and st.expect != "refused":
                return (f"the step at line {st.line} ({st.text}) presses {name}, a button this base does not have: "
                        f"it has {players} Player buttons (IDENTITY.players); the race is for a bigger base"), True
    return None
