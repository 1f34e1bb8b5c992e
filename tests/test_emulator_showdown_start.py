"""Showdown (SPEC.md 7) up to the race: loading the cards, the countdown, and both sides of green to the
microsecond (false starts)."""
from __future__ import annotations

from unohil.protocol import ENUMS, NONE_I32, NONE_U8, NONE_U32, msg
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

from showdown_unit import (A, B, DISP, ERR, GREEN, LIGHT, LOAD, NONE, PRESS, R, RELEASE, SOUND, SRC, ST, T0, TIMER,
                           Unit, seen)


def test_loading_adds_and_removes_cards():
    u = Unit(cards=0)
    p = u.p
    assert p.request(msg.INPUT(LOAD, PRESS, 2)).name == "ACK"
    assert p.request(msg.INPUT(LOAD, PRESS, 10)).name == "ACK"          # 12 = capacity
    r = p.request(msg.INPUT(LOAD, PRESS, 1))
    assert (r.name, r.msg.error) == ("NAK", ERR.bad_value)              # 13 > capacity
    r = p.request(msg.INPUT(LOAD, PRESS, 0))
    assert (r.name, r.msg.error) == ("NAK", ERR.bad_value)
    assert p.request(msg.INPUT(LOAD, RELEASE, 5)).name == "ACK"         # 7 left
    r = p.request(msg.INPUT(LOAD, RELEASE, 8))
    assert (r.name, r.msg.error) == ("NAK", ERR.bad_value)
    assert p.request(msg.INPUT(LOAD, RELEASE, 7)).name == "ACK"         # the tray emptied by hand
    p.run_for(0)
    assert [f.msg.cards for f in p.events("SD_CARDS")] == [2, 12, 7, 0]
    assert [(f.msg.state, f.msg.previous) for f in p.events("STATE")] == [(ST.loaded, ST.empty),
                                                                          (ST.empty, ST.loaded)]
    refusals = [m for m in seen(u, LOAD) if m.disposition == DISP.refused]
    assert [m.detail for m in refusals] == [ERR.bad_value] * 3


def test_capacity_option():
    link = VirtualLink("showdown", card_capacity=3)
    p = Probe(link)
    assert p.request(msg.INPUT(LOAD, PRESS, 3)).name == "ACK"
    assert p.request(msg.INPUT(LOAD, PRESS, 1)).msg.error == ERR.bad_value
    assert p.request(msg.STATUS_GET()).msg.cards == 3


def test_timer_with_no_cards_is_refused():
    u = Unit(cards=0)
    r = u.p.request(msg.INPUT(TIMER, PRESS, 0))
    assert (r.name, r.msg.error) == ("NAK", ERR.wrong_state)
    u.inject(T0, TIMER)                                   # the same through INJECT
    u.settle(T0 + 1000)
    refused = seen(u, TIMER)
    assert [(m.source, m.disposition, m.detail) for m in refused] == [(SRC.host, DISP.refused, ERR.wrong_state),
                                                                     (SRC.injected, DISP.refused, ERR.wrong_state)]
    assert not u.p.events("SD_COUNTDOWN") and u.state() == ST.empty


def test_loading_refused_during_a_showdown():
    u = Unit()
    u.timer()
    u.inject(T0 + 1, LOAD, PRESS, 1)
    u.inject(GREEN + 1, LOAD, RELEASE, 1)
    u.settle()
    assert [(m.disposition, m.detail) for m in seen(u, LOAD)] == [(DISP.refused, ERR.wrong_state)] * 2


# ---- the countdown ----

def test_countdown_beeps_and_green():
    u = Unit(countdown=1_250_000)
    u.timer()
    u.settle(1_250_000 + T0 + 10)
    green = T0 + 1_250_000
    trace = [e for e in u.trace() if e[1] != "INPUT_SEEN"]
    assert trace == [
        (T0, "SD_COUNTDOWN", (2,)),
        (T0, "LIGHT", (LIGHT.red, 2, NONE)),
        (T0, "SD_BEEP", (0,)), (T0, "SOUND", (SOUND.beep, 0)),
        (T0, "STATE", (ST.countdown, ST.loaded)),
        (T0 + 500_000, "SD_BEEP", (1,)), (T0 + 500_000, "SOUND", (SOUND.beep, 1)),
        (T0 + 1_000_000, "SD_BEEP", (2,)), (T0 + 1_000_000, "SOUND", (SOUND.beep, 2)),
        (green, "LIGHT", (LIGHT.red, 0, NONE)),
        (green, "LIGHT", (LIGHT.green, 2, NONE)),
        (green, "SOUND", (SOUND.go, 0)),
        (green, "SD_GREEN", ()),
        (green, "STATE", (ST.go, ST.countdown)),
    ]


def test_no_beep_at_the_green_instant():
    u = Unit(countdown=1_000_000)
    u.timer()
    u.settle(2_000_000)
    assert [f.time_us for f in u.p.events("SD_BEEP")] == [T0, T0 + 500_000]
    assert u.p.events("SD_GREEN")[0].time_us == T0 + 1_000_000


