"""Player roles: the players of a game named by what the unit reports, not by button.

A unit picks its players at random (the Flash base, SPEC 6.3), so a scenario whose point is not the
draw names them by role: `current` is the player whose turn it is (the player of the latest
FL_SELECTED), `opponent_1`, `opponent_2`, ... are the game's other players (FL_GAME_START's
players_mask) in ascending button order, the order in which the unit itself settles a tie or a
non-presser (FL-8, FL-9); in a mask field `opponents` is all of them. Which events and fields these
are comes from the catalogue (messages.yaml `units.KIND.roles`). Pure: frames in, a map out.
"""
from __future__ import annotations

from dataclasses import dataclass

from unohil.protocol import catalogue as cat

CURRENT = "current"
OPPONENTS = "opponents"                 # every opponent, in a mask field
OPPONENT = "opponent_"


def role_words(facts: cat.RoleFacts) -> tuple[str, ...]:
    """The single-player roles: current, opponent_1 .. opponent_(buttons - 1)."""
    return (CURRENT, *(f"{OPPONENT}{k}" for k in range(1, len(facts.buttons))))


def looks_like_role(word: str) -> bool:
    return word in (CURRENT, OPPONENTS) or word.startswith(OPPONENT)


def role_problem(word: str, facts: cat.RoleFacts, mask: bool, players: list[str] | None = None) -> str | None:
    """Why word is not a role usable here (None: it is one); players: the buttons the scenario
    registers, when it does (a game of n players has opponent_1 .. opponent_(n-1))."""
    if word in role_words(facts) and players is not None and word.startswith(OPPONENT) \
            and int(word[len(OPPONENT):]) >= len(players):
        n = len(players) - 1
        have = "no opponent" if n < 1 else "1 opponent (opponent_1)" if n == 1 else f"{n} opponents (opponent_1 .. opponent_{n})"
        return (f"{word!r}: the scenario registers {len(players)} player(s) ({', '.join(players)}), so its game "
                f"has {have}")
    if word in role_words(facts) or (mask and word == OPPONENTS):
        return None
    if word == OPPONENTS:
        return "'opponents' names several players: it goes in a mask field (opponents_mask, tied_mask, ...)"
    most = len(facts.buttons) - 1
    return (f"{word!r} is not a role; roles are current and opponent_1 .. opponent_{most} (a game has at most "
            f"{most} opponents, counted from 1)" + (", and opponents (all of them) in a mask" if mask else ""))


def mask_terms(text: str) -> list[str]:
    """'opponent_1 | opponent_2' -> the terms of a mask written as a union."""
    return [t.strip() for t in text.split("|")]


@dataclass(frozen=True)
class RoleMap:
    """The roles in force: the game's players (buttons, ascending) and whose turn it is."""

    players: tuple[int, ...]
    current: int | None
    since_us: int               # device time of the event that set it

    @property
    def opponents(self) -> tuple[int, ...]:
        return tuple(p for p in self.players if p != self.current) if self.current is not None else ()

    def button(self, role: str) -> int | None:
        """The button of a single-player role; None when the game has no such player now."""
        if role == CURRENT:
            return self.current
        k = int(role[len(OPPONENT):])
        opp = self.opponents
        return opp[k - 1] if 1 <= k <= len(opp) else None

    def mask(self, terms: tuple[str, ...]) -> int | None:
        bits = 0
        for t in terms:
            if t == OPPONENTS:
                if self.current is None:
                    return None
                bits |= sum(1 << p for p in self.opponents)
                continue
            b = self.button(t)
            if b is None:
                return None
            bits |= 1 << b
        return bits

    def role_of(self, button: int) -> str | None:
        if button == self.current:
            return CURRENT
        opp = self.opponents
        return f"{OPPONENT}{opp.index(button) + 1}" if button in opp else None

    def describe(self) -> str:
        if self.current is None:
            return f"players {', '.join(map(str, self.players))}, nobody selected yet"
        return ", ".join(f"{self.role_of(p)} = player {p}" for p in (self.current, *self.opponents))


def follow(facts: cat.RoleFacts, roles: RoleMap | None, frame) -> RoleMap | None:
    """The roles after the unit reported frame: a game start sets the players (nobody's turn yet),
    a selection whose turn it is."""
    name = frame.msg.NAME
    if name == facts.players[0]:
        mask = getattr(frame.msg, facts.players[1])
        return RoleMap(tuple(i for i in range(len(facts.buttons)) if mask >> i & 1), None, frame.dev_us)
    if name == facts.current[0] and roles is not None:
        return RoleMap(roles.players, getattr(frame.msg, facts.current[1]), frame.dev_us)
    return roles


def before_each(facts: cat.RoleFacts, frames: list) -> list[RoleMap | None]:
    """The roles in force just before each frame (as set by the frames before it)."""
    out, roles = [], None
    for f in frames:
        out.append(roles)
        roles = follow(facts, roles, f)
    return out


def at_time(facts: cat.RoleFacts, frames: list, t: int) -> RoleMap | None:
    """The roles in force at device time t: as set by every frame up to and including t."""
    roles = None
    for f in frames:
        if f.dev_us > t:
            break
        roles = follow(facts, roles, f)
    return roles


def history(maps: list[RoleMap | None], start: int) -> str:
    """Each distinct map in force over a race, with when it began (us from the race's start)."""
    seen: list[RoleMap] = []
    for m in maps:
        if m is None or (seen and m == seen[-1]):
            continue
        if seen and seen[-1].current is None and seen[-1].since_us == m.since_us:
            seen.pop()          # the game's start and its first selection, at one instant
        seen.append(m)
    return "; ".join(f"from {m.since_us - start} us: {m.describe()}" for m in seen) or "no game started"
