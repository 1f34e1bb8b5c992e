"""Games in a row on one unit: each game from its own seed, its result, and the statistics of all.

A game that finds the unit wrong stops there with a GameFailure naming the event and the invariant or
prediction it broke; the next game starts from a new game on the unit (RESET new_game).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from unohil.protocol import catalogue as cat
from unohil.harness.errors import DeviceReset, HarnessError, LinkError, Nak

from .players import PlayerModel, seat_players
from .stats import GameStats
from .table import GameFailure

KINDS = tuple(cat.UNITS)          # a game for every unit kind (_game)
# compressed timing: thinking (a Flash turn's card before its press, a launcher press) a twentieth as long,
# 40-175 ms; a real-clock Flash game is 500-1200 turns of it, and the unit's rules judge only the press
COMPRESSED_THINKING = 0.05


@dataclass
class GameResult:
    number: int
    seed: int
    passed: bool
    summary: dict = field(default_factory=dict)
    failure: str = ""
    stats: dict = field(default_factory=dict)
    wall_s: float = 0.0
    device_us: int = 0              # device time the game took (its first to its last event)
    trace: str = ""                 # the game's trace file, when one was written
    status: str = ""                # pass, fail (the unit broke a rule), link-error (the link cut the game short)
    scenario: str = ""              # a failed game's trace as a scenario file, when one was written
    unit: object = field(default=None, repr=False, compare=False)   # its unit adapter (stimuli, config)

    def __post_init__(self):
        self.status = self.status or ("pass" if self.passed else "fail")

    def as_dict(self) -> dict:
        return {"game": self.number, "seed": self.seed, "status": self.status, "failure": self.failure,
                **self.summary, "device_us": self.device_us, "wall_s": round(self.wall_s, 3),
                **({"trace": self.trace} if self.trace else {}),
                **({"scenario": self.scenario} if self.scenario else {}), "stats": self.stats}


def game_seed(seed: int, number: int) -> int:
    """Game `number`'s seed (u32): the unit's rng_seed and the players' choices both follow from it."""
    return (seed * 7919 + number * 104_729) & 0xFFFFFFFF


def make(kind: str, driver, seed: int, players: int, number: int, *, variant: bool = False,
         compressed: bool = False, model: PlayerModel | None = None, on_outcome=None):
    """A game of `kind` on the unit behind driver, its players seated; returns the game."""
    model = model or PlayerModel()
    if compressed:
        model = model.scaled(COMPRESSED_THINKING)
    seated = seat_players(players, seed, model)
    game = _game(kind, driver, seed, seated, number, variant, compressed)
    game.unit.on_outcome = on_outcome
    return game


def _game(kind, driver, seed, seated, number, variant, compressed):
    if kind == "showdown":
        from .showdown import COMPRESSED_CONFIG, GAME_CONFIG, ShowdownGame, ShowdownUnit
        unit = ShowdownUnit(driver, seed, COMPRESSED_CONFIG if compressed else GAME_CONFIG)
        return ShowdownGame(unit, seated, seed, number, variant=variant)
    if kind == "flash":
        from .flash import COMPRESSED_CONFIG, GAME_CONFIG, FlashGame, FlashUnit
        unit = FlashUnit(driver, seed, COMPRESSED_CONFIG if compressed else GAME_CONFIG)
        return FlashGame(unit, seated, seed, number)
    if kind == "launcher":
        from .attack import GAME_CONFIG, AttackGame, LauncherUnit
        unit = LauncherUnit(driver, seed, GAME_CONFIG)
        return AttackGame(unit, seated, seed, number)
    raise ValueError(f"unknown unit kind {kind!r}; use one of {', '.join(KINDS)}")


def play_one(kind: str, driver, seed: int, players: int, number: int, on_start=None,
             **kw) -> tuple[GameResult, GameStats]:
    """One game; on_start(game) once it is set up (a live view reads its scores and counts)."""
    game = make(kind, driver, seed, players, number, **kw)
    if on_start is not None:
        on_start(game)
    t0 = time.perf_counter()
    game.unit.new_game()
    start = game.unit.now
    try:
        summary = game.play()
        result = GameResult(number, seed, True, summary)
    except GameFailure as exc:
        result = GameResult(number, seed, False, {"rounds": game.round, "turns": game.turn,
                                                  "scores": list(game.scores)}, str(exc))
    except HarnessError as exc:
        result = GameResult(number, seed, False, {"rounds": game.round, "turns": game.turn,
                                                  "scores": list(game.scores)},
                            f"{game.where('the link')}: {type(exc).__name__}: {exc}", status=_status(exc, game.unit))
    result.unit = game.unit
    result.wall_s = time.perf_counter() - t0
    result.device_us = game.unit.now - start
    result.stats = game.stats.as_dict()
    game.stats.games = 1
    return result, game.stats


def _status(exc: HarnessError, unit) -> str:
    """A game cut short by a lossy or slow link (a stimulus too late, a reply or event lost for good, a
    reboot) is a link-error; on a clean virtual link nothing can be lost, so a missing verdict is the unit's."""
    linky = isinstance(exc, (LinkError, DeviceReset)) or (isinstance(exc, Nak) and exc.error in ("too_late",
                                                                                                 "queue_full"))
    return "link-error" if linky and not unit.clean else "fail"


def play_games(kind: str, driver, games: int, players: int, seed: int, on_game=None, **kw):
    """`games` games in a row; on_game(result, totals) after each. Returns (results, total stats)."""
    totals = GameStats(kind, players)
    results = []
    for n in range(1, games + 1):
        result, stats = play_one(kind, driver, game_seed(seed, n), players, n, **kw)
        totals.merge(stats)
        results.append(result)
        if on_game is not None:
            on_game(result, totals)
    return results, totals
