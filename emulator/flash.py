"""The Flash base (SPEC.md section 8: decisions FL-1 to FL-29).

Time in a game is counted on a game clock that runs in the states turn, buzzer and
flagged and stands still while the unit is paused or asleep (FL-10, FL-11): the turn
timer and the buzzer window are deadlines on that clock, FL_TURN_END.elapsed_us and
the buzzer reaction times are differences on it, and FL_PAUSE.remaining_us is what
is left of the running one. Device-time deadlines are derived from it whenever it
starts running.

Every deadline at or before an input's time runs before the input (Deadlines.catch_up):
a press at exactly the end of a turn, of the buzzer window, of the reset hold or of
the inactivity period comes after that end.

The switches (speed, power) and the held buttons are physical: RESET new_game does
not move them (FL-17).

Three unit options build the forms of the base that read document 003 another way
(FL-20 to FL-22), each reported by its capability bit: speed_at_power_on=1 reads the
speed switch only when switched on, slowest_light_only=1 lights nothing during a
buzzer race, reset_light_show=1 confirms a reset by lighting every Player button.

The inactivity period may be longer than the half-wrap a 32-bit deadline allows
(SPEC 3.2); FL-23 arms it as a countdown in steps of at most LONG_STEP_US, as a
firmware must, so the emulator follows the same rule a unit does.
"""
from __future__ import annotations

from unohil.protocol import ENUMS, NONE_I32, msg
from unohil.protocol.catalogue import UNITS
from unohil.protocol.devtime import wrap
from unohil.protocol.algorithms import pick

from .deadlines import Deadlines
from .model import ACTED, REPORTED, UnitModel, refused, variant_options

INPUT = ENUMS["flash_input"]
STATE = ENUMS["flash_state"]
LIGHT = ENUMS["flash_light"]
SOUND = ENUMS["flash_sound"]
SPEED = ENUMS["flash_speed"]
SELECT = ENUMS["flash_select_reason"]
PENALTY = ENUMS["flash_penalty_reason"]
VERDICT = ENUMS["flash_buzzer_reason"]
MODE = ENUMS["light_mode"]
PRESS = ENUMS["action"].press

BUTTONS = len(UNITS["flash"].roles.buttons)   # player_0..player_7
LONG_STEP_US = 1 << 30                        # FL-23: a long deadline is re-armed in steps of at most this
PENALTY_CARDS = 2
GAME_STATES = (STATE.turn, STATE.buzzer, STATE.flagged)
RESET_PAIR = frozenset((INPUT.play_pause, INPUT.buzzer))


def mask_of(players) -> int:
    return sum(1 << p for p in players)


