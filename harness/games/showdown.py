"""UNO Showdown: the game (documents 000-002) and its unit (SPEC 7).

The unit decides who takes the showdown cards: the host loads the tray, presses TIMER and each
player's paddle at that player's reaction after green (or early, a false start), and the verdict
says who lost. A no_press verdict leaves the cards in the tray and the showdown is run again; an
even split (or, on a unit without a landing sensor, a tie whose line the players read and find
even) is run again with the same cards reloaded (SD-7). A unit without a landing sensor leaves a
tie to the players: they read the line, which is SPEC 6.2's line model; with reference_rng that is
the unit's own (discarded) draws, else the game's generator.
"""
from __future__ import annotations

from unohil.protocol import catalogue as cat
from unohil.protocol.algorithms import countdown, lands_on_b
from unohil.protocol.devtime import diff, wrap

from .players import Player, paddle_sides
from .rules import Game
from .stats import majority_chance, uniform_moments
from .unit import MODE, TIMER_LATE_US, UnitAdapter

SIDE = cat.ENUM_VALUES["side"]
SIDE_NAME = cat.ENUM_NAMES["side"]
REASON = cat.ENUM_NAMES["showdown_reason"]
LIGHT = cat.ENUM_VALUES["showdown_light"]
NONE_U8 = cat.NONE_U8
NONE_U32, NONE_I32 = cat.NONE_U32, cat.NONE_I32

GAME_CONFIG = {"countdown_min_us": 2_000_000, "countdown_max_us": 6_000_000, "beep_interval_us": 1_000_000,
               "go_timeout_us": 5_000_000}
COMPRESSED_CONFIG = {"countdown_min_us": 500_000, "countdown_max_us": 1_000_000, "beep_interval_us": 500_000,
                     "go_timeout_us": 2_000_000}


