"""UNO Attack: the game (document 004) and the card launcher (SPEC 9).

The launcher decides how many cards a press gives. The cards left after the deal go into the
magazine through the door, as many as it holds; the rest wait beside it (the draw pile) and go in
when a press empties it (LA_EMPTY), through the door again, the discard pile reshuffled when they
run out. The magazine keeps its cards from round to round: one game is one power-up, and its
counters run across every reload (loaded_total = inside + fired_total).

Actions, as the document describes them: Hit 2 (the next player presses twice and loses the turn),
Wild Hit 4 (four presses), Wild Attack-Attack (a chosen player presses twice), Wild Hit-Fire (the
next player presses until cards come out), Wild All Hit (every player presses once), Trade Hands,
Discard All (every card of its colour goes with it), Skip and Reverse (their player may play one
more card at once), a missed UNO call (two presses). A player who cannot play presses once and takes
what comes; the turn ends.
"""
from __future__ import annotations

from unohil.protocol.algorithms import fire_chance, fires, sample_burst
from unohil.protocol.devtime import wrap

from .rules import Game
from .stats import triangle_moments
from .unit import MODE, UnitAdapter

GAME_CONFIG: dict[str, int] = {}        # the SPEC's defaults: fire 250 + 150 per empty press, bursts (1, 4, 12)
U16 = 0xFFFF
TOP = 0                                # launcher_light top
NONE_U8 = 255


class LauncherUnit(UnitAdapter):
    kind = "launcher"
    verdict = "LA_RESULT"
    outcomes = (verdict,)

    def __init__(self, driver, seed, config=None, stats=None):
        super().__init__(driver, seed, config or GAME_CONFIG)
        self.stats = stats
        self.capacity = driver.identity.card_capacity

    def setup(self) -> None:
        self.inside = self.loaded = self.fired = self.streak = self.cards_out = self.empties = 0
        c = {k: self.d.config_get(k) for k in ("fire_base_permille", "fire_step_permille", "burst_min",
                                                "burst_mode", "burst_max", "motor_us", "card_interval_us")}
        self.motor, self.interval = c["motor_us"], c["card_interval_us"]
        self.base, self.step = c["fire_base_permille"], c["fire_step_permille"]
        self.burst = (c["burst_min"], c["burst_mode"], c["burst_max"])

    def counters(self, ev: str, e) -> None:
        self.expect(ev, "launcher counts (inside, loaded_total, fired_total) agree with the host's",
                    (e.inside, e.loaded_total, e.fired_total), (self.inside, self.loaded & U16, self.fired & U16))

    def observe(self, f) -> None:
        if f.msg.NAME == "LA_CARD":
            self.cards_out += 1
        elif f.msg.NAME == "LA_EMPTY":
            self.empties += 1

    def reload(self, n: int) -> None:
        """Open the door, put n cards in, close it."""
        t = self.at()
        t = self.inject(t, "door")
        self.inject(t + 400_000, "load_cards", value=n)
        self.inject(t + 900_000, "door", "release")
        f = self.wait("LA_LOADED", "LA_LOADED (cards put in)")
        self.inside += n
        self.loaded += n
        self.counters(f"LA_LOADED at {f.dev_us}", f.msg)
        f = self.wait("LA_DOOR", "LA_DOOR (the door closing)", lambda f: f.msg.open == 0)
        self.expect(f"LA_DOOR at {f.dev_us}", "cards inside when the door closes", f.msg.inside, self.inside)
        self.streak = 0                      # LA-2: the door restarts the streak
        self.settle(f.dev_us)
        self.expect(f"LA_DOOR at {f.dev_us}", "top light off once the streak restarts", self.lit(TOP, NONE_U8),
                    MODE["off"])

    def press(self, delay_us: int) -> int:
        """One press of the button delay_us from now: how many cards came out."""
        t = self.at(delay_us)
        chance = fire_chance(self.base, self.step, self.streak)
        planned = None
        if self.m is not None and self.inside:
            planned = sample_burst(self.m, *self.burst) if fires(self.m, chance) else 0
        t = self.inject(t, "button")
        self.expect_verdict()
        ding = self.wait("LA_DING", "LA_DING (the press)")
        ev = f"press {ding.msg.press} (LA_DING at {ding.dev_us})"
        self.expect(ev, "empty streak (LA-2: restarts at the door and after a burst)", ding.msg.empty_streak,
                    self.streak)
        self.expect(ev, "fire chance (SPEC 6.4)", ding.msg.chance_permille, chance)
        self.cards_out = self.empties = 0
        v = self.wait("LA_RESULT", "LA_RESULT (the press's verdict)")
        e, ev = v.msg, f"press {ding.msg.press} (LA_RESULT at {v.dev_us})"
        if planned is not None:
            self.expect(ev, "burst planned, predicted from SPEC 6.4/6.5", e.planned, planned)
        lo, _, hi = self.burst
        self.expect(ev, "a burst within [burst_min, burst_max], or none", e.planned == 0 or lo <= e.planned <= hi, True)
        want = min(e.planned, self.inside)
        self.expect(ev, "cards fired = min(planned, inside)", (e.fired, self.cards_out), (want, want))
        knowable = t + self.motor + (want - 1) * self.interval if want else t         # LA-5
        self.expect(ev, "press time and knowable time (LA-5: the last card, or the press)",
                    (e.press_us, e.knowable_us), (wrap(t), wrap(knowable)))
        if self.inside and self.stats is not None:
            self.stats.chance("presses that fire", chance / 1000, e.planned > 0)
            if e.planned:
                self.stats.mean("burst size (planned)", e.planned, *triangle_moments(*self.burst))
        if self.inside:
            self.streak = 0 if e.planned else min(255, self.streak + 1)
        self.inside -= e.fired
        self.fired += e.fired
        self.counters(ev, e)
        self.settle(v.dev_us)
        self.expect(ev, "LA_EMPTY when the press leaves the magazine empty (LA-3)", self.empties,
                    int(self.inside == 0))
        self.expect(ev, "top light flashes while the chance rises", self.lit(TOP, NONE_U8),
                    MODE["flash"] if self.streak else MODE["off"])
        return e.fired


