"""Every card launcher rule (SPEC.md 6.4, 6.5 and 9, LA-1..LA-9) on the virtual clock,
through the wire: the door and the magazine, the exact draws of every press, burst timing, the
fire-chance and burst-size statistics, the accounting over long random runs, and a real pty."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from unohil.protocol import ENUMS, NONE_U8, PARAMS_BY_NAME, StreamDecoder, encode, msg
from unohil.protocol.devtime import wrap
from unohil.protocol.algorithms import Pcg32, burst_total, burst_weights, fire_chance, fires, sample_burst

from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe, SelectLink

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
ST = ENUMS["launcher_state"]
SOUND = ENUMS["launcher_sound"]
LIGHT = ENUMS["launcher_light"]
MODE = ENUMS["light_mode"]
BUTTON, DOOR, LOAD, POWER = 0, 1, 2, 3
PRESS, RELEASE = 1, 0
MOTOR, INTERVAL = 150_000, 40_000
T0 = 100_000


class Unit:
    def __init__(self, seed: int = 1, card_capacity: int | None = None, **config):
        opts = {"card_capacity": card_capacity} if card_capacity is not None else {}
        self.link = VirtualLink("launcher", seed, **opts)
        self.p = Probe(self.link)
        self.p.wait_event("BOOT")
        todo = dict(config)
        while todo:                     # burst_min <= burst_mode <= burst_max at every step
            refused = {}
            for name, value in todo.items():
                r = self.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
                if r.name != "CONFIG_VALUE":
                    assert r.msg.error == ERR.bad_value, r
                    refused[name] = value
            assert len(refused) < len(todo), refused
            todo = refused

    def input(self, inp: int, action: int = PRESS, value: int = 0):
        return self.p.request(msg.INPUT(inp, action, value))

    def load(self, n: int) -> None:
        for m in (msg.INPUT(DOOR, PRESS, 0), msg.INPUT(LOAD, PRESS, n), msg.INPUT(DOOR, RELEASE, 0)):
            assert self.p.request(m).name == "ACK"

    def inject(self, at: int, inp: int, action: int = PRESS, value: int = 0):
        r = self.p.request(msg.INJECT(wrap(at), inp, action, value))
        assert r.name == "ACK", r

    def now(self) -> int:
        return self.link.device.now()

    def until(self, t: int) -> None:
        self.p.run_for(max(0, t - self.now()))

    def trace(self, t_from: int = 0, t_to: int | None = None, seen: bool = False) -> list:
        return [(f.time_us, f.name, tuple(f.msg[1:])) for f in self.p.events()
                if f.time_us >= t_from and (t_to is None or f.time_us <= t_to) and (seen or f.name != "INPUT_SEEN")]

    def seen(self, inp: int) -> list:
        return [f.msg for f in self.p.events("INPUT_SEEN") if f.msg.input == inp]

    def status(self):
        return self.p.request(msg.STATUS_GET()).msg


# ---- the door and the magazine ----

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
    got = _press_run(u, 1)
    assert got == _reference(6, [40], 1)


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


# ---- the streak and the fire chance (6.4, LA-2) ----

def test_the_chance_rises_with_each_empty_press_and_the_sixth_always_fires():
    u = Unit(seed=13, fire_base_permille=250, fire_step_permille=150, card_capacity=254)
    u.load(254)
    got = _press_run(u, 100)                        # the magazine lasts: every press is a trial
    streaks = [s for s, _c, _p, _f in got]
    chances = [c for _s, c, _p, _f in got]
    assert all(c == min(1000, 250 + 150 * s) for s, c in zip(streaks, chances))
    assert max(streaks) <= 5 and all(f > 0 for s, _c, _p, f in got if s == 5)
    for (s0, _, _, f0), (s1, _, _, _) in zip(got, got[1:]):
        assert s1 == (0 if f0 else s0 + 1)
    assert got == _reference(13, [254], 100) and got[-1][3] > 0


def test_streak_restarts_when_the_door_closes_and_at_power_on():
    u = Unit(seed=10, fire_base_permille=0, fire_step_permille=0)
    u.load(5)
    for _ in range(3):
        u.input(BUTTON)
    u.input(DOOR)
    u.input(DOOR, RELEASE)
    u.input(BUTTON)
    u.input(BUTTON)
    u.input(POWER, RELEASE)
    u.input(POWER)
    u.input(BUTTON)
    assert [f.msg.empty_streak for f in u.p.events("LA_DING")] == [0, 1, 2, 0, 1, 0]


def test_streak_saturates_at_255_and_nothing_ever_fires_at_chance_zero():
    u = Unit(seed=11, fire_base_permille=0, fire_step_permille=0)
    u.load(5)
    for _ in range(260):
        u.input(BUTTON)
    dings = u.p.events("LA_DING")
    assert [f.msg.empty_streak for f in dings][-6:] == [254, 255, 255, 255, 255, 255]
    assert not u.p.events("LA_CARD") and all(f.msg.chance_permille == 0 for f in dings)


def test_an_empty_magazine_leaves_the_streak_alone():
    """LA-3: no draw, no trial: with the magazine empty the streak (0 after the burst that emptied
    it) stays where it was, and the chance reported is the chance of that streak."""
    u = Unit(seed=12, fire_base_permille=1000, fire_step_permille=100, burst_min=2, burst_mode=2, burst_max=2)
    u.load(2)
    got = _press_run(u, 4)
    assert got == [(0, 1000, 2, 2), (0, 1000, 0, 0), (0, 1000, 0, 0), (0, 1000, 0, 0)]
    assert u.status().cards == 0


def test_fire_chance_statistics():
    """The fraction of presses that fire at each streak matches the configured chance
    (binomial bound, 4 sd; deterministic with the fixed seed)."""
    u = Unit(seed=13, fire_base_permille=100, fire_step_permille=200, burst_min=1, burst_mode=1, burst_max=1,
             motor_us=0, card_interval_us=1000, card_capacity=254)
    tried: Counter = Counter()
    fired: Counter = Counter()
    got = []
    while len(got) < 6000:
        u.load(254 - u.status().cards)
        got += _press_run(u, 200)
    for s, c, _p, f in got:
        tried[s] += 1
        fired[s] += f > 0
    rates = []
    for s in sorted(tried):
        n, p = tried[s], min(1000, 100 + 200 * s) / 1000
        rates.append(fired[s] / n)
        assert abs(fired[s] - n * p) <= 4 * (n * p * (1 - p)) ** 0.5 + 1e-9, (s, n, fired[s], p)
    assert rates == sorted(rates) and rates[-1] == 1.0 and len(rates) == 6


# ---- burst sizes (6.5) ----

@pytest.mark.parametrize("lo,mode,hi", [(1, 4, 12), (3, 3, 8), (2, 9, 10)])
def test_burst_sizes_follow_the_triangular_weights(lo, mode, hi):
    u = Unit(seed=100 + lo, fire_base_permille=1000, burst_min=lo, burst_mode=mode, burst_max=hi,
             motor_us=0, card_interval_us=1000, card_capacity=254)
    sizes: list[int] = []
    while len(sizes) < 3000:
        u.load(254 - u.status().cards)
        sizes += [p for _s, _c, p, _f in _press_run(u, (254 - 12) // hi)]
    counts = Counter(sizes)
    weights = burst_weights(lo, mode, hi)
    total = burst_total(lo, mode, hi)
    n = len(sizes)
    chi2 = sum((counts[k] - n * w / total) ** 2 / (n * w / total) for k, w in zip(range(lo, hi + 1), weights))
    critical = {11: 31.26, 5: 20.52, 8: 26.12}[hi - lo]          # p = 0.001
    assert chi2 < critical, (counts, chi2)
    assert set(counts) <= set(range(lo, hi + 1))
    mean = sum(k * w for k, w in zip(range(lo, hi + 1), weights)) / total
    assert abs(sum(sizes) / n - mean) < 0.1


def test_default_burst_shape():
    w = burst_weights(1, 4, 12)
    assert w == [9, 18, 27, 36, 32, 28, 24, 20, 16, 12, 8, 4] and burst_total(1, 4, 12) == 234


# ---- the draws replay the reference exactly ----

def _press_run(u: Unit, n: int) -> list[tuple[int, int, int, int]]:
    """n presses by INPUT, each after the previous one's result: (streak, chance, planned, fired)."""
    link, dec = u.link, StreamDecoder()
    out = []
    for _ in range(n):
        seq = u.p.seq
        u.p.seq += 1
        link.write(encode(msg.INPUT(BUTTON, PRESS, 0), seq, 0))
        ding = None
        while True:
            data, _ = link.read(10_000_000)
            frames = [f.msg for f in dec.feed(data)]
            for m in frames:
                if m.__class__ is msg.LA_DING:
                    ding = m
                elif m.__class__ is msg.LA_RESULT:
                    out.append((ding.empty_streak, ding.chance_permille, m.planned, m.fired))
                    break
            else:
                continue
            break
    return out


