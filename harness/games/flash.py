"""UNO Flash: the game (document 003) and its base (SPEC 8).

The base decides who plays: every turn is the player FL_SELECTED names, whoever that is, and a Draw
Two, Skip or Super Joker hits the next player the base selects, even the one who played it. The
host presses, at device times: each player's button after they have played (or not at all: a
forgotten press, which the base times out and penalises), BUZZER for a BUZZER card (or, by mistake,
the player's own button, which cancels the buzzer action), the opponents' buttons in a buzzer race
at their reactions, PLAY/PAUSE to pause while drawing four, and, after an idle spell long enough for
the base to fall asleep, PLAY/PAUSE to wake it.

One game is one power-up: rounds follow each other on the base without a reset, the round's last
press selecting the player who starts the next round (and who draws first when the last card was a
Draw Two or a Super Joker).
"""
from __future__ import annotations

from unohil.protocol import catalogue as cat
from unohil.protocol.algorithms import pick
from unohil.protocol.devtime import wrap

from .players import flash_buttons
from .rules import Game
from .unit import MODE, UnitAdapter

SELECT = cat.ENUM_NAMES["flash_select_reason"]
BUZZ = cat.ENUM_NAMES["flash_buzzer_reason"]
PENALTY = cat.ENUM_NAMES["flash_penalty_reason"]
SPEED = cat.ENUM_VALUES["flash_speed"]
LIGHT_PLAYER = cat.ENUM_VALUES["flash_light"]["player"]
RELEASE_US = 60_000             # how long a finger stays on PLAY/PAUSE or BUZZER

GAME_CONFIG = {"turn_long_us": 6_000_000, "turn_short_us": 4_000_000, "buzzer_window_us": 5_000_000,
               "sleep_after_us": 15_000_000}
COMPRESSED_CONFIG = {"turn_long_us": 2_000_000, "turn_short_us": 1_500_000, "buzzer_window_us": 2_000_000,
                     "sleep_after_us": 10_000_000}
SPEED_CHANGE = 0.25             # between rounds, the players turn the base over and move its speed switch