def test_countdown_length_is_random_within_range_and_seeded():
    def greens(seed):
        u = Unit(seed=seed, countdown=None, countdown_min_us=2_000_000, countdown_max_us=2_000_100,
                 go_timeout_us=100_000)
        out = []
        for i in range(30):
            t = u.link.device.now() + 10
            u.inject(t, TIMER)
            out.append(u.p.wait_event("SD_GREEN", 10_000_000).time_us - t)
            u.verdict()                                    # no_press: the cards stay
        return out
    a = greens(1)
    assert all(2_000_000 <= d <= 2_000_100 for d in a)
    assert len(set(a)) > 10
    assert greens(1) == a and greens(2) != a


def test_timer_during_countdown_and_go_is_reported():
    u = Unit()
    u.timer()
    u.inject(T0 + 5, TIMER)
    u.inject(GREEN + 5, TIMER)
    u.settle()
    assert [m.disposition for m in seen(u, TIMER)] == [DISP.acted, DISP.reported, DISP.reported]
    assert len(u.p.events("SD_COUNTDOWN")) == 1


# ---- the green boundary ----

def test_press_one_us_before_green_is_a_false_start():
    u = Unit(cards=3)
    u.timer()
    u.inject(GREEN - 1, B)
    v = u.verdict()
    u.settle()
    fs = GREEN - 1
    assert v.time_us == fs
    m = v.msg
    assert (m.loser, m.reason, m.cards, m.landed_a, m.landed_b) == (B, R.false_start, 3, NONE_U8, NONE_U8)
    assert (m.press_a_us, m.press_b_us) == (NONE_U32, fs)
    assert (m.reaction_a_us, m.reaction_b_us) == (NONE_I32, -1)
    assert (m.green_us, m.decisive_us, m.knowable_us) == (GREEN, fs, fs)
    after = [e for e in u.trace(fs) if e[1] != "INPUT_SEEN"]
    assert after == [
        (fs, "LIGHT", (LIGHT.red, 1, B)),
        (fs, "SOUND", (SOUND.false_start, 0)),
        (fs, "SD_LAUNCH", (B, 3)),                  # the cards fly at the false starter
        (fs, "SOUND", (SOUND.launch, 0)),
        (fs, "SD_VERDICT", tuple(m[1:])),
        (fs, "STATE", (ST.empty, ST.countdown)),
    ]
    assert not u.p.events("SD_GREEN")
    assert u.p.request(msg.STATUS_GET()).msg.cards == 0


def test_a_false_start_on_a_unit_that_does_not_throw_then():
    """SD-3's other form (false_start_launch clear): the red light and the verdict, nothing thrown; the
    false starter takes the cards, so the tray is empty from the verdict on."""
    u = Unit(cards=3, options={"false_start_launch": 0})
    assert not u.p.request(msg.HELLO(1, 0)).msg.caps & (1 << ENUMS["capability"].false_start_launch)
    u.timer()
    u.inject(GREEN - 1, B)
    v = u.verdict()
    u.settle()
    fs = GREEN - 1
    after = [e[1:] for e in u.trace(fs) if e[1] != "INPUT_SEEN"]
    assert after == [("LIGHT", (LIGHT.red, 1, B)), ("SOUND", (SOUND.false_start, 0)),
                     ("SD_VERDICT", tuple(v.msg[1:])), ("STATE", (ST.empty, ST.countdown))]
    assert (v.msg.loser, v.msg.reason, v.msg.cards) == (B, R.false_start, 3)
    assert u.p.request(msg.STATUS_GET()).msg.cards == 0


def test_press_at_green_is_valid_with_reaction_zero():
    u = Unit()
    u.timer()
    u.inject(GREEN, A)
    v = u.verdict().msg
    assert (v.loser, v.reason, v.reaction_a_us, v.press_a_us) == (B, R.first_press, 0, GREEN)
    assert u.p.events("SD_GREEN")[0].time_us == GREEN


def test_press_one_us_after_green():
    u = Unit()
    u.timer()
    u.inject(GREEN + 1, B)
    v = u.verdict().msg
    assert (v.loser, v.reason, v.reaction_b_us, v.reaction_a_us) == (A, R.first_press, 1, NONE_I32)


def test_countdown_stops_at_a_false_start():
    u = Unit()
    u.timer()
    u.inject(T0 + 700_000, A)
    u.settle()
    assert [f.time_us for f in u.p.events("SD_BEEP")] == [T0, T0 + 500_000]
    assert not u.p.events("SD_GREEN")
    assert u.state() == ST.empty


def test_both_early_first_decides_second_reported():
    u = Unit()
    u.timer()
    u.inject(T0 + 1_000_000, B)
    u.inject(T0 + 1_000_001, A)
    v = u.verdict().msg
    u.settle()
    assert (v.loser, v.reason, v.press_a_us) == (B, R.false_start, NONE_U32)
    assert seen(u, A)[0].disposition == DISP.reported
    assert len(u.p.events("SD_VERDICT")) == 1


def test_both_early_at_the_same_instant_scheduling_order_decides():
    u = Unit()
    u.timer()
    u.inject(T0 + 1_000_000, A)
    u.inject(T0 + 1_000_000, B)
    v = u.verdict().msg
    u.settle()
    assert v.loser == A
    assert [m.disposition for m in seen(u, B)] == [DISP.reported]
