"""Showdown (SPEC.md 7): where a tie's cards land (the line model, its draws, a unit without a landing sensor)
and SD-12..SD-15 (paddles out of a race, RESET new_game, a launch's sound)."""
from __future__ import annotations

import pytest

from unohil.protocol import NONE_U8, PARAMS_BY_NAME, msg
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

from showdown_unit import (A, B, DISP, FLIGHT, GO, GREEN, LIGHT, LOAD, NONE, PRESS, R, SOUND, ST, T0, TIMER, Unit,
                           W, seen)


def _tie_races(u: Unit, n: int, d: int, cards: int, countdown: int = 500_000) -> list:
    """n tie races with t_b - t_a = d; returns the verdict messages."""
    out = []
    for _ in range(n):
        t = u.link.device.now() + 10
        u.inject(t, LOAD, PRESS, cards)
        u.inject(t + 1, TIMER)
        g = t + 1 + countdown
        first = g + 100_000
        u.inject(first + max(0, -d), A)
        u.inject(first + max(0, d), B)
        out.append(u.verdict().msg)
    return out


@pytest.mark.parametrize("d", [W // 2, W - 1, -W // 2, -(W - 1)])
def test_line_slower_player_always_takes_the_cards_beyond_half_a_window(d):
    u = Unit(cards=0, countdown=500_000, beep_interval_us=2_000_000)
    verdicts = _tie_races(u, 60, d, cards=5)
    slower = B if d > 0 else A
    assert all(v.reason == R.line_tiebreak and v.loser == slower for v in verdicts)
    assert all((v.landed_b if slower == B else v.landed_a) == 5 for v in verdicts)


def test_line_just_inside_half_a_window_is_not_certain():
    u = Unit(cards=0, countdown=500_000, beep_interval_us=2_000_000, tie_window_us=100)
    verdicts = _tie_races(u, 300, 49, cards=1)             # P(B side) = 1/2 + 49/100 = 0.99
    losers = [v.loser for v in verdicts]
    assert losers.count(A) >= 1 and losers.count(B) > 280


def test_line_exact_tie_is_a_coin_per_race():
    link = VirtualLink("showdown", 2024)
    from unohil.protocol import StreamDecoder, encode
    from unohil.protocol.devtime import wrap
    p = Probe(link)
    for name, v in (("countdown_min_us", 500_000), ("countdown_max_us", 500_000),
                    ("beep_interval_us", 2_000_000)):
        p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, v))
    link.read(0)
    dec = StreamDecoder()
    losers = {A: 0, B: 0}
    n = 10_000
    for i in range(n):
        t = link.device.now()
        press = wrap(t + 2 + 500_000 + 100)
        link.write(b"".join(encode(m, i * 4 + k, 0) for k, m in enumerate((
            msg.INJECT(wrap(t + 1), LOAD, PRESS, 1), msg.INJECT(wrap(t + 2), TIMER, PRESS, 0),
            msg.INJECT(press, A, PRESS, 0), msg.INJECT(press, B, PRESS, 0)))))
        done = False
        while not done:
            data, _ = link.read(10_000_000)
            for f in dec.feed(data):
                if f.msg.__class__ is msg.SD_VERDICT:
                    assert f.msg.reason == R.line_tiebreak
                    losers[f.msg.loser] += 1
                    done = True
    assert losers[A] + losers[B] == n
    assert abs(losers[A] - n / 2) < 4 * (n ** 0.5) / 2      # within 4 standard deviations


def test_even_split_is_a_dead_heat():
    u = Unit(cards=0, countdown=500_000, beep_interval_us=2_000_000)
    verdicts = _tie_races(u, 40, 0, cards=2)
    splits = [v for v in verdicts if v.landed_a == v.landed_b]
    assert splits, "with 2 cards and d = 0 about half the races split evenly"
    assert all(v.reason == R.even_split and v.loser == NONE and v.cards == 2 for v in splits)
    assert u.state() == ST.empty                           # the players reload the cards


def test_line_draws_are_seeded():
    def run(seed):
        u = Unit(seed=seed, cards=0, countdown=500_000, beep_interval_us=2_000_000)
        return [(v.landed_a, v.landed_b) for v in _tie_races(u, 20, 100, cards=3)]
    assert run(8) == run(8) != run(9)


# ---- SD-12 .. SD-15 ----