def _reference(seed: int, loads: list[int], n: int, base=250, step=150, lo=1, mode=4, hi=12):
    rng = Pcg32(seed)
    inside, streak, out = loads[0], 0, []
    for _ in range(n):
        chance = fire_chance(base, step, streak)
        if inside == 0:
            out.append((streak, chance, 0, 0))
            continue
        if not fires(rng, chance):
            out.append((streak, chance, 0, 0))
            streak = min(255, streak + 1)
            continue
        b = sample_burst(rng, lo, mode, hi)
        c = min(b, inside)
        inside -= c
        out.append((streak, chance, b, c))
        streak = 0
    return out


def test_every_press_replays_the_reference_draws():
    u = Unit(seed=2024, motor_us=0, card_interval_us=1000)
    u.load(60)
    assert _press_run(u, 200) == _reference(2024, [60], 200)


# ---- power and RESET new_game (LA-7, LA-8) ----

def test_power_off_during_a_burst_closes_the_press():
    u = Unit(seed=14, fire_base_permille=1000, burst_min=6, burst_mode=6, burst_max=6)
    u.load(20)
    u.inject(T0, BUTTON)
    off = T0 + MOTOR + 2 * INTERVAL                                 # the third card comes out first
    u.inject(off, POWER, RELEASE)
    u.inject(off + 10, BUTTON)
    u.inject(off + 20, DOOR)                                        # the unit is off: reported, but read
    u.inject(off + 30, LOAD, PRESS, 4)
    u.inject(off + 40, POWER)
    u.until(off + 1_000_000)
    assert u.trace(off, off) == [(off, "LA_CARD", (2, 17, 3)),
                                 (off, "LA_RESULT", (1, T0, 6, 3, 17, 3, 20, off)),
                                 (off, "STATE", (ST.off, ST.firing))]
    assert u.trace(off + 1) == [(off + 40, "STATE", (ST.door_open, ST.off))]
    assert [m.disposition for m in u.seen(BUTTON)][-1] == DISP.reported
    assert u.seen(LOAD)[-1].disposition == DISP.reported and u.status().cards == 17
    assert len(u.p.events("LA_CARD")) == 3


