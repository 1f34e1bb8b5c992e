"""The cards on the table: where each card is, and the check that every card is in exactly one place.

Places: the draw pile, the discard pile (its last card is the top), each hand, and places a unit
holds (the Showdown tray, the launcher's magazine, cards thrown and waiting to be picked up). The
total never changes; `check` is called after every event of a game.
"""
from __future__ import annotations

import random

from .cards import Card


class GameFailure(AssertionError):
    """A game found the unit wrong: the message names the event and the invariant or prediction."""

    def __init__(self, where: str, what: str, got, expected):
        self.where, self.what, self.got, self.expected = where, what, got, expected
        super().__init__(f"{where}: {what}: got {got}, expected {expected}")


class Table:
    def __init__(self, deck: tuple[Card, ...], players: int, rng: random.Random):
        self.deck = deck
        self.rng = rng
        self.players = players
        self.draw: list[Card] = []
        self.discard: list[Card] = []
        self.hands: list[list[Card]] = [[] for _ in range(players)]
        self.held: dict[str, list[Card]] = {}
        self.reshuffles = 0

    # ---- a new round ----
    def deal(self, per_hand: int = 7) -> None:
        cards = list(self.deck)
        self.rng.shuffle(cards)
        self.draw, self.discard = cards, []
        self.hands = [[] for _ in range(self.players)]
        self.held = {}
        for _ in range(per_hand):
            for h in self.hands:
                h.append(self.draw.pop())

    def place(self, name: str) -> list[Card]:
        return self.held.setdefault(name, [])

    @property
    def top(self) -> Card:
        return self.discard[-1]

    # ---- moving cards ----
    def reshuffle(self) -> bool:
        """The discard pile but its top card, shuffled, becomes the draw pile. False if nothing to turn."""
        if len(self.discard) < 2:
            return False
        top = self.discard.pop()
        self.draw = self.discard + self.draw
        self.rng.shuffle(self.draw)
        self.discard = [top]
        self.reshuffles += 1
        return True

    def take(self, n: int) -> list[Card]:
        """Up to n cards from the draw pile, the discard pile reshuffled when it runs out."""
        out: list[Card] = []
        while len(out) < n:
            if not self.draw and not self.reshuffle():
                break
            out.append(self.draw.pop())
        return out

    def draw_to(self, seat: int, n: int) -> int:
        cards = self.take(n)
        self.hands[seat].extend(cards)
        return len(cards)

    def play(self, seat: int, card: Card) -> None:
        self.hands[seat].remove(card)
        self.discard.append(card)

    # ---- the invariant ----
    def count(self) -> int:
        return len(self.draw) + len(self.discard) + sum(map(len, self.hands)) + sum(map(len, self.held.values()))

    def check(self, where: str) -> None:
        """Every card of the deck in exactly one place."""
        seen: set[int] = set()
        n = 0
        for pile in (self.draw, self.discard, *self.hands, *self.held.values()):
            n += len(pile)
            seen.update(c.uid for c in pile)
        if n != len(self.deck) or len(seen) != len(self.deck):
            places = {"draw": len(self.draw), "discard": len(self.discard),
                      "hands": [len(h) for h in self.hands], **{k: len(v) for k, v in self.held.items()}}
            raise GameFailure(where, f"card conservation ({places})", f"{n} cards, {len(seen)} distinct",
                              f"{len(self.deck)} distinct")