@pytest.mark.parametrize("cards", [0, 2])
def test_a_paddle_in_empty_or_loaded_is_reported_and_changes_nothing(cards):
    """SD-12: no countdown runs, so a paddle can neither start nor false-start anything."""
    u = Unit(cards=cards)
    u.inject(T0, A)
    u.inject(T0 + 10, B)
    u.settle(1_000_000)
    assert [e[1] for e in u.trace()] == ["INPUT_SEEN", "INPUT_SEEN"]
    assert [m.disposition for m in seen(u, A) + seen(u, B)] == [DISP.reported, DISP.reported]
    s = u.p.request(msg.STATUS_GET()).msg
    assert (s.state, s.cards) == ((ST.loaded, 2) if cards else (ST.empty, 0))
    if not cards:
        u.p.request(msg.INPUT(LOAD, PRESS, 1))
    g = u.timer(u.link.device.now() + 1000)                 # the race after them is a normal one
    u.inject(g + 150_000, A)
    assert (u.verdict().msg.reason, u.state()) == (R.first_press, ST.empty)


def test_a_second_press_inside_the_window_ties_even_after_the_go_timeout():
    """SD-13: the go timeout bounds the first press only; the tie window of a first press just
    before it runs on past it."""
    u = Unit(cards=3)
    u.timer()
    t1 = GREEN + GO - 1
    u.inject(t1, A)
    u.inject(t1 + W - 1, B)                                 # 998 us after the go timeout
    v = u.verdict()
    u.settle()
    assert v.msg.reason in (R.line_tiebreak, R.even_split)
    assert (v.time_us, v.msg.press_b_us, v.msg.reaction_b_us) == (t1 + FLIGHT, t1 + W - 1, GO + W - 2)
    assert [m.disposition for m in seen(u, B)] == [DISP.acted]
    assert len(u.p.events("SD_VERDICT")) == 1 and u.p.events("SD_LANDING")


def test_reset_new_game_forgets_the_cards_and_abandons_the_race_without_a_verdict():
    """SD-15 (SPEC 4.9): the counts go first, then the lights in id order, then STATE."""
    u = Unit(cards=2)
    u.timer()
    u.p.run_for(GREEN + 1000 - u.link.device.now())           # in go: the green light flashes
    ack = u.p.request(msg.RESET(0))
    u.settle()
    after = [(f.name, tuple(f.msg[1:])) for f in u.p.frames if f.seq > ack.seq]
    assert after == [("SD_CARDS", (0,)), ("LIGHT", (LIGHT.green, 0, NONE)), ("STATE", (ST.empty, ST.go))]
    assert not u.p.events("SD_VERDICT")
    ack = u.p.request(msg.RESET(0))                           # nothing held, nothing lit: STATE alone
    u.settle(1000)
    assert [(f.name, tuple(f.msg[1:])) for f in u.p.frames if f.seq > ack.seq] == [("STATE", (ST.empty, ST.empty))]


def _tie_then_race(landing_sensor: int) -> tuple:
    link = VirtualLink("showdown", 9, landing_sensor=landing_sensor)
    p = Probe(link)
    p.wait_event("BOOT")
    p.request(msg.INPUT(LOAD, PRESS, 3))
    p.request(msg.INJECT(T0, TIMER, PRESS, 0))
    p.request(msg.INJECT(GREEN_RANDOM_LATEST + 200_000, A, PRESS, 0))
    p.request(msg.INJECT(GREEN_RANDOM_LATEST + 200_100, B, PRESS, 0))
    first = p.wait_event("SD_VERDICT", 100_000_000).msg
    p.request(msg.INPUT(LOAD, PRESS, 1))
    t = link.device.now() + 1000
    p.request(msg.INJECT(t, TIMER, PRESS, 0))
    p.wait(lambda f: f.name == "SD_GREEN" and f.time_us > t, 100_000_000)
    return first, p.events("SD_GREEN")[-1].time_us - t


GREEN_RANDOM_LATEST = T0 + 6_000_000        # the default countdown is at most 6 s


def test_a_unit_without_a_landing_sensor_still_draws_the_line():
    """SD-11: both kinds of unit consume the same draws, so the next countdown is the same."""
    with_sensor, countdown_after = _tie_then_race(1)
    without, countdown_after_without = _tie_then_race(0)
    assert with_sensor.reason in (R.line_tiebreak, R.even_split) and with_sensor.landed_a != NONE_U8
    assert (without.reason, without.loser, without.landed_a) == (R.line_tiebreak, NONE, NONE_U8)
    assert countdown_after == countdown_after_without


def test_every_launch_sounds():
    """SD-14: SOUND(launch) follows each SD_LAUNCH, on a false start as on a first press."""
    u = Unit(cards=2)
    u.timer()
    u.inject(GREEN - 100, A)
    u.verdict()
    u.p.request(msg.INPUT(LOAD, PRESS, 1))
    g = u.timer(u.link.device.now() + 1000)
    u.inject(g + 100_000, B)
    u.settle()
    names = [n for _, n, p in u.trace() if n in ("SD_LAUNCH", "SOUND") and (n == "SD_LAUNCH" or p[0] == SOUND.launch)]
    assert names == ["SD_LAUNCH", "SOUND"] * 2