def test_reset_new_game_empties_the_counters_and_keeps_the_door():
    u = Unit(seed=15, fire_base_permille=1000)
    u.load(30)
    u.input(BUTTON)
    u.until(u.now() + 2_000_000)
    u.input(DOOR)
    assert u.p.request(msg.RESET(0)).name == "ACK"
    s = u.status()
    assert (s.state, s.cards) == (ST.door_open, 0)
    assert u.input(LOAD, PRESS, 7).name == "ACK"
    assert tuple(u.p.events("LA_LOADED")[-1].msg[1:]) == (7, 7, 7, 0)
    u.input(DOOR, RELEASE)
    u.input(BUTTON)
    assert u.p.events("LA_DING")[-1].msg.press == 1
    u.input(POWER, RELEASE)
    assert u.p.request(msg.RESET(0)).name == "ACK"
    assert u.status().state == ST.off


def test_reset_new_game_during_a_burst_closes_the_press():
    """LA-13: as at a switch-off, the press a ding opened gets its LA_RESULT, then STATE."""
    u = Unit(seed=14, fire_base_permille=1000, burst_min=6, burst_mode=6, burst_max=6)
    u.load(20)
    u.inject(T0, BUTTON)
    u.until(T0 + MOTOR + INTERVAL + 100)                            # two cards out
    t = u.now()
    ack = u.p.request(msg.RESET(0))
    u.until(t + 1_000_000)
    after = [(f.name, tuple(f.msg[1:])) for f in u.p.frames if f.seq > ack.seq]
    assert after == [("LA_RESULT", (1, T0, 6, 2, 18, 2, 20, t)), ("STATE", (ST.ready, ST.firing))]
    assert len(u.p.events("LA_CARD")) == 2 and u.status().cards == 0