class FlashUnit(UnitAdapter):
    kind = "flash"
    verdict = "FL_BUZZER_VERDICT"
    # a turn ends with the next selection (its reason: next, after_timeout, after_flag), a timeout's penalty
    # or a buzzer race's verdict
    outcomes = ("FL_SELECTED", "FL_PENALTY", "FL_BUZZER_VERDICT")

    def __init__(self, driver, seed, config=None, stats=None):
        super().__init__(driver, seed, config or GAME_CONFIG)
        self.stats = stats
        self.registered: list[int] = []
        self.current: int | None = None

    def press(self, at_us: int, name: str, hold: bool = False) -> int:
        at_us = self.inject(at_us, name)
        if hold:                         # PLAY/PAUSE and BUZZER are let go: both held is a reset (FL-12)
            self.inject(at_us + RELEASE_US, name, "release")
        return at_us

    def setup(self) -> None:
        self.registered, self.current, self.run, self.paused_us = [], None, 0, 0
        self.speed = "six_seconds"
        self.turn_time = self.config["turn_long_us"]
        self.tie_us = self.d.config_get("buzzer_tie_us")

    def start(self, buttons: list[int]) -> int:
        t = self.at()
        self.set_speed("six_seconds")
        for i, b in enumerate(buttons):
            self.press(t + 200_000 * (i + 1), f"player_{b}")
        self.registered = sorted(buttons)
        self.press(t + 200_000 * (len(buttons) + 1), "play_pause", hold=True)
        return self.selected("start")

    def observe(self, f) -> None:
        e = f.msg
        if e.NAME == "FL_TURN_END":            # game time: the turn's start to the press, pauses excluded (FL-15)
            self.expect(f"FL_TURN_END at {f.dev_us}", "turn end (player, elapsed game time)",
                        (e.player, e.elapsed_us), (self.current, f.dev_us - self.turn_start - self.paused_us))

    def buttons_lit(self) -> list[tuple[int, int]]:
        return sorted((target, mode) for (light, target), mode in self.lights.items()
                      if light == LIGHT_PLAYER and mode != MODE["off"])

    def turn_time_of(self, speed: str) -> int:
        return self.config["turn_long_us" if speed == "six_seconds" else "turn_short_us"]

    def set_speed(self, speed: str) -> None:
        """The speed switch moved: FL_SPEED at once, the new turn time from the next selection (FL-4)."""
        self.inject(self.at(), "speed_switch", value=SPEED[speed])
        f = self.wait("FL_SPEED", "FL_SPEED (the speed switch)")
        self.expect(f"FL_SPEED at {f.dev_us}", "the switch's turn time", (f.msg.speed, f.msg.turn_time_us),
                    (SPEED[speed], self.turn_time_of(speed)))
        self.speed = speed

    def selected(self, reason: str) -> int:
        f = self.wait("FL_SELECTED", "FL_SELECTED (the next player)")
        e, ev = f.msg, f"FL_SELECTED at {f.dev_us}"
        self.settle(f.dev_us)                # the selection's light and state follow it
        self.expect(ev, "selection of a registered button", e.player in self.registered, True)
        self.expect(ev, "selection reason", SELECT.get(e.reason), reason)
        self.expect(ev, "turn time of the speed switch's position (FL-4: from the next turn)", e.turn_time_us,
                    self.turn_time_of(self.speed))
        self.turn_time = e.turn_time_us
        if self.m is not None:
            self.expect(ev, "player selected, predicted from SPEC 6.3", e.player, pick(self.m, self.registered))
        self.expect(ev, "buttons lit: the selected player's alone, on", self.buttons_lit(), [(e.player, MODE["on"])])
        if self.stats is not None:
            n = len(self.registered)
            for b in self.registered:
                self.stats.chance(f"selected: seat {self.registered.index(b)}", 1 / n, b == e.player)
            if self.current is not None and reason != "start":
                self.stats.chance("same player selected again", 1 / n, e.player == self.current)
                self.run = self.run + 1 if e.player == self.current else 1
                self.stats.most("longest run of one player's turns", self.run)
        self.current = e.player
        self.turn_start, self.paused_us = f.dev_us, 0
        return e.player

    def end_turn(self, delay_us: int, reason: str = "next") -> int:
        """The current player presses their button delay_us after their turn started; the next player."""
        self.press(max(self.at(), self.turn_start + delay_us), f"player_{self.current}")
        return self.selected(reason)

    def time_out(self) -> None:
        """The current player never presses: the base times the turn out and penalises them."""
        f = self.wait("FL_PENALTY", "FL_PENALTY (the turn timed out)")
        self.settle(f.dev_us)
        self.expect(f"FL_PENALTY at {f.dev_us}", "penalty (player, cards, reason)",
                    (f.msg.player, f.msg.cards, PENALTY.get(f.msg.reason)), (self.current, 2, "timeout"))
        self.expect_timer(f"FL_PENALTY at {f.dev_us}", "turn timed out at the turn time (pauses excluded)",
                          f.dev_us, self.turn_start + self.paused_us + self.turn_time)
        self.expect(f"FL_PENALTY at {f.dev_us}", "the timed-out player's light flashes",
                    self.lit(LIGHT_PLAYER, self.current), MODE["flash"])
        self.flagged = self.current

    def idle(self, spell_us: int) -> None:
        """Nobody touches the base for spell_us (longer than sleep_after_us): it sleeps; PLAY/PAUSE wakes it."""
        f = self.wait("FL_SLEEP", "FL_SLEEP (the base falling asleep)")
        self.expect(f"FL_SLEEP at {f.dev_us}", "asleep", f.msg.asleep, 1)
        self.settle(f.dev_us)
        lit = [k for k, mode in self.lights.items() if mode != MODE["off"]]
        self.expect(f"FL_SLEEP at {f.dev_us}", "every light off while asleep", lit, [])
        self.press(max(self.at(), f.dev_us + spell_us - self.config["sleep_after_us"]), "play_pause", hold=True)
        f = self.wait("FL_SLEEP", "FL_SLEEP (waking)")
        self.expect(f"FL_SLEEP at {f.dev_us}", "awake", f.msg.asleep, 0)

    def pause(self, length_us: int) -> None:
        self.press(self.at(), "play_pause", hold=True)
        f = self.wait("FL_PAUSE", "FL_PAUSE (paused)")
        self.expect(f"FL_PAUSE at {f.dev_us}", "paused", f.msg.paused, 1)
        since = f.dev_us
        self.press(self.at(length_us), "play_pause", hold=True)
        f = self.wait("FL_PAUSE", "FL_PAUSE (resumed)")
        self.expect(f"FL_PAUSE at {f.dev_us}", "resumed", f.msg.paused, 0)
        self.paused_us += f.dev_us - since

    def flagged_press(self, delay_us: int, reason: str) -> int:
        self.press(self.at(delay_us), f"player_{self.flagged}")
        return self.selected(reason)

    def buzzer(self, delay_us: int, reactions: dict[int, int | None]) -> int:
        """BUZZER pressed delay_us into the turn, each opponent at their reaction (None: never): the slowest."""
        t = max(self.at(), self.turn_start + delay_us)
        t = self.press(t, "buzzer", hold=True)
        for b, r in sorted(reactions.items()):
            if r is not None:
                reactions[b] = self.press(t + r, f"player_{b}") - t
        self.expect_verdict()
        f = self.wait("FL_BUZZER_VERDICT", "FL_BUZZER_VERDICT (the slowest player)")
        ev, e = f"FL_BUZZER_VERDICT at {f.dev_us}", f.msg
        missing = [b for b, r in reactions.items() if r is None]
        if missing:
            want = (min(missing), "non_presser", sum(1 << b for b in missing))
        else:
            last = max(reactions.values())
            tied = [b for b, r in reactions.items() if last - r < self.tie_us]
            want = (min(b for b in tied if reactions[b] == last), "slowest" if len(tied) == 1 else "slowest_tie",
                    sum(1 << b for b in tied))
        self.expect(ev, "buzzer verdict (slowest, reason, tied)", (e.slowest, BUZZ.get(e.reason), e.tied_mask), want)
        reacted = [reactions.get(b) if reactions.get(b) is not None else cat.NONE_I32 for b in range(len(e.reaction_us))]
        self.expect(ev, "BUZZER time and each opponent's reaction (none for the buzzer player and non-pressers)",
                    (e.buzzer_us, list(e.reaction_us)), (wrap(t), reacted))
        self.settle(max([f.dev_us] + [t + r for r in reactions.values() if r is not None]))
        self.expect(ev, "buttons lit: the slowest's alone, flashing (FL-16)", self.buttons_lit(),
                    [(e.slowest, MODE["flash"])])
        self.flagged = e.slowest          # the turn stays the buzzer player's: the next selection follows it
        return e.slowest


