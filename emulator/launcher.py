"""The card launcher (SPEC.md section 9: decisions LA-1 to LA-14).

Each press draws exactly as SPEC.md section 6 says, with the reference algorithms of
protocol/algorithms.py: one U(1000) against the fire chance when there are cards inside
(none with an empty magazine), then one U(T) for the burst size when it fires.

Accounting: cards only enter by load_cards with the door open and only leave by
firing, so loaded_total = inside + fired_total holds after every step; the u16
fields carry the totals modulo 2**16.

Every deadline at or before an input's time runs before the input (Deadlines.catch_up):
a press at exactly the last card's time is a new press after the burst.
The door and power switch are physical: RESET new_game does not move them (LA-7).
"""
from __future__ import annotations

from unohil.protocol import ENUMS, NONE_U8, msg
from unohil.protocol.catalogue import UNITS
from unohil.protocol.devtime import wrap
from unohil.protocol.algorithms import fire_chance, fires, sample_burst

from .deadlines import Deadlines
from .model import ACTED, REPORTED, UnitModel, refused

INPUT = ENUMS["launcher_input"]
STATE = ENUMS["launcher_state"]
SOUND = ENUMS["launcher_sound"]
LIGHT = ENUMS["launcher_light"]
MODE = ENUMS["light_mode"]
PRESS = ENUMS["action"].press
STREAK_MAX = 0xFF


class Launcher(UnitModel):
    KIND = "launcher"
    INPUTS = INPUT
    STATES = STATE
    IDLE_STATES = (STATE.ready, STATE.door_open)
    OPTIONS = {"card_capacity": (UNITS["launcher"].card_capacity, 1, 254)}   # LA-14

    def __init__(self, core, **options):
        super().__init__(core, **options)
        self.deadlines = Deadlines(self)
        previous = getattr(core, "model", None)
        physical = previous if isinstance(previous, Launcher) and previous.handing_over else None
        self.handing_over = False
        self.powered = physical.powered if physical else True
        self.door_is_open = physical.door_is_open if physical else False
        self.state = self._awake_state() if self.powered else STATE.off
        self.inside = 0
        self.loaded_total = 0
        self.fired_total = 0
        self.presses = 0
        self.streak = 0
        self.burst: dict | None = None          # the press being fired: press, press_us, planned, count, fired

    @property
    def cards(self) -> int:
        return self.inside

    def shutdown(self, t):
        if self.burst is not None:
            self._result(t, knowable=t)              # RESET new_game closes the press, as power off does (LA-13)
        super().shutdown(t)
        self.handing_over = True

    def _awake_state(self) -> int:
        return STATE.door_open if self.door_is_open else self.POWER_ON

    # ---- inputs ----
    def on_input(self, t, inp, action, value):
        self.deadlines.catch_up(t)
        if inp == INPUT.power:
            return self._power(t, action)
        if inp == INPUT.door:
            return self._door(t, action)
        if self.state == STATE.off:
            return REPORTED
        if inp == INPUT.load_cards:
            return self._load(action, value)
        if action != PRESS:
            return REPORTED
        if self.state == STATE.door_open:
            return refused("wrong_state")
        if self.state == STATE.firing:
            return REPORTED
        self._press(t)
        return ACTED

    def _power(self, t, action):
        if (action == PRESS) == self.powered:
            return REPORTED
        self.powered = action == PRESS
        if self.powered:
            self.streak = 0
            self.set_state(self._awake_state())
            return ACTED
        if self.burst is not None:
            self.deadlines.clear_all()
            self._result(t, knowable=t)
        self._top(MODE.off)                          # a unit switched off shows nothing
        self.set_state(STATE.off)
        return ACTED

    def _door(self, t, action):
        opening = action == PRESS
        if opening == self.door_is_open:
            return REPORTED
        if self.state == STATE.firing:
            return refused("wrong_state")            # latched while the motor runs (LA-4)
        self.door_is_open = opening
        if self.state == STATE.off:
            return REPORTED                          # the unit is off; it reads the door when switched on
        self.emit(msg.LA_DOOR, open=int(opening), inside=self.inside)
        if not opening:
            self.streak = 0
            self._top(MODE.off)
        self.set_state(self._awake_state())
        return ACTED

    def _load(self, action, value):
        if self.state != STATE.door_open:
            return refused("wrong_state")
        if action != PRESS or value < 1 or self.inside + value > self.card_capacity:
            return refused("bad_value")
        self.inside += value
        self.loaded_total += value
        self._loaded(value)
        return ACTED

    def _loaded(self, added):
        self.emit(msg.LA_LOADED, added=added, inside=self.inside, loaded_total=self.loaded_total & 0xFFFF,
                  fired_total=self.fired_total & 0xFFFF)

    # ---- a press ----
    def _press(self, t):
        self.presses += 1
        n = self.presses & 0xFFFF
        chance = fire_chance(self.config["fire_base_permille"], self.config["fire_step_permille"], self.streak)
        self.sound(SOUND.ding)
        self.emit(msg.LA_DING, press=n, empty_streak=self.streak, chance_permille=chance)
        self.burst = {"press": n, "press_us": t, "planned": 0, "count": 0, "fired": 0}
        if self.inside == 0:
            self._result(t, knowable=t)
            return
        if not fires(self.rng, chance):
            self.streak = min(STREAK_MAX, self.streak + 1)
            self._result(t, knowable=t)
            self._top(MODE.flash)                    # the chance rises: the top light pulses (LA-11)
            return
        cfg = self.config
        planned = sample_burst(self.rng, cfg["burst_min"], cfg["burst_mode"], cfg["burst_max"])
        self.burst.update(planned=planned, count=min(planned, self.inside),
                          first_us=t + cfg["motor_us"], interval_us=cfg["card_interval_us"])
        self.sound(SOUND.fire)
        self._top(MODE.off)
        self.set_state(STATE.firing)
        self.deadlines.set(self.burst["first_us"], self._card)

    def _card(self, t):
        b = self.burst
        k = b["fired"]
        self.inside -= 1
        self.fired_total += 1
        b["fired"] = k + 1
        self.emit(msg.LA_CARD, index=k, inside=self.inside, fired_total=self.fired_total & 0xFFFF)
        if b["fired"] < b["count"]:
            self.deadlines.set(b["first_us"] + b["fired"] * b["interval_us"], self._card)
            return
        self.streak = 0
        self._result(t, knowable=t)
        self.set_state(STATE.ready)

    def _result(self, t, knowable):
        b, self.burst = self.burst, None
        self.emit(msg.LA_RESULT, press=b["press"], press_us=wrap(b["press_us"]), planned=b["planned"],
                  fired=b["fired"], inside=self.inside, fired_total=self.fired_total & 0xFFFF,
                  loaded_total=self.loaded_total & 0xFFFF, knowable_us=wrap(knowable))
        if self.inside == 0 and self.state != STATE.off:
            self.emit(msg.LA_EMPTY, fired_total=self.fired_total & 0xFFFF)
            self.sound(SOUND.empty)

    def _top(self, mode: int) -> None:
        """The top light: flashing from a press that fired nothing until the streak restarts (LA-11)."""
        if self.light_mode(LIGHT.top, NONE_U8) != mode:
            self.light(LIGHT.top, mode, NONE_U8)


MODEL = Launcher