# ---- the unit at boot, its top light and its sounds (LA-10 .. LA-12) ----

def test_at_boot_the_launcher_is_ready_empty_and_dark():
    """LA-10: switched on, door closed, magazine empty, counters and streak 0, no light lit."""
    u = Unit(seed=3)
    assert [f.name for f in u.p.events()] == ["BOOT"]
    s = u.status()
    assert (s.state, s.cards) == (ST.ready, 0)
    u.input(BUTTON)
    assert tuple(u.p.events("LA_DING")[-1].msg[1:]) == (1, 0, 250)
    assert not u.p.events("LIGHT")                                  # an empty magazine's press: no trial


def test_the_top_light_flashes_from_an_empty_press_until_the_streak_restarts():
    """LA-11: one LIGHT per change: flashing at the first press that fires nothing, off when the
    press fires, when the door closes, at a switch-off."""
    u = Unit(seed=1, fire_base_permille=0, fire_step_permille=0)     # never fires
    u.load(10)
    for k in range(3):
        u.inject(T0 + k * 1000, BUTTON)
    u.until(T0 + 10_000)
    top = [(t, p) for t, n, p in u.trace() if n == "LIGHT"]
    assert top == [(T0, (LIGHT.top, MODE.flash, NONE_U8))]
    u.input(DOOR)
    u.input(DOOR, RELEASE)
    assert tuple(u.p.events("LIGHT")[-1].msg[1:]) == (LIGHT.top, MODE.off, NONE_U8)
    assert [f.name for f in u.p.events()][-3:] == ["LA_DOOR", "LIGHT", "STATE"]
    u.inject(u.now() + 10, BUTTON)
    u.inject(u.now() + 20, POWER, RELEASE)
    u.until(u.now() + 30)
    assert [f.name for f in u.p.events() if f.name != "INPUT_SEEN"][-3:] == ["LIGHT", "LIGHT", "STATE"]   # on, off
    assert u.p.events("LIGHT")[-1].msg.mode == MODE.off


def test_a_firing_press_puts_the_top_light_out():
    u = Unit(seed=2, fire_base_permille=0, fire_step_permille=1000)  # the second press always fires
    u.load(10)
    u.inject(T0, BUTTON)
    u.inject(T0 + 1000, BUTTON)
    u.until(T0 + 2000)
    t = T0 + 1000
    assert [(n, p) for _, n, p in u.trace(t) if n in ("SOUND", "LIGHT", "STATE")] == [
        ("SOUND", (SOUND.ding, 0)), ("SOUND", (SOUND.fire, 0)),
        ("LIGHT", (LIGHT.top, MODE.off, NONE_U8)), ("STATE", (ST.firing, ST.ready))]


# ---- accounting over long random runs ----

