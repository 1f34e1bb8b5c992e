"""Every Showdown rule (SPEC.md section 7) on the virtual clock,
through the wire: both sides of every boundary, to the microsecond."""
from __future__ import annotations

import pytest

from unohil.protocol import ENUMS, NONE_I32, NONE_U8, NONE_U32, PARAMS_BY_NAME, msg

from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
ST = ENUMS["showdown_state"]
R = ENUMS["showdown_reason"]
LIGHT = ENUMS["showdown_light"]
SOUND = ENUMS["showdown_sound"]
A, B, TIMER, LOAD = 0, 1, 2, 3
NONE = 255
PRESS, RELEASE = 1, 0
D = 3_000_000          # the countdown, fixed by setting min = max
W = 1000               # tie window (default)
FLIGHT = 250_000       # default
GO = 5_000_000         # go timeout (default)
T0 = 100_000           # TIMER press time in most tests
GREEN = T0 + D


class Unit:
    def __init__(self, seed: int = 1, cards: int = 2, countdown: int | None = D, options: dict | None = None,
                 **config):
        self.link = VirtualLink("showdown", seed, **(options or {}))
        self.p = Probe(self.link)
        self.p.wait_event("BOOT")
        if countdown is not None:
            config.setdefault("countdown_min_us", countdown)
            config.setdefault("countdown_max_us", countdown)
        for name, value in config.items():
            r = self.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
            assert r.name == "CONFIG_VALUE", r
        if cards:
            assert self.p.request(msg.INPUT(LOAD, PRESS, cards)).name == "ACK"
        self.mark = len(self.p.frames)

    def inject(self, at: int, inp: int, action: int = PRESS, value: int = 0):
        r = self.p.request(msg.INJECT(at, inp, action, value))
        assert r.name == "ACK", r
        return r

    def timer(self, at: int = T0) -> int:
        self.inject(at, TIMER)
        return at + D

    def verdict(self):
        return self.p.wait_event("SD_VERDICT", 100_000_000)

    def settle(self, us: int = 20_000_000) -> None:
        self.p.run_for(us)

    def events(self, since_mark: bool = True) -> list:
        frames = self.p.frames[self.mark:] if since_mark else self.p.frames
        return [f for f in frames if f.msg.KIND == "event"]

    def trace(self, t_from: int = 0) -> list:
        """(time, name, payload without event_seq) of events at or after t_from."""
        return [(f.time_us, f.name, tuple(f.msg[1:])) for f in self.events() if f.time_us >= t_from]

    def state(self) -> int:
        return self.p.request(msg.STATUS_GET()).msg.state


def seen(u: Unit, inp: int) -> list:
    return [f.msg for f in u.events() if f.name == "INPUT_SEEN" and f.msg.input == inp]


# ---- loading ----

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


# ---- first press and the tie window ----

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


# ---- the line model ----

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
