"""A race's verdict in words, the one place every report builds them (console lines and tables, the HTML page).

A value is never shown bare: `first_press: loser b`, not `first_press b` (read as "b won"); a Flash reaction
is `player 1: 150 ms`, not `1 150 ms` (read as 1150 ms)."""
from __future__ import annotations

from unohil.protocol import catalogue as cat

from unohil.harness.text import duration, printable


def _is_player(kind: str, field: str) -> bool:
    unit = cat.UNITS[kind]
    return unit.roles is not None and (unit.verdict, field) in unit.roles.player_fields


def outcome_text(kind: str, v: dict) -> str:
    """The verdict's reason and its outcome field by name: 'first_press: loser b', 'slowest player 1',
    'slowest_tie: slowest player 1', 'fired 6'; '' when the verdict has neither."""
    field = cat.UNITS[kind].outcome_field
    who = v.get(field)
    named = "" if who is None or who == "" else \
        f"{field} player {who}" if _is_player(kind, field) else f"{field} {who}"
    reason = str(v.get("reason", "") or "")
    if reason == field:         # the Flash's reason `slowest` says no more than its field does
        reason = ""
    return printable(f"{reason}: {named}" if reason and named else reason or named)


def reaction_text(v: dict, sep: str = ", ") -> str:
    """The reaction times a verdict carries, exact (a tie window is a matter of one microsecond), each named by
    its side or player: 'a 200 ms, b 170.5 ms', 'player 1: 150 ms, player 3: 240 ms'; '' when there are none."""
    parts = [f"{side} {duration(v[f'reaction_{side}_us'])}" for side in ("a", "b")
             if v.get(f"reaction_{side}_us") is not None]
    parts += [f"player {i}: {duration(x)}" for i, x in enumerate(v.get("reaction_us") or ()) if x is not None]
    return sep.join(parts)