class Flash(UnitModel):
    KIND = "flash"
    INPUTS = INPUT
    STATES = STATE
    IDLE_STATES = (STATE.off, STATE.setup)
    # speed_at_power_on=1, slowest_light_only=1 and reset_light_show=1 are the base's other forms (FL-20..FL-22)
    OPTIONS = {"players": (6, 2, BUTTONS), **variant_options("flash", on=False)}

    def __init__(self, core, **options):
        super().__init__(core, **options)
        self.deadlines = Deadlines(self)
        previous = getattr(core, "model", None)
        physical = previous if isinstance(previous, Flash) and previous.handing_over else None
        self.handing_over = False
        self.speed = physical.speed if physical else SPEED.unlimited
        # FL-20: where the switch is; a unit that reads it only at power-on plays at self.speed, read then
        self.switch_at = physical.switch_at if physical else SPEED.unlimited
        self.powered = physical.powered if physical else True
        self.held: set[int] = set(physical.held) if physical else set()
        if not self.powered:
            self.state = STATE.off
        self.sleep_deadline = None
        self.sleep_end = 0                       # device time the inactivity period ends (FL-23)
        self.reset_deadline = None
        self.last_edge = 0
        self._new_game()

    def _new_game(self) -> None:
        self.registered: list[int] = []         # ascending
        self.current: int | None = None          # whose turn it is (the buzzer player in buzzer mode)
        self.turn = 0
        self.turn_start = 0                      # game clock
        self.game_acc = 0                        # game clock time accumulated before run_since
        self.run_since: int | None = None        # device time the game clock last started running
        self.due: int | None = None              # game-clock deadline of the running timer (turn or window)
        self.due_fn = None
        self.timer = None                        # its device-time Deadline while the clock runs
        self.flagged: int | None = None
        self.flag_reason = SELECT.after_timeout
        self.paused_from: int | None = None
        self.slept_from: int | None = None
        self.dark: list[tuple[int, int, int]] = []   # lights turned off by sleep, restored on waking
        self.buzzer_us = 0
        self.buzzer_clock = 0
        self.opponents: list[int] = []
        self.reactions: dict[int, int] = {}      # opponent -> press minus buzzer, on the game clock

    # ---- life cycle ----
    def power_on(self, t):
        if self.powered:
            self._restart_sleep(t)

    def shutdown(self, t):
        super().shutdown(t)
        self.handing_over = True

    def check_config(self, name, value, config):
        if name == "sleep_after_us" and self.sleep_deadline is not None:
            # the inactivity period runs from the last edge whatever its length was then
            self._arm_sleep(self.now(), self.last_edge + value)
        return None

    def _arm_sleep(self, t: int, end: int) -> None:
        """FL-23: the inactivity period ends at `end`, which may lie beyond the half-wrap of 3.2's signed
        comparison; the deadline armed at t is the next step of at most LONG_STEP_US towards it."""
        self.deadlines.clear(self.sleep_deadline)
        self.sleep_end = end
        self.sleep_deadline = self.deadlines.set(min(end, t + LONG_STEP_US), self._sleep_step)

    def _sleep_step(self, t: int) -> None:
        self.sleep_deadline = None
        if t >= self.sleep_end:
            self._sleep(t)
        else:
            self._arm_sleep(t, self.sleep_end)

    # ---- clocks ----
    def turn_time(self, speed: int | None = None) -> int:
        speed = self.speed if speed is None else speed
        if speed == SPEED.four_seconds:
            return self.config["turn_short_us"]
        if speed == SPEED.six_seconds:
            return self.config["turn_long_us"]
        return 0

    def game_clock(self, t: int) -> int:
        return self.game_acc + (t - self.run_since if self.run_since is not None else 0)

    def _run(self, t: int) -> None:
        """Start the game clock and, if a timer is set on it, its device-time deadline."""
        if self.run_since is None:
            self.run_since = t
        if self.due is not None and self.timer is None:
            self.timer = self.deadlines.set(t + self.due - self.game_clock(t), self._timer_due)

    def _freeze(self, t: int) -> None:
        if self.run_since is not None:
            self.game_acc += t - self.run_since
            self.run_since = None
        self.deadlines.clear(self.timer)
        self.timer = None

    def _set_timer(self, t: int, length: int, fn) -> None:
        self._drop_timer()
        self.due, self.due_fn = self.game_clock(t) + length, fn
        self._run(t)

    def _drop_timer(self) -> None:
        self.deadlines.clear(self.timer)
        self.timer, self.due, self.due_fn = None, None, None

    def _timer_due(self, t: int) -> None:
        fn = self.due_fn
        self.timer, self.due, self.due_fn = None, None, None
        fn(t)

    def remaining(self, t: int) -> int:
        return 0 if self.due is None else self.due - self.game_clock(t)

    def _restart_sleep(self, t: int) -> None:
        self.last_edge = t
        self.deadlines.clear(self.sleep_deadline)
        self.sleep_deadline = None
        if self.state not in (STATE.off, STATE.asleep):
            self._arm_sleep(t, t + self.config["sleep_after_us"])

    # ---- inputs ----
    def on_input(self, t, inp, action, value):
        if inp < BUTTONS and inp >= self.players:
            return refused("bad_value")              # no such button on this base
        if inp == INPUT.speed_switch and action == PRESS and value > SPEED.four_seconds:
            return refused("bad_value")
        self.deadlines.catch_up(t)
        result = self._edge(t, inp, action, value)
        if inp in RESET_PAIR:
            self._track_hold(t, inp, action)
        self._restart_sleep(t)                       # any edge, acted on or not (FL-11)
        return result

    def _edge(self, t, inp, action, value):
        if inp == INPUT.power:
            return self._power(t, action)
        if inp == INPUT.speed_switch:
            if action != PRESS:
                return REPORTED
            self.switch_at = value
            if self.speed_at_power_on:
                return REPORTED                      # FL-20: the switch moved; it is read at power-on
            self._read_speed()
            return ACTED
        if action != PRESS or self.state == STATE.off:
            return REPORTED
        return _PRESS[self.state](self, t, inp)

    def _read_speed(self) -> None:
        self.speed = self.switch_at
        self.emit(msg.FL_SPEED, speed=self.speed, turn_time_us=self.turn_time())

    def _track_hold(self, t, inp, action):
        if action == PRESS:
            self.held.add(inp)
            if self.held >= RESET_PAIR and self.reset_deadline is None and self.state != STATE.off:
                hold = self.config["reset_hold_us"]
                self.reset_deadline = self.deadlines.set(t + hold, lambda at: self._reset(at, hold))
        else:
            self.held.discard(inp)
            self.deadlines.clear(self.reset_deadline)
            self.reset_deadline = None

    # ---- presses, per state ----
    def _press_setup(self, t, inp):
        if inp < BUTTONS:
            if inp in self.registered:
                return REPORTED
            self.registered = sorted(self.registered + [inp])
            self.emit(msg.FL_REGISTERED, player=inp, count=len(self.registered))
            self.sound(SOUND.registered)
            return ACTED
        if inp == INPUT.play_pause:
            if len(self.registered) < 2:
                return refused("wrong_state")
            self.turn = 0
            self.game_acc, self.run_since = 0, t
            self.emit(msg.FL_GAME_START, players_mask=mask_of(self.registered), count=len(self.registered))
            self.sound(SOUND.start)
            self._select(t, SELECT.start)
            return ACTED
        return REPORTED                              # BUZZER outside a turn (FL-6)

    def _press_turn(self, t, inp):
        if inp == self.current:
            self._end_turn(t)
            self._select(t, SELECT.next)
            return ACTED
        if inp == INPUT.buzzer:
            self._buzzer(t)
            return ACTED
        if inp == INPUT.play_pause:
            self._pause(t)
            return ACTED
        return REPORTED

    def _press_buzzer(self, t, inp):
        if inp in self.opponents and inp not in self.reactions:
            self.reactions[inp] = self.game_clock(t) - self.buzzer_clock
            if len(self.reactions) == len(self.opponents):
                self._drop_timer()
                self._verdict_pressed(t)
            return ACTED
        if inp == self.current and not self.reactions:
            self._cancel(t)
            return ACTED
        if inp == INPUT.play_pause:
            self._pause(t)
            return ACTED
        return REPORTED

    def _press_flagged(self, t, inp):
        if inp == self.flagged:
            self.light(LIGHT.player, MODE.off, inp)
            self.flagged = None
            self._select(t, self.flag_reason)
            return ACTED
        if inp == INPUT.play_pause:
            self._pause(t)
            return ACTED
        return REPORTED

    def _press_paused(self, t, inp):
        if inp == INPUT.play_pause:
            self._resume(t)
            return ACTED
        return REPORTED

    def _press_asleep(self, t, inp):
        if inp == INPUT.play_pause:
            self._wake(t)
            return ACTED
        return REPORTED

    # ---- turns ----
    def _select(self, t, reason):
        player = pick(self.rng, self.registered)
        self.turn = (self.turn + 1) & 0xFFFF
        self.current = player
        length = self.turn_time()
        self.emit(msg.FL_SELECTED, player=player, turn=self.turn, turn_time_us=length, reason=reason)
        self.light(LIGHT.player, MODE.on, player)
        self.sound(SOUND.select)
        self.set_state(STATE.turn)
        self.turn_start = self.game_clock(t)
        if length:
            self._set_timer(t, length, self._timeout)
        else:
            self._drop_timer()

    def _end_turn(self, t):
        self._drop_timer()
        self.emit(msg.FL_TURN_END, player=self.current, turn=self.turn,
                  elapsed_us=self.game_clock(t) - self.turn_start)
        self.light(LIGHT.player, MODE.off, self.current)

    def _timeout(self, t):
        player = self.current
        self.sound(SOUND.timeout)
        self.emit(msg.FL_TIMEOUT, player=player, turn=self.turn)
        self.emit(msg.FL_PENALTY, player=player, cards=PENALTY_CARDS, reason=PENALTY.timeout)
        self.light(LIGHT.player, MODE.flash, player)
        self.flagged, self.flag_reason = player, SELECT.after_timeout
        self.set_state(STATE.flagged)

    # ---- buzzer ----
    def _buzzer(self, t):
        self._drop_timer()                               # the turn timer is discarded
        self.opponents = [p for p in self.registered if p != self.current]
        self.reactions = {}
        self.buzzer_us = t
        self.buzzer_clock = self.game_clock(t)
        self.emit(msg.FL_BUZZER, player=self.current, opponents_mask=mask_of(self.opponents))
        self.sound(SOUND.buzzer)
        if not self.slowest_light_only:              # FL-22: the document's base lights nothing in the race
            for o in self.opponents:
                self.light(LIGHT.player, MODE.flash, o)
        self.set_state(STATE.buzzer)
        self._set_timer(t, self.config["buzzer_window_us"], self._window_end)

    def _cancel(self, t):
        self._drop_timer()
        self.emit(msg.FL_BUZZER_CANCEL, player=self.current)
        self.sound(SOUND.cancel)
        for o in self.opponents:
            if self.light_mode(LIGHT.player, o) != MODE.off:
                self.light(LIGHT.player, MODE.off, o)
        self._end_turn(t)
        self._select(t, SELECT.after_cancel)

    def _verdict_pressed(self, t):
        last = max(self.reactions.values())
        tie = self.config["buzzer_tie_us"]
        tied = [p for p, r in self.reactions.items() if last - r < tie]
        slowest = min(p for p in tied if self.reactions[p] == last)
        reason = VERDICT.slowest if len(tied) == 1 else VERDICT.slowest_tie
        self._verdict(t, slowest, reason, mask_of(tied))

    def _window_end(self, t):
        missing = [p for p in self.opponents if p not in self.reactions]
        self._verdict(t, min(missing), VERDICT.non_presser, mask_of(missing))

    def _verdict(self, t, slowest, reason, tied_mask):
        reaction = [self.reactions.get(i, NONE_I32) for i in range(BUTTONS)]
        self.emit(msg.FL_BUZZER_VERDICT, slowest=slowest, reason=reason, tied_mask=tied_mask,
                  buzzer_us=wrap(self.buzzer_us), decisive_us=wrap(t), knowable_us=wrap(t), reaction_us=reaction)
        self.emit(msg.FL_PENALTY, player=slowest, cards=PENALTY_CARDS, reason=PENALTY.buzzer_slowest)
        for p in sorted(set(self.opponents) | {self.current}):
            if p != slowest and self.light_mode(LIGHT.player, p) != MODE.off:
                self.light(LIGHT.player, MODE.off, p)
        self.light(LIGHT.player, MODE.flash, slowest)
        self.sound(SOUND.slowest)
        self.flagged, self.flag_reason = slowest, SELECT.after_flag
        self.set_state(STATE.flagged)

    # ---- pause, sleep, reset, power ----
    def _pause(self, t):
        left = self.remaining(t)
        self._freeze(t)
        self.paused_from = self.state
        self.emit(msg.FL_PAUSE, paused=1, remaining_us=left)
        self.sound(SOUND.pause)
        self.set_state(STATE.paused)

    def _resume(self, t):
        self.emit(msg.FL_PAUSE, paused=0, remaining_us=self.remaining(t))
        self.sound(SOUND.resume)
        self._run(t)
        self.set_state(self.paused_from)

    def _sleep(self, t):
        self.sleep_deadline = None
        self.slept_from = self.state
        if self.state in GAME_STATES:
            self._freeze(t)
        self.emit(msg.FL_SLEEP, asleep=1)
        self.sound(SOUND.sleep)
        self.dark = [(light, mode, target) for (light, _), (mode, target) in sorted(self.lights.items()) if mode]
        for light, _mode, target in self.dark:
            self.light(light, MODE.off, target)
        self.set_state(STATE.asleep)

    def _wake(self, t):
        """One PLAY/PAUSE resumes play, from sleep as from pause (FL-11): the game goes on in the
        state it was in before it slept or paused, its timer running again from now."""
        self.emit(msg.FL_SLEEP, asleep=0)
        self.sound(SOUND.wake)
        for light, mode, target in self.dark:
            self.light(light, mode, target)
        self.dark = []
        back = self.slept_from
        if back == STATE.paused:
            # it slept while paused: the same press ends the pause, which FL_PAUSE(0) closes
            self.emit(msg.FL_PAUSE, paused=0, remaining_us=self.remaining(t))
            back = self.paused_from
        if back in GAME_STATES:
            self._run(t)
        self.set_state(back)

    def _reset(self, t, hold):
        self.reset_deadline = None
        self._drop_timer()
        self.emit(msg.FL_RESET, held_us=hold)
        self.sound(SOUND.reset)
        for (light, _), (mode, target) in sorted(self.lights.items()):
            if mode:
                self.light(light, MODE.off, target)
        if self.reset_light_show:                    # FL-21: "until the lights and the sounds work"
            for mode in (MODE.on, MODE.off):
                for button in range(self.players):
                    self.light(LIGHT.player, mode, button)
        previous = self.state
        self._new_game()
        self.state = STATE.setup
        self.emit(msg.STATE, state=STATE.setup, previous=previous)
        self._restart_sleep(t)

    def _power(self, t, action):
        if (action == PRESS) == self.powered:
            return REPORTED
        self.powered = action == PRESS
        if self.powered:
            self._new_game()
            self.set_state(self.POWER_ON)
            if self.speed_at_power_on:
                self._read_speed()                   # FL-20: the speed is read when switched on
            return ACTED
        self.deadlines.clear_all()
        self.sleep_deadline = self.reset_deadline = None
        self.dark = []
        for (light, _), (mode, target) in sorted(self.lights.items()):
            if mode:
                self.light(light, MODE.off, target)
        self._new_game()
        self.set_state(STATE.off)
        return ACTED


_PRESS = {
    STATE.setup: Flash._press_setup, STATE.turn: Flash._press_turn, STATE.buzzer: Flash._press_buzzer,
    STATE.flagged: Flash._press_flagged, STATE.paused: Flash._press_paused, STATE.asleep: Flash._press_asleep,
}

MODEL = Flash
