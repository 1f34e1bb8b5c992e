"""Card launcher (SPEC.md 9): the door and the magazine, and one press card by card (its burst, its timing, an
empty magazine, the configuration's cross rule)."""
from __future__ import annotations

import pytest

from unohil.protocol import NONE_U8, PARAMS_BY_NAME, msg
from unohil.protocol.algorithms import Pcg32, sample_burst

from launcher_unit import (BUTTON, DISP, DOOR, ERR, INTERVAL, LIGHT, LOAD, MODE, MOTOR, PRESS, RELEASE, SOUND, SRC,
                           ST, T0, Unit, press_run, reference_draws)


def test_door_and_loading():
    u = Unit()
    assert u.input(DOOR).name == "ACK"
    assert u.input(LOAD, PRESS, 20).name == "ACK"
    assert u.input(LOAD, PRESS, 78).name == "ACK"                   # 98 = capacity (LA-14)
    for action, value in ((PRESS, 1), (PRESS, 0), (RELEASE, 5)):    # too many, none, taking cards out
        r = u.input(LOAD, action, value)
        assert (r.name, r.msg.error) == ("NAK", ERR.bad_value)
    assert u.input(DOOR, RELEASE).name == "ACK"
    r = u.input(LOAD, PRESS, 1)
    assert (r.name, r.msg.error, r.msg.detail) == ("NAK", ERR.wrong_state, ST.ready)
    assert [e[1:] for e in u.trace()[1:]] == [
        ("LA_DOOR", (1, 0)), ("STATE", (ST.door_open, ST.ready)),
        ("LA_LOADED", (20, 20, 20, 0)), ("LA_LOADED", (78, 98, 98, 0)),
        ("LA_DOOR", (0, 98)), ("STATE", (ST.ready, ST.door_open)),
    ]
    assert u.status().cards == 98
    assert [m.detail for m in u.seen(LOAD) if m.disposition == DISP.refused] == [ERR.bad_value] * 3 + [ERR.wrong_state]


def test_pressing_with_the_door_open_is_refused_and_reported():
    u = Unit()
    u.load(10)
    u.input(DOOR)
    r = u.input(BUTTON)
    assert (r.name, r.msg.error, r.msg.detail) == ("NAK", ERR.wrong_state, ST.door_open)
    u.inject(u.now() + 10, BUTTON)
    u.until(u.now() + 20)
    assert [(m.source, m.disposition, m.detail) for m in u.seen(BUTTON)] == [
        (SRC.host, DISP.refused, ERR.wrong_state), (SRC.injected, DISP.refused, ERR.wrong_state)]
    assert not u.p.events("LA_DING") and not u.p.events("LA_RESULT")


def test_redundant_door_edges_are_reported():
    u = Unit()
    assert u.input(DOOR, RELEASE).name == "ACK"                     # already closed
    u.input(DOOR)
    u.input(DOOR)                                                   # already open
    assert [m.disposition for m in u.seen(DOOR)] == [DISP.reported, DISP.acted, DISP.reported]
    assert len(u.p.events("LA_DOOR")) == 1


@pytest.mark.parametrize("capacity", [1, 12, 254])
def test_card_capacity_option(capacity):
    u = Unit(card_capacity=capacity)
    ident = u.p.request(msg.HELLO(1, 0)).msg
    assert (ident.card_capacity, ident.players) == (capacity, 0)
    u.input(DOOR)
    assert u.input(LOAD, PRESS, capacity).name == "ACK"
    assert u.input(LOAD, PRESS, 1).msg.error == ERR.bad_value


def test_default_capacity_is_98_the_deck_less_a_two_player_deal():
    assert Unit().p.request(msg.HELLO(1, 0)).msg.card_capacity == 98


# ---- one press ----

def test_a_burst_card_by_card():
    u = Unit(seed=3, fire_base_permille=1000)
    u.load(30)
    t = T0
    u.inject(t, BUTTON)
    u.until(t + 2_000_000)
    b = sample_burst(_after_fire_draw(3), 1, 4, 12)
    last = t + MOTOR + (b - 1) * INTERVAL
    assert u.trace(t) == [
        (t, "SOUND", (SOUND.ding, 0)),
        (t, "LA_DING", (1, 0, 1000)),
        (t, "SOUND", (SOUND.fire, 0)),
        (t, "STATE", (ST.firing, ST.ready)),
        *[(t + MOTOR + k * INTERVAL, "LA_CARD", (k, 29 - k, k + 1)) for k in range(b)],
        (last, "LA_RESULT", (1, t, b, b, 30 - b, b, 30, last)),
        (last, "STATE", (ST.ready, ST.firing)),
    ]


def _after_fire_draw(seed: int) -> Pcg32:
    rng = Pcg32(seed)
    rng.randrange(1000)
    return rng