class AttackGame(Game):
    kind = "launcher"

    def __init__(self, unit: LauncherUnit, players, seed, number=1, **kw):
        super().__init__(unit, players, seed, number, **kw)
        unit.stats = self.stats
        unit.where = self.where

    # ---- the launcher and its cards ----
    def new_round(self) -> None:
        """The cards inside the launcher stay there; the others are gathered, shuffled and dealt."""
        t = self.table
        inside = t.held.get("launcher", [])
        kept = {c.uid for c in inside}
        rest = [c for c in t.deck if c.uid not in kept]
        t.deal(0)
        t.held["launcher"] = inside
        self.rng.shuffle(rest)
        t.draw = rest
        for _ in range(7):
            for h in t.hands:
                h.append(t.draw.pop())
        while True:                              # the first card: a number (rules.py)
            card = t.draw.pop()
            if card.rank.isdigit():
                break
            t.draw.insert(self.rng.randrange(len(t.draw) + 1), card)
        t.discard.append(card)
        self.colour = card.colour
        self.refill()
        self.check("the deal")

    def refill(self) -> None:
        t, unit = self.table, self.unit
        # the launcher keeps its cards from round to round (nothing takes cards out of it), so it never
        # holds more than leaves the next deal its 7 cards a player and a number card to start the pile
        # whatever the shuffle (every card that is not a number could be among those left outside): a
        # 98-card magazine (LA-14) could otherwise swallow the deck, or leave no number card to start with
        not_numbers = sum(1 for c in t.deck if not c.rank.isdigit())
        room = min(unit.capacity, len(t.deck) - 7 * len(t.hands) - 1 - not_numbers) - unit.inside
        if not t.draw:
            t.reshuffle()
        n = min(room, len(t.draw))
        if n:
            cards = [t.draw.pop() for _ in range(n)]
            t.place("launcher").extend(cards)
            unit.reload(n)
            self.stats.count("reloads")
            self.check(f"{n} cards put in the launcher")

    def press(self, seat: int, why: str) -> int:
        if self.unit.inside == 0:
            self.refill()
        n = self.unit.press(self.players[seat].think_us())
        mag = self.table.place("launcher")
        self.table.hands[seat].extend(mag[len(mag) - n:])
        del mag[len(mag) - n:]
        self.stats.count("presses")
        self.stats.count("cards fired", n)
        if n == 0:
            self.stats.count("presses firing nothing")
        self.stats.seat("presses", seat)
        self.check(f"seat {seat} presses ({why}), {n} cards")
        if self.unit.inside == 0:
            self.refill()
        return n

    # ---- play ----
    def play_round(self, first: int) -> int:
        seat, direction, n = first, 1, len(self.players)
        while True:
            self.turn += 1
            card = self.choose(seat)
            if card is None:
                self.press(seat, "no card to play")
                seat = (seat + direction) % n
                continue
            direction, skip = self.play_action(seat, card, direction)
            if self.table.hands[seat] and self.uno_call(seat):
                for _ in range(self.uno_penalty):
                    self.press(seat, "missed UNO")
            if not self.table.hands[seat]:
                return seat
            seat = (seat + direction * (2 if skip else 1)) % n

    def play_action(self, seat: int, card, direction: int) -> tuple[int, bool]:
        """Play card and carry out its action: (direction, whether the next player loses the turn)."""
        n, t = len(self.players), self.table
        self.play_card(seat, card)
        nxt = (seat + direction) % n
        if card.rank == "discard_all":
            for c in [c for c in t.hands[seat] if c.colour == card.colour]:
                t.hands[seat].remove(c)
                t.discard.insert(len(t.discard) - 1, c)        # the Discard All card stays on top
            self.check(f"seat {seat} discards all {card.colour}")
        elif card.rank in ("skip", "reverse"):
            if card.rank == "reverse":
                direction = -direction
            extra = self.choose(seat) if t.hands[seat] else None
            if extra is not None and extra.rank.isdigit():          # one more card at once
                self.play_card(seat, extra)
            return direction, card.rank == "skip" or n == 2
        elif card.rank in ("hit2", "wild_hit4"):
            for _ in range(2 if card.rank == "hit2" else 4):
                self.press(nxt, card.rank)
            return direction, True
        elif card.rank == "wild_attack":
            target = self.rng.choice([s for s in range(n) if s != seat])
            for _ in range(2):
                self.press(target, card.rank)
        elif card.rank == "wild_hit_fire":
            for _ in range(100):          # until cards come out (bounded: a launcher with nothing to give)
                if self.press(nxt, card.rank) or self.unit.inside == 0:
                    break
            return direction, True
        elif card.rank == "wild_all_hit":
            for k in range(n):
                self.press((seat + direction * (k + 1)) % n, card.rank)
        elif card.rank == "trade_hands" and t.hands[seat]:
            other = min((s for s in range(n) if s != seat), key=lambda s: len(t.hands[s]))
            t.hands[seat], t.hands[other] = t.hands[other], t.hands[seat]
            self.check(f"seat {seat} trades hands with seat {other}")
        return direction, False
