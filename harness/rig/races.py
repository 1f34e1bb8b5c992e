"""The races a unit runs through its rig, each seen twice: as the unit reports it and as the rig saw it.

Every race begins with RESET new_game (a command, not an input) and then only physical edges: the rig
places the cards (a feeder line), presses TIMER, the buttons, the paddles. Times of presses are chosen
in rig time from what the rig captured (the green lamp, the sounder of the buzzer), a random 0-10 ms
on top so that presses land anywhere in a polling unit's cycle.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from unohil.protocol import catalogue as cat
from unohil.protocol.catalogue import NONE_I32

from unohil.harness.rig.session import AHEAD_US, RigSession

SIDE = cat.ENUM_NAMES["side"]
SD_REASON = cat.ENUM_NAMES["showdown_reason"]
FL_REASON = cat.ENUM_NAMES["flash_buzzer_reason"]
PHASE_US = 10_000           # presses land at a random moment of this span: anywhere in a poll cycle
REACT_US = 200_000          # the first press this long after what it answers (green, BUZZER)


@dataclass
class Race:
    """One race: who the unit judged first ("a", "b" or "tie"), its verdict frame, and the rig's view."""
    outcome: str
    verdict: object
    rig: dict[str, int] = field(default_factory=dict)       # rig times: edge name -> us
    unit: dict[str, int] = field(default_factory=dict)      # unit times: event name -> us


def showdown_setup(s: RigSession, tie_window_us: int | None = None) -> None:
    config = {"countdown_min_us": 500_000, "countdown_max_us": 500_000, "beep_interval_us": 2_000_000}
    if tie_window_us is not None:
        config["tie_window_us"] = tie_window_us
    s.unit.reset("new_game")
    s.unit.apply_config(config)


def showdown_countdown(s: RigSession) -> int:
    """A fresh game: one card placed by the feeder, TIMER pressed; the rig time of the TIMER press."""
    s.new_race()
    s.unit.reset("new_game")
    t = s.rig_now() + AHEAD_US
    s.edge(t, "load_cards", "press", 1)
    timer = t + 20_000
    s.press(timer, "timer")
    return timer


SHOWDOWN_SEATS = ("paddle_a", "paddle_b")


def showdown_race(s: RigSession, offset_us: int, rng: random.Random, seats=SHOWDOWN_SEATS) -> Race:
    """Seat A (seats[0]) at the green lamp + REACT_US (+ a random phase), seat B offset_us after A (rig time);
    "a": the unit judged seat A first."""
    timer = showdown_countdown(s)
    green = s.wait_capture(s.line("light", "green"), after_us=timer)
    ta = green.dev_us + REACT_US + rng.randrange(PHASE_US)
    tb = ta + offset_us
    s.press(ta, seats[0])
    s.press(tb, seats[1])
    v = s.wait_unit("SD_VERDICT")
    m = v.msg
    reason = SD_REASON.get(m.reason, str(m.reason))
    if reason == "first_press":
        winner = "paddle_a" if SIDE.get(m.loser) == "b" else "paddle_b"
        outcome = "a" if winner == seats[0] else "b"
    elif reason in ("line_tiebreak", "even_split"):
        outcome = "tie"
    else:
        outcome = reason
    s.settle()
    return Race(outcome, v, rig={"green": green.dev_us, "press_a": ta, "press_b": tb},
                unit={name: _unwrap_near(getattr(m, f"{name}_us"), v.dev_us)
                      for name in ("green", "press_a", "press_b") if getattr(m, f"{name}_us") != cat.NONE_U32})


def _unwrap_near(u32: int, near: int) -> int:
    """The unwrapped time of a u32 device time field, taking the one closest to near."""
    return near + ((u32 - near + (1 << 31)) % (1 << 32)) - (1 << 31)


FLASH_PAIR = ("player_0", "player_1")          # the two seats raced by default; player_2 presses BUZZER


BUTTONS = cat.UNITS["flash"].roles.buttons        # button i (FL_SELECTED.player, reaction_us[i]) -> its input


def seat_index(seat: str) -> int:
    """The button number of a seat's input: what FL_SELECTED.player and the verdict's arrays index by."""
    return BUTTONS.index(seat)


def buzzer_presser(seats) -> str:
    """The seat that presses BUZZER in a race between these two: the first seat that is neither."""
    return next(n for n in seat_names() if n not in seats)


def seat_names() -> list[str]:
    """Every seat a Flash base can have, in button order (a base has the first IDENTITY.players of them)."""
    return list(BUTTONS)


def flash_setup(s: RigSession, tie_us: int | None = None) -> None:
    if tie_us is not None:
        s.unit.reset("new_game")                # a race ends flagged: configuration waits for setup
        s.unit.apply_config({"buzzer_tie_us": tie_us})


def flash_race(s: RigSession, offset_us: int, rng: random.Random, seats=FLASH_PAIR) -> Race:
    """The two seats and a third (buzzer_presser) registered; turns pass until the third's; it presses BUZZER;
    seat A (seats[0]) answers the buzzer's sound + REACT_US (+ a random phase), seat B offset_us after A. The
    unit names the slowest of its two opponents: "a" = seat A was judged faster."""
    s.new_race()
    s.unit.reset("new_game")
    presser = buzzer_presser(seats)
    t = s.rig_now() + AHEAD_US
    for i, button in enumerate(sorted((*seats, presser), key=seat_index)):
        s.press(t + i * 60_000, button, 20_000)
    start = t + 200_000
    s.press(start, "play_pause", 20_000)
    selected = s.wait_unit("FL_SELECTED")
    at = start + 100_000
    while selected.msg.player != seat_index(presser):     # the current player presses their button: the next turn
        s.press(at, BUTTONS[selected.msg.player], 20_000)
        selected = s.wait_unit("FL_SELECTED")
        at += 100_000
    s.press(at, "buzzer", 20_000)
    sounder = s.wait_capture(s.line("sound", "buzzer"), after_us=at)
    ta = sounder.dev_us + REACT_US + rng.randrange(PHASE_US)
    tb = ta + offset_us
    s.press(ta, seats[0], 20_000)
    s.press(tb, seats[1], 20_000)
    v = s.wait_unit("FL_BUZZER_VERDICT")
    m = v.msg
    reason = FL_REASON.get(m.reason, str(m.reason))
    if reason == "slowest":
        outcome = "a" if m.slowest == seat_index(seats[1]) else "b"
    elif reason == "slowest_tie":
        outcome = "tie"
    else:
        outcome = reason
    s.settle()
    a, b = (m.reaction_us[seat_index(seat)] for seat in seats)
    return Race(outcome, v, rig={"buzzer": sounder.dev_us, "press_a": ta, "press_b": tb},
                unit={"reaction_a": a, "reaction_b": b} if a != NONE_I32 else {})


#: kind -> (setup(session, tie), race(session, offset, rng, seats), the tie parameter, the seats raced by default)
FAIR_RACES = {
    "showdown": (showdown_setup, showdown_race, "tie_window_us", SHOWDOWN_SEATS),
    "flash": (flash_setup, flash_race, "buzzer_tie_us", FLASH_PAIR),
}