def test_a_press_that_fires_nothing_is_decided_at_the_press():
    seed = next(s for s in range(100) if Pcg32(s).randrange(1000) >= 250)
    u = Unit(seed=seed)
    u.load(5)
    u.inject(T0, BUTTON)
    u.until(T0 + 1_000_000)
    assert u.trace(T0) == [(T0, "SOUND", (SOUND.ding, 0)), (T0, "LA_DING", (1, 0, 250)),
                           (T0, "LA_RESULT", (1, T0, 0, 0, 5, 0, 5, T0)),
                           (T0, "LIGHT", (LIGHT.top, MODE.flash, NONE_U8))]    # the chance rises (LA-11)


def test_motor_zero_throws_the_first_card_at_the_press():
    u = Unit(seed=4, fire_base_permille=1000, motor_us=0, card_interval_us=1000)
    u.load(3)
    u.inject(T0, BUTTON)
    u.until(T0 + 100_000)
    assert [f.time_us for f in u.p.events("LA_CARD")][:1] == [T0]


def test_the_burst_stops_when_the_magazine_runs_out():
    u = Unit(seed=5, fire_base_permille=1000, burst_min=8, burst_mode=8, burst_max=8)
    u.load(3)
    u.inject(T0, BUTTON)
    u.until(T0 + 1_000_000)
    last = T0 + MOTOR + 2 * INTERVAL
    assert u.trace(last) == [
        (last, "LA_CARD", (2, 0, 3)),
        (last, "LA_RESULT", (1, T0, 8, 3, 0, 3, 3, last)),       # planned 8, fired 3: LA_RESULT first
        (last, "LA_EMPTY", (3,)),
        (last, "SOUND", (SOUND.empty, 0)),
        (last, "STATE", (ST.ready, ST.firing)),
    ]


def test_an_empty_magazine_dings_reports_and_draws_nothing():
    u = Unit(seed=6)
    for k in range(3):
        u.inject(T0 + k * 1000, BUTTON)
    u.until(T0 + 10_000)
    t = T0 + 2000
    assert u.trace(t) == [(t, "SOUND", (SOUND.ding, 0)), (t, "LA_DING", (3, 0, 250)),
                          (t, "LA_RESULT", (3, t, 0, 0, 0, 0, 0, t)), (t, "LA_EMPTY", (0,)),
                          (t, "SOUND", (SOUND.empty, 0))]
    # no draw was made: the first press with cards draws what a fresh generator draws
    u.load(40)
    got = press_run(u, 1)
    assert got == reference_draws(6, [40], 1)


def test_presses_and_the_door_during_a_burst():
    u = Unit(seed=7, fire_base_permille=1000, burst_min=5, burst_mode=5, burst_max=5)
    u.load(20)
    u.inject(T0, BUTTON)
    u.inject(T0 + 160_000, BUTTON)                                 # reported
    u.inject(T0 + 170_000, DOOR)                                   # latched: refused
    u.inject(T0 + 180_000, DOOR, RELEASE)                          # it is closed: reported
    u.inject(T0 + 190_000, LOAD, PRESS, 2)                         # refused
    u.until(T0 + 1_000_000)
    assert [(m.disposition, m.detail) for m in u.seen(BUTTON)] == [(DISP.acted, 0), (DISP.reported, 0)]
    assert [(m.disposition, m.detail) for m in u.seen(DOOR)] == [(DISP.acted, 0), (DISP.acted, 0),
                                                                 (DISP.refused, ERR.wrong_state), (DISP.reported, 0)]
    assert u.seen(LOAD)[-1].detail == ERR.wrong_state
    assert len(u.p.events("LA_DING")) == 1 and len(u.p.events("LA_CARD")) == 5


def test_a_press_at_the_last_card_instant_is_a_new_press():
    u = Unit(seed=8, fire_base_permille=1000, burst_min=2, burst_mode=2, burst_max=2)
    u.load(10)
    u.inject(T0, BUTTON)
    last = T0 + MOTOR + INTERVAL
    u.inject(last, BUTTON)
    u.inject(last - 1, BUTTON)
    u.until(last + 1_000_000)
    assert [m.disposition for m in u.seen(BUTTON)] == [DISP.acted, DISP.reported, DISP.acted]
    assert [n for _, n, _ in u.trace(last, last)] == ["LA_CARD", "LA_RESULT", "STATE", "SOUND", "LA_DING",
                                                       "SOUND", "STATE"]


def test_config_cross_rule_and_idle_states():
    u = Unit()
    for name, value in (("burst_mode", 13), ("burst_min", 5), ("burst_max", 3)):
        r = u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
        assert (r.name, r.msg.error) == ("NAK", ERR.bad_value), name
    for name, value in (("burst_max", 20), ("burst_mode", 20), ("burst_min", 20)):
        assert u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value)).name == "CONFIG_VALUE"
    u.input(DOOR)
    assert u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME["motor_us"].id, 0)).name == "CONFIG_VALUE"
    u.input(LOAD, PRESS, 30)
    u.input(DOOR, RELEASE)
    u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME["fire_base_permille"].id, 1000))
    u.input(BUTTON)
    r = u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME["motor_us"].id, 5))
    assert (r.name, r.msg.error, r.msg.detail) == ("NAK", ERR.wrong_state, ST.firing)