def _run_for(link, dec, us: int):
    """Every message the unit sends in the next us of link time."""
    end = link.now_us() + us
    while True:
        left = end - link.now_us()
        data, _ = link.read(max(0, left))
        yield from (f.msg for f in dec.feed(data))
        if left <= 0 and not data:
            return


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_accounting_invariant_over_long_random_runs(seed):
    r = random.Random(seed)
    link = VirtualLink("launcher", seed, card_capacity=40)
    dec = StreamDecoder()
    seq = 0
    inside = loaded = fired = 0
    dings = results = 0
    events = 0

    def send(m):
        nonlocal seq
        link.write(encode(m, seq, 0))
        seq += 1

    for cfg, value in (("motor_us", 0), ("card_interval_us", 1000)):
        send(msg.CONFIG_SET(PARAMS_BY_NAME[cfg].id, value))
    for step in range(3000):
        x = r.random()
        if x < 0.6:
            send(msg.INPUT(BUTTON, PRESS, 0))
        elif x < 0.65:
            send(msg.INPUT(DOOR, PRESS, 0))
        elif x < 0.8:
            send(msg.INPUT(LOAD, PRESS, r.randrange(0, 20)))
        elif x < 0.95:
            send(msg.INPUT(DOOR, RELEASE, 0))
        elif x < 0.97:
            send(msg.INPUT(POWER, RELEASE if x < 0.953 else PRESS, 0))     # off now and then, mostly on
        else:
            send(msg.STATUS_GET())
        for m in _run_for(link, dec, r.choice((0, 500, 5000, 50_000))):
            events += 1
            if m.__class__ is msg.LA_LOADED:
                inside, loaded, fired = m.inside, m.loaded_total, m.fired_total
                assert m.loaded_total == m.inside + m.fired_total
            elif m.__class__ is msg.LA_CARD:
                assert (m.inside, m.fired_total) == (inside - 1, fired + 1)
                inside, fired = m.inside, m.fired_total
                assert loaded == inside + fired
            elif m.__class__ is msg.LA_RESULT:
                results += 1
                assert m.loaded_total == m.inside + m.fired_total == loaded
                assert (m.inside, m.fired_total) == (inside, fired) and m.fired <= m.planned
            elif m.__class__ is msg.LA_DING:
                dings += 1
                assert dings == results + 1                    # every press is closed before the next
            elif m.__class__ is msg.LA_EMPTY:
                assert inside == 0 and m.fired_total == fired
            elif m.__class__ is msg.STATUS:
                assert m.cards == inside
            elif m.__class__ is msg.LA_DOOR:
                assert m.inside == inside
    assert dings > 500 and fired > 200 and events > 5000


# ---- served over a real pty ----

def test_pty_handshake_and_a_press(emulator_process):
    proc, (path,) = emulator_process("launcher", "--pty", "--seed", "3")
    assert path.startswith("/dev/")
    link = SelectLink.open_path(path)
    try:
        p = Probe(link)
        ident = p.request(msg.HELLO(1, 0), timeout_us=5_000_000).msg
        assert (ident.kind, ident.card_capacity) == (ENUMS["unit_kind"].launcher, 98)
        assert p.request(msg.CONFIG_SET(PARAMS_BY_NAME["fire_base_permille"].id, 1000),
                         timeout_us=5_000_000).name == "CONFIG_VALUE"
        now = p.request(msg.TIME_SYNC(0), timeout_us=5_000_000).msg.t3_us
        t = now + 50_000
        for at, inp, action, value in ((t, DOOR, PRESS, 0), (t + 1, LOAD, PRESS, 20), (t + 2, DOOR, RELEASE, 0),
                                       (t + 10, BUTTON, PRESS, 0)):
            assert p.request(msg.INJECT(wrap(at), inp, action, value), timeout_us=5_000_000).name == "ACK"
        res = p.wait_event("LA_RESULT", 5_000_000).msg
        cards = [f.msg for f in p.events("LA_CARD")]
        assert res.press_us == wrap(t + 10) and res.fired == res.planned == len(cards) >= 1
        assert res.knowable_us == wrap(t + 10 + MOTOR + (res.fired - 1) * INTERVAL)
        assert res.loaded_total == res.inside + res.fired_total == 20
    finally:
        link.close()
    proc.terminate()
    assert proc.wait(timeout=10) == 0
