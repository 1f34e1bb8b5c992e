"""Showdown (SPEC.md 7): the verdict, the first press and the tie window, the go timeout, and a host INPUT
at a deadline's instant, each boundary to the microsecond."""
from __future__ import annotations

from unohil.protocol import ENUMS, NONE_I32, NONE_U8, NONE_U32, PARAMS_BY_NAME, msg
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

from showdown_unit import (A, B, D, DISP, FLIGHT, GO, GREEN, LIGHT, LOAD, NONE, PRESS, R, RELEASE, SOUND, ST, T0,
                           TIMER, Unit, W, seen)


def test_first_press_wins_verdict_exactly_one_window_later():
    u = Unit(cards=2)
    u.timer()
    t1 = GREEN + 180_000
    u.inject(t1, A)
    v = u.verdict()
    assert v.time_us == t1 + W
    m = v.msg
    assert (m.loser, m.reason, m.cards, m.landed_a, m.landed_b) == (B, R.first_press, 2, NONE_U8, NONE_U8)
    assert (m.press_a_us, m.press_b_us, m.reaction_a_us, m.reaction_b_us) == (t1, NONE_U32, 180_000, NONE_I32)
    assert (m.decisive_us, m.knowable_us, m.green_us) == (t1, t1 + W, GREEN)
    u.settle()
    assert [e for e in u.trace(t1) if e[1] != "INPUT_SEEN"] == [
        (t1, "SD_LAUNCH", (B, 2)),
        (t1, "SOUND", (SOUND.launch, 0)),
        (t1, "STATE", (ST.racing, ST.go)),
        (t1 + W, "LIGHT", (LIGHT.green, 0, NONE)),
        (t1 + W, "SD_VERDICT", tuple(m[1:])),
        (t1 + W, "STATE", (ST.empty, ST.racing)),
    ]


def test_second_press_one_us_inside_the_window_is_a_tie():
    u = Unit(cards=3)
    u.timer()
    t1 = GREEN + 200_000
    u.inject(t1, B)
    u.inject(t1 + W - 1, A)
    v = u.verdict()
    m = v.msg
    assert m.reason in (R.line_tiebreak, R.even_split)
    assert v.time_us == m.knowable_us == t1 + FLIGHT
    assert m.decisive_us == t1 + W - 1
    assert m.landed_a + m.landed_b == 3
    landing = u.p.events("SD_LANDING")[0]
    assert landing.time_us == t1 + FLIGHT and tuple(landing.msg[1:]) == (m.landed_a, m.landed_b)
    assert seen(u, A)[0].disposition == DISP.acted
    # d = t_b - t_a = -(W-1): A pressed last, the card goes to A's side for sure
    assert (m.loser, m.landed_a, m.landed_b) == (A, 3, 0)


def test_second_press_exactly_one_window_later_is_recorded_not_a_tie():
    u = Unit()
    u.timer()
    t1 = GREEN + 200_000
    u.inject(t1, B)
    u.inject(t1 + W, A)
    v = u.verdict()
    m = v.msg
    assert (m.reason, m.loser, v.time_us) == (R.first_press, A, t1 + W)
    assert (m.press_b_us, m.press_a_us) == (t1, t1 + W)
    assert (m.reaction_b_us, m.reaction_a_us) == (200_000, 200_000 + W)
    assert (m.landed_a, m.landed_b) == (NONE_U8, NONE_U8)
    u.settle()
    assert not u.p.events("SD_LANDING")
    assert seen(u, A)[0].disposition == DISP.reported


def test_presses_after_the_verdict_are_reported():
    u = Unit()
    u.timer()
    t1 = GREEN + 200_000
    u.inject(t1, B)
    u.inject(t1 + W + 1, A)
    u.inject(t1 + W + 2, B)
    v = u.verdict().msg
    u.settle()
    assert v.press_a_us == NONE_U32
    assert [m.disposition for m in seen(u, A)] == [DISP.reported]
    assert [m.disposition for m in seen(u, B)] == [DISP.acted, DISP.reported]


def test_same_side_again_in_the_window_is_not_a_tie():
    u = Unit()
    u.timer()
    t1 = GREEN + 1000
    u.inject(t1, A)
    u.inject(t1 + 10, A)
    v = u.verdict().msg
    assert (v.reason, v.loser, v.press_a_us) == (R.first_press, B, t1)


def test_releases_are_reported():
    u = Unit()
    u.timer()
    u.inject(T0 + 10, A, RELEASE)
    u.inject(GREEN + 10, TIMER, RELEASE)
    u.settle()
    assert [m.disposition for m in seen(u, A)] == [DISP.reported]
    assert [m.disposition for m in seen(u, TIMER)] == [DISP.acted, DISP.reported]


