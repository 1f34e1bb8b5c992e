"""Simulated players: how fast and how reliably each presses, and where each sits.

A player's choices come from the game's own seeded generator, never from the unit's, so a game is
the same every time for a given seed and the unit's draws stay the unit's.

Reaction time is log-normal (median 220 ms, sigma 0.25: the 5-95 % range is about 145-330 ms, the
span of human simple reaction times the documents quote) and never under 100 ms. The rates are
per opportunity: a false start per showdown, a forgotten press per Flash turn or buzzer race, a
wrong button per BUZZER card played, an idle spell per flagged Flash button or pause (long enough
for the base to fall asleep), a forgotten UNO call per second-to-last card.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

@dataclass(frozen=True)
class PlayerModel:
    median_reaction_us: int = 220_000
    sigma: float = 0.25
    min_reaction_us: int = 100_000
    false_start: float = 0.03
    forgotten_press: float = 0.02
    wrong_button: float = 0.05
    idle_spell: float = 0.01
    forgot_uno: float = 0.1
    think_us: tuple[int, int] = (800_000, 3_500_000)    # a Flash turn: play a card, then press

    def scaled(self, factor: float) -> "PlayerModel":
        """The same players with every duration but reactions multiplied by factor (compressed timing)."""
        lo, hi = self.think_us
        return PlayerModel(**{**self.__dict__, "think_us": (int(lo * factor), int(hi * factor))})


@dataclass
class Player:
    seat: int
    model: PlayerModel
    rng: random.Random

    def reaction_us(self) -> int:
        """One reaction: log-normal around the median, not under the floor."""
        m = self.model
        r = m.median_reaction_us * math.exp(self.rng.gauss(0.0, m.sigma))
        return max(m.min_reaction_us, round(r))

    def chance(self, rate: float) -> bool:
        return self.rng.random() < rate

    def think_us(self) -> int:
        lo, hi = self.model.think_us
        return self.rng.randint(lo, hi)


def seat_players(count: int, seed: int, model: PlayerModel | None = None) -> list[Player]:
    """Players in seats 0..count-1, each with its own generator derived from the game's seed."""
    model = model or PlayerModel()
    return [Player(s, model, random.Random(seed * 1000 + s)) for s in range(count)]


def flash_buttons(count: int, button_count: int, rng: random.Random) -> list[int]:
    """The Flash seat map: seat -> the Player button in front of it, a different one for each seat,
    chosen as players sit down around the base (so not always buttons 0..n-1)."""
    if count > button_count:
        raise ValueError(f"{count} players but the base has {button_count} Player buttons")
    return sorted(rng.sample(range(button_count), count))


def paddle_sides(player: int, opponent: int) -> dict[int, str]:
    """The Showdown seat map: the unit goes between the two players, the lower seat on paddle A."""
    lo, hi = sorted((player, opponent))
    return {lo: "a", hi: "b"}
