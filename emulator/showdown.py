"""The Showdown unit (protocol/SPEC.md section 7).

Windows are half-open, each starting at its cause: a paddle press counts from the
green time inclusive (1 us earlier is a false start); a second press ties while
t2 - t1 < tie_window_us; a first press is in time while t < green + go_timeout_us.
A press at exactly a window's end reaches the model before the timer of that end
(inputs run first), so _catch_up runs the end's work first when the rule puts it
first. The one exception the decisions make: a second press at exactly
t1 + tie_window_us is recorded in the first_press verdict (not a tie).
"""
from __future__ import annotations

from unohil.protocol import ENUMS, NONE_I32, NONE_U8, NONE_U32, msg
from unohil.protocol.catalogue import UNITS
from unohil.protocol.devtime import wrap
from unohil.protocol.algorithms import countdown, lands_on_b

from .model import ACTED, REPORTED, UnitModel, refused, variant_options

INPUT = ENUMS["showdown_input"]
STATE = ENUMS["showdown_state"]
LIGHT = ENUMS["showdown_light"]
SOUND = ENUMS["showdown_sound"]
REASON = ENUMS["showdown_reason"]
SIDE = ENUMS["side"]
MODE = ENUMS["light_mode"]
PRESS = ENUMS["action"].press


class Showdown(UnitModel):
    KIND = "showdown"
    INPUTS = INPUT
    STATES = STATE
    IDLE_STATES = (STATE.empty, STATE.loaded)
    # landing_sensor=0 and false_start_launch=0 are the unit's other forms (SD-11, SD-3)
    OPTIONS = {"card_capacity": (UNITS["showdown"].card_capacity, 1, 254), "players": (2, 2, 2),
               **variant_options("showdown", on=True)}

    def __init__(self, core, **options):
        super().__init__(core, **options)
        self.tray = 0               # cards in the tray
        self.in_play = 0            # cards of the running showdown
        self.green_t = 0
        self.beep_k = 0
        self.first: int | None = None      # side of the first valid press
        self.press: list[int | None] = [None, None]
        self.tie = False
        self.timer = None           # the one pending timer: beep, green, no-press, verdict or landing

    @property
    def cards(self) -> int:
        return self.tray

    def light_key(self, light: int, target: int) -> tuple[int, int]:
        return (light, 0)           # one red lamp, whatever side it points at

    def shutdown(self, t):
        if self.tray:
            self.emit(msg.SD_CARDS, cards=0)     # RESET new_game forgets the cards (SD-15)
        super().shutdown(t)

    # ---- inputs ----
    def on_input(self, t, inp, action, value):
        if inp == INPUT.load_cards:
            return self._load(action, value)
        if action != PRESS:
            return REPORTED
        self._catch_up(t)
        if inp == INPUT.timer:
            if self.state == STATE.empty:
                return refused("wrong_state")
            if self.state == STATE.loaded:
                self._countdown(t)
                return ACTED
            return REPORTED
        return self._paddle(t, inp)

    def _load(self, action, value):
        if self.state not in (STATE.empty, STATE.loaded):
            return refused("wrong_state")
        tray = self.tray + value if action == PRESS else self.tray - value
        if value == 0 or not 0 <= tray <= self.card_capacity:
            return refused("bad_value")
        self.tray = tray
        self.emit(msg.SD_CARDS, cards=tray)
        self.set_state(STATE.loaded if tray else STATE.empty)
        return ACTED

    def _catch_up(self, t):
        """Run the work of a deadline at or before t that the rules put before this input."""
        if self.state == STATE.countdown and t >= self.green_t:
            self._cancel()
            self.core.run_timer(self._green, self.green_t)
        if self.state == STATE.go and t >= self.green_t + self.config["go_timeout_us"]:
            self._cancel()
            self.core.run_timer(self._no_press, self.green_t + self.config["go_timeout_us"])
        if self.state == STATE.racing and not self.tie and t > self.press[self.first] + self.config["tie_window_us"]:
            self._cancel()
            self.core.run_timer(self._first_press_verdict, self.press[self.first] + self.config["tie_window_us"])
        if self.state == STATE.racing and self.tie and t >= self.press[self.first] + self.config["flight_us"]:
            self._cancel()
            self.core.run_timer(self._landing, self.press[self.first] + self.config["flight_us"])

    def _paddle(self, t, side):
        if self.state == STATE.countdown:
            self._false_start(t, side)
            return ACTED
        if self.state == STATE.go:
            self._first_press(t, side)
            return ACTED
        if self.state == STATE.racing and self.press[side] is None:
            self.press[side] = t
            if t - self.press[self.first] < self.config["tie_window_us"]:
                self.tie = True
                self._cancel()
                self.timer = self.at(self.press[self.first] + self.config["flight_us"], self._landing)
                return ACTED
        return REPORTED

    # ---- the countdown ----
    def _countdown(self, t):
        cfg = self.config
        self.in_play = self.tray
        self.green_t = t + countdown(self.rng, cfg["countdown_min_us"], cfg["countdown_max_us"])
        self.first, self.press, self.tie = None, [None, None], False
        self.emit(msg.SD_COUNTDOWN, cards=self.in_play)
        self.light(LIGHT.red, MODE.flash, SIDE.none)
        self.beep_k = 0
        self._beep(t)
        self.set_state(STATE.countdown)

    def _beep(self, t):
        k = self.beep_k
        self.emit(msg.SD_BEEP, index=k)
        self.sound(SOUND.beep, k)
        nxt = t + self.config["beep_interval_us"]
        self.beep_k = k + 1
        self.timer = self.at(nxt, self._beep) if nxt < self.green_t else self.at(self.green_t, self._green)

    def _green(self, t):
        self.light(LIGHT.red, MODE.off, SIDE.none)
        self.light(LIGHT.green, MODE.flash, SIDE.none)
        self.sound(SOUND.go)
        self.emit(msg.SD_GREEN)
        self.set_state(STATE.go)
        self.timer = self.at(t + self.config["go_timeout_us"], self._no_press)

    # ---- outcomes ----
    def _false_start(self, t, side):
        self._cancel()
        self.press[side] = t
        self.light(LIGHT.red, MODE.on, side)
        self.sound(SOUND.false_start)
        if self.false_start_launch:
            self._launch(toward=side)
        else:
            self.tray = 0           # SD-3: nothing is thrown; the false starter takes the cards from the tray
        self._verdict(loser=side, reason=REASON.false_start, decisive=t, knowable=t)

    def _first_press(self, t, side):
        self._cancel()
        self.first = side
        self.press[side] = t
        self._launch(toward=1 - side)
        self.set_state(STATE.racing)
        self.timer = self.at(t + self.config["tie_window_us"], self._first_press_verdict)

    def _launch(self, toward):
        self.tray = 0
        self.emit(msg.SD_LAUNCH, toward=toward, cards=self.in_play)
        self.sound(SOUND.launch)

    def _first_press_verdict(self, t):
        self._verdict(loser=1 - self.first, reason=REASON.first_press, decisive=self.press[self.first],
                      knowable=t)

    def _landing(self, t):
        w = self.config["tie_window_us"]
        d = self.press[SIDE.b] - self.press[SIDE.a]
        # Drawn with or without a sensor (SD-11), so both kinds of unit stay on one random sequence
        on_b = sum(lands_on_b(self.rng, d, w) for _ in range(self.in_play))
        on_a = self.in_play - on_b
        if not self.landing_sensor:
            # SD-11: the unit cannot see the line; the players read it themselves
            self._verdict(loser=SIDE.none, reason=REASON.line_tiebreak, decisive=max(self.press), knowable=t)
            return
        self.emit(msg.SD_LANDING, landed_a=on_a, landed_b=on_b)
        if on_a == on_b:
            loser, reason = SIDE.none, REASON.even_split
        else:
            loser, reason = (SIDE.a if on_a > on_b else SIDE.b), REASON.line_tiebreak
        self._verdict(loser=loser, reason=reason, decisive=max(self.press), knowable=t, landed=(on_a, on_b))

    def _no_press(self, t):
        self._verdict(loser=SIDE.none, reason=REASON.no_press, decisive=t, knowable=t)

    def _verdict(self, loser, reason, decisive, knowable, landed=(NONE_U8, NONE_U8)):
        self.timer = None
        if self.light_mode(LIGHT.green):
            self.light(LIGHT.green, MODE.off, SIDE.none)
        pa, pb = self.press
        green = self.green_t
        self.emit(msg.SD_VERDICT, loser=loser, reason=reason, cards=self.in_play, landed_a=landed[0],
                  landed_b=landed[1],
                  press_a_us=NONE_U32 if pa is None else wrap(pa), press_b_us=NONE_U32 if pb is None else wrap(pb),
                  reaction_a_us=NONE_I32 if pa is None else pa - green,
                  reaction_b_us=NONE_I32 if pb is None else pb - green,
                  green_us=wrap(green), decisive_us=wrap(decisive), knowable_us=wrap(knowable))
        self.set_state(STATE.loaded if reason == REASON.no_press else STATE.empty)

    def _cancel(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


MODEL = Showdown