def test_tie_timeline():
    u = Unit(cards=2, seed=5)
    u.timer()
    t1 = GREEN + 150_000
    u.inject(t1, A)
    u.inject(t1, B)                                    # the same microsecond: d = 0
    v = u.verdict()
    u.settle()
    m = v.msg
    names = [(t, n) for t, n, _ in u.trace(t1) if n != "INPUT_SEEN"]
    assert names == [(t1, "SD_LAUNCH"), (t1, "SOUND"), (t1, "STATE"), (t1 + FLIGHT, "SD_LANDING"), (t1 + FLIGHT, "LIGHT"),
                     (t1 + FLIGHT, "SD_VERDICT"), (t1 + FLIGHT, "STATE")]
    assert u.p.events("SD_LAUNCH")[0].msg.toward == B       # A's press came first
    assert (m.press_a_us, m.press_b_us, m.decisive_us) == (t1, t1, t1)
    if m.landed_a == m.landed_b:
        assert (m.reason, m.loser) == (R.even_split, NONE)
    else:
        assert m.reason == R.line_tiebreak and m.loser == (A if m.landed_a > m.landed_b else B)
    assert u.state() == ST.empty


# ---- no press and the go timeout ----

def test_no_press_verdict_at_exactly_the_go_timeout():
    u = Unit(cards=2)
    u.timer()
    v = u.verdict()
    m = v.msg
    assert v.time_us == GREEN + GO
    assert (m.loser, m.reason, m.cards, m.press_a_us, m.press_b_us) == (NONE, R.no_press, 2, NONE_U32, NONE_U32)
    assert (m.reaction_a_us, m.reaction_b_us, m.landed_a, m.landed_b) == (NONE_I32, NONE_I32, NONE_U8, NONE_U8)
    assert (m.decisive_us, m.knowable_us) == (GREEN + GO, GREEN + GO)
    u.settle()
    assert [(n, p) for t, n, p in u.trace(GREEN + GO)] == [
        ("LIGHT", (LIGHT.green, 0, NONE)), ("SD_VERDICT", tuple(m[1:])), ("STATE", (ST.loaded, ST.go))]
    assert not u.p.events("SD_LAUNCH")
    s = u.p.request(msg.STATUS_GET()).msg
    assert (s.state, s.cards) == (ST.loaded, 2)             # re-run with TIMER
    t = u.link.device.now() + 10
    u.inject(t, TIMER)
    u.inject(t + D + 50, A)
    v2 = u.p.wait(lambda f: f.name == "SD_VERDICT" and f.msg.reason == R.first_press, 100_000_000).msg
    assert v2.cards == 2


def test_press_one_us_before_the_go_timeout_is_valid():
    u = Unit()
    u.timer()
    u.inject(GREEN + GO - 1, B)
    v = u.verdict().msg
    assert (v.reason, v.loser, v.reaction_b_us) == (R.first_press, A, GO - 1)


def test_press_at_the_go_timeout_is_too_late():
    u = Unit()
    u.timer()
    u.inject(GREEN + GO, B)
    v = u.verdict()
    u.settle()
    assert (v.msg.reason, v.time_us, v.msg.press_b_us) == (R.no_press, GREEN + GO, NONE_U32)
    assert [m.disposition for m in seen(u, B)] == [DISP.reported]
    assert len(u.p.events("SD_VERDICT")) == 1
    assert u.state() == ST.loaded


# ---- host INPUT at a deadline's instant, and a unit without a landing sensor ----

def test_host_input_at_exactly_the_window_end_runs_before_the_verdict_timer():
    u = Unit()
    u.timer()
    t1 = GREEN + 200_000
    u.inject(t1, B)
    u.p.wait_event("SD_LAUNCH", 100_000_000)
    while u.link.device.now() < t1 + W:                # time out exactly at t1 + W
        u.p.read(t1 + W - u.link.device.now())
    assert u.link.device.now() == t1 + W and not u.p.events("SD_VERDICT")
    assert u.p.request(msg.INPUT(A, PRESS, 0)).name == "ACK"
    v = u.verdict()
    assert (v.msg.reason, v.msg.press_a_us, v.time_us) == (R.first_press, t1 + W, t1 + W)
    assert seen(u, A)[0].disposition == DISP.reported


def test_without_landing_sensor_a_tie_is_left_to_the_players():
    link = VirtualLink("showdown", 1, landing_sensor=0)
    p = Probe(link)
    ident = p.request(msg.HELLO(1, 0)).msg
    assert not ident.caps & (1 << ENUMS["capability"].landing_sensor)
    for name in ("countdown_min_us", "countdown_max_us"):
        p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, D))
    p.request(msg.INPUT(LOAD, PRESS, 3))
    p.request(msg.INJECT(T0, TIMER, PRESS, 0))
    p.request(msg.INJECT(GREEN + 5000, A, PRESS, 0))
    p.request(msg.INJECT(GREEN + 5100, B, PRESS, 0))
    v = p.wait_event("SD_VERDICT", 100_000_000)
    m = v.msg
    assert (m.reason, m.loser, m.landed_a, m.landed_b, m.cards) == (R.line_tiebreak, NONE, NONE_U8, NONE_U8, 3)
    assert (m.decisive_us, m.knowable_us, v.time_us) == (GREEN + 5100, GREEN + 5000 + FLIGHT, GREEN + 5000 + FLIGHT)
    assert not p.events("SD_LANDING")