class ShowdownUnit(UnitAdapter):
    kind = "showdown"
    verdict = "SD_VERDICT"
    outcomes = (verdict,)

    def __init__(self, driver, seed, config=None, stats=None):
        super().__init__(driver, seed, config or GAME_CONFIG)
        self.sensor = driver.has_cap("landing_sensor")
        self.tray = 0                       # cards in the tray, as the players put them
        self.stats = stats

    def setup(self) -> None:
        self.tray = 0
        self.W = self.d.config_get("tie_window_us")

    def observe(self, f) -> None:
        if f.msg.NAME == "SD_CARDS":
            self.expect(f"SD_CARDS at {f.dev_us}", "the tray count agrees with the cards the players loaded",
                        f.msg.cards, self.tray)

    def load(self, n: int) -> None:
        self.tray += n
        self.inject(self.at(), "load_cards", value=n)
        self.wait("SD_CARDS", "SD_CARDS (cards loaded)")

    def race(self, seat_a: Player, seat_b: Player, rng) -> tuple[str | None, str, tuple[int, int] | None]:
        """One showdown on the loaded tray: (loser side or None, reason, (landed_a, landed_b) or None)."""
        cfg = self.config
        t0 = self.at()
        t0 = self.inject(t0, "timer")         # on a real clock, later than asked when the host was slow
        green = t0 + countdown(self.m, cfg["countdown_min_us"], cfg["countdown_max_us"]) if self.m else None
        self.green = green
        early = {s: t0 + p.rng.randint(100_000, cfg["countdown_min_us"] - 1)
                 for s, p in (("a", seat_a), ("b", seat_b)) if p.chance(p.model.false_start)}
        self.expect_verdict()
        if early:
            for side, t in sorted(early.items(), key=lambda kv: kv[1]):
                early[side] = self.inject(t, f"paddle_{side}")
            v = self.wait("SD_VERDICT", "SD_VERDICT (a false start)")
            self.settle(max(early.values()))         # every press made before the next showdown
            first = min(early, key=lambda s: (early[s], s))
            self._presses(v, {first: early[first]})          # the first early press stopped the timer (SD-4)
            return self._judge(v, SIDE[first], "false_start", None)
        g = self.wait("SD_GREEN", "SD_GREEN (the countdown's end)").dev_us
        if green is not None:
            self.expect_timer(f"SD_GREEN at {g}", "green at the countdown predicted from SPEC 6.1", g, green)
        elif not cfg["countdown_min_us"] <= g - t0 <= cfg["countdown_max_us"] + TIMER_LATE_US:
            self.expect(f"SD_GREEN at {g}", "countdown within its configured range", g - t0,
                        f"{cfg['countdown_min_us']}..{cfg['countdown_max_us']}")
        if self.stats is not None:
            self.stats.mean("countdown (us)", g - t0, *uniform_moments(cfg["countdown_min_us"], cfg["countdown_max_us"]))
        press = {s: None if p.chance(p.model.forgotten_press) else g + max(p.reaction_us(), self.lead)
                 for s, p in (("a", seat_a), ("b", seat_b))}
        for side in ("a", "b"):
            if press[side] is not None:
                press[side] = self.inject(press[side], f"paddle_{side}")
        v = self.wait("SD_VERDICT", "SD_VERDICT (the showdown's verdict)")
        self.settle(max([v.dev_us] + [t for t in press.values() if t is not None]))
        made = [t for t in press.values() if t is not None]
        # presses up to t1 + W are the verdict's (SD-5), a tie's both; none for no_press
        cutoff = min(made) + self.W if made else 0
        self._presses(v, {s: t for s, t in press.items() if t is not None and t <= cutoff})
        return self._predict(v, press, rng)

    def _presses(self, v, counted: dict[str, int]) -> None:
        """The verdict's press and reaction fields: each side's first press of this showdown, as the host made it."""
        e, ev = v.msg, f"SD_VERDICT at {v.dev_us}"
        for side in ("a", "b"):
            t = counted.get(side)
            got = (getattr(e, f"press_{side}_us"), getattr(e, f"reaction_{side}_us"))
            want = (NONE_U32, NONE_I32) if t is None else (wrap(t), diff(wrap(t), e.green_us))
            self.expect(ev, f"side {side}'s press and reaction (from the scheduled green)", got, want)

    def _predict(self, v, press, rng):
        ta, tb = press["a"], press["b"]
        if ta is None and tb is None:
            return self._judge(v, SIDE["none"], "no_press", None)
        if ta is None or tb is None or abs(tb - ta) >= self.W:
            first = "a" if tb is None or (ta is not None and ta <= tb) else "b"
            return self._judge(v, SIDE["b" if first == "a" else "a"], "first_press", None)
        d, cards = tb - ta, self.tray
        if self.m is not None:
            on_b = sum(lands_on_b(self.m, d, self.W) for _ in range(cards))
        elif self.sensor:
            on_b = None
        else:                               # the players read the line: the line model, the game's draws
            on_b = sum(lands_on_b(rng, d, self.W) for _ in range(cards))
        if self.stats is not None and self.sensor:
            pa, pb = majority_chance(cards, max(0, min(2 * self.W, self.W + 2 * d)) / (2 * self.W))
            self.stats.chance("line: A loses a tie", pa, v.msg.loser == SIDE["a"])
        if on_b is None:                    # the unit's own generator: only what follows from its landing
            la, lb = v.msg.landed_a, v.msg.landed_b
            self.expect(f"SD_VERDICT at {v.dev_us}", "landed_a + landed_b = cards", la + lb, cards)
            loser = SIDE["a"] if la > lb else SIDE["b"] if lb > la else SIDE["none"]
            return self._judge(v, loser, "line_tiebreak" if la != lb else "even_split", (la, lb))
        on_a = cards - on_b
        if not self.sensor:
            self._judge(v, SIDE["none"], "line_tiebreak", None, landed_field=(NONE_U8, NONE_U8))
            return (None if on_a == on_b else "a" if on_a > on_b else "b",
                    "line_tiebreak" if on_a != on_b else "even_split", (on_a, on_b))
        loser = SIDE["a"] if on_a > on_b else SIDE["b"] if on_b > on_a else SIDE["none"]
        return self._judge(v, loser, "line_tiebreak" if on_a != on_b else "even_split", (on_a, on_b))

    def _judge(self, v, loser: int, reason: str, landed, landed_field=None):
        e, ev = v.msg, f"SD_VERDICT at {v.dev_us}"
        self.expect(ev, "cards in play agree with the tray", e.cards, self.tray)
        if self.green is not None:
            self.expect(ev, "scheduled green (green_us), predicted from SPEC 6.1", e.green_us, wrap(self.green))
        self.expect(ev, "verdict (loser, reason)", (SIDE_NAME.get(e.loser), REASON.get(e.reason)),
                    (SIDE_NAME[loser], reason))
        if landed is not None or landed_field is not None:
            self.expect(ev, "landing counts", (e.landed_a, e.landed_b), landed_field or landed)
        if reason == "false_start":
            self.expect(ev, "red light points at the false starter", self.lit(LIGHT["red"], loser), MODE["on"])
        self.expect(ev, "green light off after the verdict", self.lit(LIGHT["green"], NONE_U8), MODE["off"])
        if reason != "no_press":
            self.tray = 0                   # thrown: the tray is empty from the launch on
        return SIDE_NAME[loser] if loser != SIDE["none"] else None, reason, landed