class FlashGame(Game):
    kind = "flash"

    def __init__(self, unit: FlashUnit, players, seed, number=1, **kw):
        super().__init__(unit, players, seed, number, **kw)
        unit.stats = self.stats
        unit.where = self.where
        self.buttons = flash_buttons(len(players), unit.d.identity.players, self.rng)
        self.seat_of = {b: s for s, b in enumerate(self.buttons)}
        self.hit: tuple[str, int] | None = None      # what the next selected player suffers
        self.selected: int | None = None

    def play(self) -> dict:
        self.selected = self.seat_of[self.unit.start(self.buttons)]
        return super().play()

    def begin_round(self) -> None:
        if self.round > 1 and self.rng.random() < SPEED_CHANGE:
            self.stats.count("speed changes")
            self.unit.set_speed("four_seconds" if self.unit.speed == "six_seconds" else "six_seconds")

    def play_round(self, first: int) -> int:
        while True:
            self.turn += 1
            seat = self.selected
            self.stats.seat("turns", seat)
            if self.hit is not None:
                self.suffer(seat)
                self.next_player(seat)
                continue
            card = self.choose(seat)
            if card is None:
                self.table.draw_to(seat, 1)
                self.check(f"seat {seat} draws")
                drawn = self.table.hands[seat][-1]
                card = drawn if drawn in self.legal(seat) else None
            if card is not None:
                self.play_card(seat, card)
                if card.rank in ("draw2", "skip", "super_joker"):
                    self.hit = (card.rank, {"draw2": 2, "skip": 0, "super_joker": 4}[card.rank])
                if self.uno_call(seat):
                    self.table.draw_to(seat, self.uno_penalty)
                    self.check(f"seat {seat} draws for a missed UNO")
            if card is not None and card.rank == "buzzer":
                self.buzzer_race(seat)
            else:
                self.next_player(seat)
            if not self.table.hands[seat]:
                if self.hit is not None:           # a last Draw Two or Super Joker: drawn before scoring
                    self.suffer(self.selected)
                    self.next_player(self.selected)
                return seat

    def suffer(self, seat: int) -> None:
        rank, n = self.hit
        self.hit = None
        if n:
            if n == 4 and self.players[seat].chance(0.5):        # may pause the base while drawing four
                self.stats.count("pauses")
                self.unit.pause(self.players[seat].think_us())
            self.table.draw_to(seat, n)
            self.check(f"seat {seat} draws {n} for a {rank}")
        self.stats.count(f"turns lost to {rank}")

    def next_player(self, seat: int) -> None:
        """The current player presses their button (or forgets): the base selects the next one."""
        p, unit = self.players[seat], self.unit
        if p.chance(p.model.forgotten_press):
            unit.time_out()
            self.stats.seat("timeouts", seat)
            self.table.draw_to(seat, 2)
            self.check(f"seat {seat} draws 2 for a timeout")
            self.flag_resolved(seat, "after_timeout")
            return
        self.selected = self.seat_of[unit.end_turn(p.think_us())]

    def flag_resolved(self, seat: int, reason: str) -> None:
        p = self.players[seat]
        if p.chance(p.model.idle_spell):
            self.stats.count("sleeps")
            self.unit.idle(self.unit.config["sleep_after_us"] + p.rng.randint(1_000_000, 5_000_000))
        self.selected = self.seat_of[self.unit.flagged_press(p.think_us(), reason)]

    def buzzer_race(self, seat: int) -> None:
        p = self.players[seat]
        if p.chance(p.model.wrong_button):       # their own button: the buzzer action is cancelled
            self.stats.count("BUZZER cards cancelled")
            self.next_player(seat)
            return
        self.stats.count("buzzer races")
        reactions = {}
        for b in self.buttons:
            if b != self.buttons[seat]:
                o = self.players[self.seat_of[b]]
                reactions[b] = None if o.chance(o.model.forgotten_press) else o.reaction_us()
        slowest = self.seat_of[self.unit.buzzer(p.think_us(), reactions)]
        self.stats.seat("buzzer races lost", slowest)
        self.table.draw_to(slowest, 2)
        self.check(f"seat {slowest} draws 2 as the slowest")
        self.flag_resolved(slowest, "after_flag")
