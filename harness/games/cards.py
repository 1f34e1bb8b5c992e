"""The three games' decks, matching and scoring, as the source documents give them.

A card is immutable and carries a serial number `uid` unique in its deck, so the table can check that
every card is in exactly one place. Colours are "red", "yellow", "green", "blue"; a wild card has no
colour of its own.

Which cards carry the Showdown symbol: the documents say 20 coloured cards do, and their pictures show a
seven loading one card and another card loading two; they do not list which. This package's reading:
in each colour the second copy of 5, 6 and 7 loads one card and the second copy of 8 and 9 loads two.

UNO Attack's deck: document 004's card list (112 cards: per colour two sets of 1-9, one Reverse, two
Hit 2, two Skip, two Discard All; 4 Wild, 4 Wild Attack-Attack, 3 customisable Wild, 1 Wild Hit 4)
has no Wild Hit-Fire, Wild All Hit or Trade Hands, which its action-card section describes. The
document also says players may write any action on the customisable Wilds; this package writes the
three that section describes on them, so the deck is the listed edition's 112 cards and every
action the document describes is played (each scores 50, as a customisable Wild).
"""
from __future__ import annotations

from dataclasses import dataclass

COLOURS = ("red", "yellow", "green", "blue")
NUMBERS = tuple(str(n) for n in range(10))

@dataclass(frozen=True, slots=True)
class Card:
    uid: int
    rank: str                  # "0".."9" or an action's name
    colour: str | None = None  # None for a wild card
    showdown: int = 0          # Showdown game: how many cards this card loads into the unit (0: none)

    @property
    def wild(self) -> bool:
        return self.colour is None

    def __str__(self) -> str:
        s = self.rank if self.colour is None else f"{self.colour} {self.rank}"
        return f"{s} (showdown {self.showdown})" if self.showdown else s


def _build(specs: list[tuple[str, str | None, int]]) -> tuple[Card, ...]:
    return tuple(Card(i, rank, colour, sd) for i, (rank, colour, sd) in enumerate(specs))


def showdown_deck() -> tuple[Card, ...]:
    """UNO Showdown, 112 cards: per colour one 0, two each of 1-9, Draw Two, Reverse, Skip; 4 Wild,
    4 Wild Draw Four, 4 Wild Showdown (document 002's list)."""
    specs: list[tuple[str, str | None, int]] = []
    for c in COLOURS:
        specs.append(("0", c, 0))
        for n in range(1, 10):
            specs.append((str(n), c, 0))
            specs.append((str(n), c, (1 if n <= 7 else 2) if n >= 5 else 0))
        for action in ("draw2", "reverse", "skip"):
            specs += [(action, c, 0)] * 2
    specs += [("wild", None, 0)] * 4 + [("wild_draw4", None, 0)] * 4 + [("wild_showdown", None, 0)] * 4
    return _build(specs)


def flash_deck() -> tuple[Card, ...]:
    """UNO Flash, 108 cards: per colour 19 numbers (one 0, two each of 1-9), two Draw Two, two Skip, two
    BUZZER; 4 Joker, 4 Super Joker (document 003)."""
    specs: list[tuple[str, str | None, int]] = []
    for c in COLOURS:
        specs.append(("0", c, 0))
        specs += [(str(n), c, 0) for n in range(1, 10) for _ in range(2)]
        for action in ("draw2", "skip", "buzzer"):
            specs += [(action, c, 0)] * 2
    specs += [("joker", None, 0)] * 4 + [("super_joker", None, 0)] * 4
    return _build(specs)


def attack_deck() -> tuple[Card, ...]:
    """UNO Attack, 112 cards: document 004's list, its 3 customisable Wilds written as Wild Hit-Fire,
    Wild All Hit and Trade Hands (see the module's note)."""
    specs: list[tuple[str, str | None, int]] = []
    for c in COLOURS:
        specs += [(str(n), c, 0) for n in range(1, 10) for _ in range(2)]
        specs += [("reverse", c, 0)] + [("hit2", c, 0)] * 2 + [("skip", c, 0)] * 2 + [("discard_all", c, 0)] * 2
    specs += [("wild", None, 0)] * 4 + [("wild_attack", None, 0)] * 4
    specs += [("wild_hit_fire", None, 0), ("wild_all_hit", None, 0), ("trade_hands", None, 0)]
    specs += [("wild_hit4", None, 0)]
    return _build(specs)


DECKS = {"showdown": showdown_deck, "flash": flash_deck, "launcher": attack_deck}

# points per card left in a hand (the documents' scoring); numbers score their face value
_POINTS = {
    "showdown": {"draw2": 20, "reverse": 20, "skip": 20, "wild": 50, "wild_draw4": 50, "wild_showdown": 40},
    "flash": {"draw2": 20, "skip": 20, "buzzer": 20, "joker": 50, "super_joker": 50},
    "launcher": {"reverse": 20, "skip": 20, "hit2": 20, "discard_all": 30, "wild_hit4": 40, "wild": 50,
                 "wild_attack": 50, "wild_hit_fire": 50, "wild_all_hit": 50, "trade_hands": 50},
}
WINNING_SCORE = 500


def points(kind: str, card: Card) -> int:
    """What a card left in a hand scores in the game played with unit `kind`."""
    if card.rank in NUMBERS:
        return int(card.rank)
    return _POINTS[kind][card.rank]


def hand_points(kind: str, cards) -> int:
    return sum(points(kind, c) for c in cards)


# Draw Two, Skip (and on the Flash base BUZZER) may only go on their colour or their own symbol (003);
# every other coloured card matches by colour, number or symbol; a wild card matches anything
def playable(card: Card, top: Card, colour: str) -> bool:
    """Can `card` be played on `top`, the colour in force being `colour` (a wild's chosen colour)?"""
    if card.wild:
        return True
    return card.colour == colour or card.rank == top.rank