class ShowdownGame(Game):
    kind = "showdown"

    def __init__(self, unit: ShowdownUnit, players, seed, number=1, variant: bool = False, **kw):
        super().__init__(unit, players, seed, number, **kw)
        self.variant = variant              # every round-ending card forces a 1-card showdown
        unit.stats = self.stats
        unit.where = self.where

    def next_seat(self, seat: int, direction: int, steps: int = 1) -> int:
        return (seat + direction * steps) % len(self.players)

    def play_round(self, first: int) -> int:
        seat, direction, t = first, 1, self.table
        while True:
            self.turn += 1
            card = self.choose(seat)
            if card is None:
                t.draw_to(seat, 1)
                self.check(f"seat {seat} draws")
                drawn = t.hands[seat][-1] if t.hands[seat] else None
                card = drawn if drawn is not None and drawn in self.legal(seat) else None
            if card is None:
                seat = self.next_seat(seat, direction)
                continue
            self.play_card(seat, card)
            nxt = self.next_seat(seat, direction)
            skip = False
            if card.rank == "reverse":
                direction = -direction
                nxt = self.next_seat(seat, direction)
                skip = len(self.players) == 2
            elif card.rank in ("skip", "draw2", "wild_draw4"):
                skip = True
                if card.rank != "skip":
                    t.draw_to(nxt, 2 if card.rank == "draw2" else 4)
                    self.check(f"seat {nxt} draws for {card}")
            won = not t.hands[seat]
            if card.showdown or card.rank == "wild_showdown" or (won and self.variant):
                opponent, n = nxt, card.showdown or 1        # the variant's showdown: 1 card
                if card.rank == "wild_showdown":         # its player chooses the opponent and the count
                    opponent = self.rng.choice([s for s in range(len(self.players)) if s != seat])
                    n = self.rng.randint(1, 4)
                if self.showdown(seat, opponent, n) == seat:
                    won = False                          # the last card's showdown lost: play goes on
            elif self.uno_call(seat):
                t.draw_to(seat, self.uno_penalty)
                self.check(f"seat {seat} draws for a missed UNO")
            if won:
                return seat
            seat = self.next_seat(nxt, direction) if skip else nxt

    def showdown(self, seat: int, opponent: int, n: int) -> int | None:
        """A showdown between seat and opponent with n cards: the seat that took the cards."""
        t = self.table
        tray = t.place("tray")
        cards = t.take(n)
        if not cards:
            return None                      # every card is in a hand: nothing to load
        tray.extend(cards)
        self.unit.load(len(cards))
        self.check(f"{len(cards)} cards loaded for seats {seat} and {opponent}")
        sides = paddle_sides(seat, opponent)
        by_side = {side: s for s, side in sides.items()}
        reruns = 0
        while True:
            self.stats.count("showdowns")
            loser, reason, _ = self.unit.race(self.players[by_side["a"]], self.players[by_side["b"]], self.rng)
            self.stats.count(f"verdicts {reason}")
            if loser is not None:
                break
            reruns += 1
            if reason != "no_press":         # thrown and even: the same cards reloaded
                self.unit.load(len(tray))
            self.check(f"showdown re-run after {reason}")
        taker = by_side[loser]
        t.hands[taker].extend(tray)
        self.stats.count("showdown cards taken", len(tray))
        self.stats.seat("showdowns lost", taker)
        self.stats.most("re-runs of one showdown", reruns)
        tray.clear()
        self.check(f"seat {taker} takes the showdown cards")
        return taker
