"""What the three games share: rounds to 500 points, dealing, the first card, a player's choice of
card, UNO calls and their penalty, scoring. Each game (showdown.py, flash.py, attack.py) plays its
turns and its action cards, and asks its unit whatever the unit decides.

The first card turned: document 003 puts a Super Joker or BUZZER back and turns another; this package
does that for every action card of every game, so a round starts on a number card (the documents'
rules for a first Draw Two or Skip would only add a forced draw before the first turn).
"""
from __future__ import annotations

import random

from .cards import DECKS, NUMBERS, WINNING_SCORE, Card, hand_points, playable
from .players import Player
from .stats import GameStats
from .table import Table


class Game:
    kind = ""
    uno_penalty = 2          # cards drawn (or, in UNO Attack, launcher presses) for a missed UNO call

    def __init__(self, unit, players: list[Player], seed: int, number: int = 1, max_rounds: int = 200):
        self.unit = unit
        self.players = players
        self.rng = random.Random(seed)
        self.number = number
        self.max_rounds = max_rounds
        self.table = Table(DECKS[self.kind](), len(players), self.rng)
        self.scores = [0] * len(players)
        self.round = 0
        self.turn = 0
        self.colour = ""
        self.stats = GameStats(self.kind, len(players))
        self.rounds: list[dict] = []

    # ---- where we are, for messages ----
    def where(self, event: str) -> str:
        return f"game {self.number} round {self.round} turn {self.turn}: {event}"

    def check(self, event: str) -> None:
        self.table.check(self.where(event))

    # ---- the game ----
    def play(self) -> dict:
        dealer = self.rng.randrange(len(self.players))
        while max(self.scores) < WINNING_SCORE:
            if self.round >= self.max_rounds:
                raise RuntimeError(f"game {self.number}: no winner after {self.round} rounds")
            self.round += 1
            self.new_round()
            winner = self.play_round((dealer + 1) % len(self.players))
            self.score(winner)
            dealer = (dealer + 1) % len(self.players)
        winner = max(range(len(self.scores)), key=lambda s: self.scores[s])
        self.stats.games = 1
        return {"game": self.number, "kind": self.kind, "rounds": self.round, "turns": self.turn,
                "scores": list(self.scores), "winner": winner, "reshuffles": self.table.reshuffles}

    def new_round(self) -> None:
        t = self.table
        t.deal(7)
        while True:
            card = t.take(1)[0]
            if card.rank in NUMBERS and not card.showdown:
                break
            t.draw.insert(self.rng.randrange(len(t.draw) + 1), card)    # back into the pile
        t.discard.append(card)
        self.colour = card.colour
        self.begin_round()
        self.check("the deal")

    def begin_round(self) -> None:
        """A game's own set-up for a round (the launcher is loaded here)."""

    def play_round(self, first: int) -> int:
        raise NotImplementedError

    def score(self, winner: int) -> None:
        pts = sum(hand_points(self.kind, h) for s, h in enumerate(self.table.hands) if s != winner)
        self.scores[winner] += pts
        self.rounds.append({"round": self.round, "winner": winner, "points": pts})

    # ---- a player's choices ----
    def legal(self, seat: int) -> list[Card]:
        hand = self.table.hands[seat]
        top = self.table.top
        cards = [c for c in hand if playable(c, top, self.colour)]
        if any(c.colour == self.colour for c in hand):       # a Draw Four only without the colour in force
            cards = [c for c in cards if c.rank not in ("wild_draw4", "super_joker")]
        return cards

    def choose(self, seat: int) -> Card | None:
        """A simple player: a coloured card if there is one (actions first), else a wild."""
        cards = self.legal(seat)
        if not cards:
            return None
        coloured = [c for c in cards if not c.wild]
        pool = coloured or cards
        actions = [c for c in pool if c.rank not in NUMBERS]
        return self.rng.choice(actions or pool)

    def choose_colour(self, seat: int) -> str:
        hand = [c.colour for c in self.table.hands[seat] if c.colour]
        # sorted: a set of strings iterates in an order that changes with the process's hash seed, and a tie
        # between colours would then make the same seed play another game
        return max(sorted(set(hand)), key=hand.count) if hand else self.rng.choice(["red", "yellow", "green", "blue"])

    def play_card(self, seat: int, card: Card) -> None:
        self.table.play(seat, card)
        self.colour = card.colour or self.choose_colour(seat)
        self.stats.count("cards played")
        self.check(f"seat {seat} plays {card}")

    def uno_call(self, seat: int) -> bool:
        """After a play that leaves one card: True if the player forgot UNO and was caught."""
        if len(self.table.hands[seat]) != 1:
            return False
        if self.players[seat].chance(self.players[seat].model.forgot_uno) and self.rng.random() < 0.5:
            self.stats.count("UNO penalties")
            return True
        return False
