"""Flash (SPEC.md 8): registration and the game's start, each turn and its boundary to the microsecond (FL-1),
and who is selected next (FL-3: the reference draws and their statistics)."""
from __future__ import annotations

import pytest

from unohil.protocol import StreamDecoder, encode, msg
from unohil.protocol.algorithms import Pcg32, pick
from unohil.emulator.inprocess import VirtualLink

from flash_unit import (BUZZ, DISP, ERR, FLASH, LIGHT_PLAYER, LONG, OFF, ON, PEN, PLAY, PRESS, RELEASE, SEL, SHORT,
                        SOUND, SPEED, SRC, ST, SWITCH, T0, Unit, others)


def test_registration_and_game_start():
    u = Unit(seed=7)
    p = u.p
    for i in (4, 1, 1):
        assert p.request(msg.INPUT(i, PRESS, 0)).name == "ACK"
    r = p.request(msg.INPUT(6, PRESS, 0))                         # the base has 6 buttons: 0..5
    assert (r.name, r.msg.error) == ("NAK", ERR.bad_value)
    assert p.request(msg.INPUT(1, RELEASE, 0)).name == "ACK"
    assert [(m.disposition) for m in u.seen(1)] == [DISP.acted, DISP.reported, DISP.reported]
    assert [tuple(f.msg[1:]) for f in p.events("FL_REGISTERED")] == [(4, 1), (1, 2)]
    assert [f.msg.sound for f in p.events("SOUND")] == [SOUND.registered] * 2
    t = u.now() + 100
    u.tap(t, PLAY)
    u.until(t)
    first = u.selected().player
    assert u.trace(t) == [
        (t, "FL_GAME_START", (0b10010, 2)),
        (t, "SOUND", (SOUND.start, 0)),
        (t, "FL_SELECTED", (first, 1, 0, SEL.start)),               # turn 1, unlimited at boot
        (t, "LIGHT", (LIGHT_PLAYER, ON, first)),
        (t, "SOUND", (SOUND.select, 0)),
        (t, "STATE", (ST.turn, ST.setup)),
    ]
    assert first in (1, 4)


def test_start_needs_two_players():
    u = Unit()
    r = u.p.request(msg.INPUT(PLAY, PRESS, 0))
    assert (r.name, r.msg.error, r.msg.detail) == ("NAK", ERR.wrong_state, ST.setup)
    u.p.request(msg.INPUT(3, PRESS, 0))
    r = u.p.request(msg.INPUT(PLAY, PRESS, 0))
    assert (r.name, r.msg.error) == ("NAK", ERR.wrong_state)
    u.p.request(msg.INPUT(5, PRESS, 0))
    assert u.p.request(msg.INPUT(PLAY, PRESS, 0)).name == "ACK"
    assert u.state() == ST.turn
    assert [m.disposition for m in u.seen(PLAY)] == [DISP.refused, DISP.refused, DISP.acted]


def test_buttons_do_not_register_once_the_game_runs():
    u = Unit()
    first = u.start((0, 1))
    u.inject(T0 + 10, 3)
    u.until(T0 + 10)
    assert u.seen(3)[-1].disposition == DISP.reported
    assert len(u.p.events("FL_REGISTERED")) == 2 and first in (0, 1)


@pytest.mark.parametrize("players", [2, 3, 8])
def test_players_option(players):
    u = Unit(players=players)
    ident = u.p.request(msg.HELLO(1, 0)).msg
    assert (ident.players, ident.card_capacity) == (players, 0)
    for i in range(players):
        assert u.p.request(msg.INPUT(i, PRESS, 0)).name == "ACK"
    if players < 8:
        assert u.p.request(msg.INPUT(players, PRESS, 0)).msg.error == ERR.bad_value
    assert u.p.events("FL_REGISTERED")[-1].msg.count == players


def test_speed_switch_reports_and_is_checked():
    u = Unit(turn_short_us=2_500_000)
    for v, t in ((SPEED.four_seconds, 2_500_000), (SPEED.six_seconds, LONG), (SPEED.unlimited, 0),
                 (SPEED.unlimited, 0)):
        assert u.p.request(msg.INPUT(SWITCH, PRESS, v)).name == "ACK"
        assert tuple(u.p.events("FL_SPEED")[-1].msg[1:]) == (v, t)
    r = u.p.request(msg.INPUT(SWITCH, PRESS, 3))
    assert (r.name, r.msg.error) == ("NAK", ERR.bad_value)
    assert u.p.request(msg.INPUT(SWITCH, RELEASE, 0)).name == "ACK"
    assert [m.disposition for m in u.seen(SWITCH)][-2:] == [DISP.refused, DISP.reported]
    assert len(u.p.events("FL_SPEED")) == 4


# ---- turns and the turn boundary (FL-1) ----

@pytest.mark.parametrize("speed,length", [(SPEED.four_seconds, SHORT), (SPEED.six_seconds, LONG)])
def test_press_one_us_before_the_turn_time_ends_the_turn(speed, length):
    u = Unit(seed=3)
    first = u.start(speed=speed)
    assert u.selected().turn_time_us == length
    t = T0 + length - 1
    u.inject(t, first)
    u.until(t + 10 * length)
    nxt = u.p.events("FL_SELECTED")[1].msg
    assert u.trace(t, t) == [
        (t, "FL_TURN_END", (first, 1, length - 1)),
        (t, "LIGHT", (LIGHT_PLAYER, OFF, first)),
        (t, "FL_SELECTED", (nxt.player, 2, length, SEL.next)),
        (t, "LIGHT", (LIGHT_PLAYER, ON, nxt.player)),
        (t, "SOUND", (SOUND.select, 0)),
    ]
    assert u.p.events("FL_TIMEOUT")[0].time_us == t + length       # the second turn's own timeout
    assert u.seen(first)[0].disposition == DISP.acted


@pytest.mark.parametrize("speed,length", [(SPEED.four_seconds, SHORT), (SPEED.six_seconds, LONG)])
def test_press_at_exactly_the_turn_time_is_a_timeout(speed, length):
    u = Unit(seed=3)
    first = u.start(speed=speed)
    t = T0 + length
    u.inject(t, first)
    u.until(t)
    nxt = u.selected()
    assert u.trace(t, seen=True) == [
        (t, "INPUT_SEEN", (first, PRESS, 0, SRC.injected, DISP.acted, 0)),
        (t, "SOUND", (SOUND.timeout, 0)),
        (t, "FL_TIMEOUT", (first, 1)),
        (t, "FL_PENALTY", (first, 2, PEN.timeout)),
        (t, "LIGHT", (LIGHT_PLAYER, FLASH, first)),
        (t, "STATE", (ST.flagged, ST.turn)),
        (t, "LIGHT", (LIGHT_PLAYER, OFF, first)),
        (t, "FL_SELECTED", (nxt.player, 2, length, SEL.after_timeout)),
        (t, "LIGHT", (LIGHT_PLAYER, ON, nxt.player)),
        (t, "SOUND", (SOUND.select, 0)),
        (t, "STATE", (ST.turn, ST.flagged)),
    ]
    assert not u.p.events("FL_TURN_END")


def test_timeout_flags_the_player_until_they_press():
    u = Unit(seed=11)
    first = u.start((0, 1, 2), speed=SPEED.four_seconds)
    other = others(u, (0, 1, 2), first)[0]
    u.inject(T0 + SHORT + 1000, other)
    u.tap(T0 + SHORT + 2000, BUZZ)
    u.until(T0 + SHORT + 60_000_000)                       # no timer runs while flagged
    assert u.state() == ST.flagged
    assert [f.time_us for f in u.p.events("FL_TIMEOUT")] == [T0 + SHORT]
    assert u.seen(other)[-1].disposition == DISP.reported
    assert u.seen(BUZZ)[-1].disposition == DISP.reported          # BUZZER outside a turn (FL-6)
    t = u.now() + 5
    u.inject(t, first)
    u.until(t)
    sel = u.selected()
    assert (sel.turn, sel.reason) == (2, SEL.after_timeout)
    assert u.state() == ST.turn


def test_unlimited_turn_never_times_out():
    u = Unit(seed=2)
    first = u.start(speed=SPEED.unlimited)
    assert u.selected().turn_time_us == 0
    u.until(T0 + 250_000_000)                              # sleep_after_us is 300 s
    assert not u.p.events("FL_TIMEOUT") and u.state() == ST.turn
    u.inject(T0 + 250_000_000 + 1, first)
    u.until(T0 + 250_000_001)
    assert u.p.events("FL_TURN_END")[0].msg.elapsed_us == 250_000_001


def test_other_buttons_during_a_turn_are_reported():
    u = Unit(seed=4)
    first = u.start((0, 2, 4), speed=SPEED.four_seconds)
    t = T0 + 1000
    for k, i in enumerate([x for x in range(6) if x != first]):
        u.inject(t + k, i)
    u.inject(t + 10, first, RELEASE)
    u.until(t + 10)
    assert [u.seen(i)[-1].disposition for i in range(6) if i != first] == [DISP.reported] * 5
    assert u.seen(first)[-1].disposition == DISP.reported                # a release does not end the turn
    assert u.state() == ST.turn and len(u.p.events("FL_SELECTED")) == 1


def test_speed_change_mid_turn_applies_from_the_next_turn():
    u = Unit(seed=5)
    first = u.start(speed=SPEED.four_seconds)
    u.inject(T0 + 1_000_000, SWITCH, PRESS, SPEED.unlimited)
    u.until(T0 + 1_000_000)
    assert u.trace(T0 + 1_000_000) == [(T0 + 1_000_000, "FL_SPEED", (SPEED.unlimited, 0))]
    u.until(T0 + SHORT)
    assert u.p.events("FL_TIMEOUT")[0].time_us == T0 + SHORT       # the running turn kept its 4 s
    u.inject(T0 + SHORT + 10, first)
    u.until(T0 + SHORT + 10)
    assert u.selected().turn_time_us == 0
    u.inject(T0 + SHORT + 20, SWITCH, PRESS, SPEED.six_seconds)
    u.until(T0 + SHORT + 100_000_000)
    assert len(u.p.events("FL_TIMEOUT")) == 1                       # the unlimited turn runs on


def test_turn_numbers_count_every_selection():
    u = Unit(seed=9)
    cur = u.start((0, 1), speed=SPEED.four_seconds)
    t = T0
    for k in range(10):
        t += 100_000
        u.inject(t, cur)
        u.until(t)
        cur = u.selected().player
    assert [f.msg.turn for f in u.p.events("FL_SELECTED")] == list(range(1, 12))
    assert [f.msg.turn for f in u.p.events("FL_TURN_END")] == list(range(1, 11))
    assert [f.msg.elapsed_us for f in u.p.events("FL_TURN_END")] == [100_000] * 10


def test_draw_two_the_same_player_twice_is_penalised_twice():
    """FL-5: a player selected twice in a row must press in time both turns; two timeouts are
    two penalties."""
    players = (0, 1, 2)
    seed = next(s for s in range(1000)
                if (lambda r: pick(r, list(players)) == pick(r, list(players)))(Pcg32(s)))
    u = Unit(seed=seed)
    first = u.start(players, speed=SPEED.four_seconds)
    u.inject(T0 + SHORT + 500_000, first)                  # draws 2, presses the flashing button
    u.until(T0 + SHORT + 500_000)
    again = u.selected()
    assert (again.player, again.turn, again.reason) == (first, 2, SEL.after_timeout)
    u.until(T0 + SHORT + 500_000 + SHORT)
    pens = u.p.events("FL_PENALTY")
    assert [(f.time_us, tuple(f.msg[1:])) for f in pens] == [
        (T0 + SHORT, (first, 2, PEN.timeout)), (T0 + 2 * SHORT + 500_000, (first, 2, PEN.timeout))]
    assert [tuple(f.msg[1:]) for f in u.p.events("FL_TIMEOUT")] == [(first, 1), (first, 2)]


# ---- selection statistics (FL-3) ----

def _turns(seed: int, registered, n_turns: int) -> list[int]:
    """n_turns selections of a game, each turn ended at once by its player (INPUT commands)."""
    link = VirtualLink("flash", seed)
    dec = StreamDecoder()
    seq = 0

    def send(m):
        nonlocal seq
        link.write(encode(m, seq, 0))
        seq += 1

    for i in registered:
        send(msg.INPUT(i, PRESS, 0))
    send(msg.INPUT(PLAY, PRESS, 0))
    out = []
    while len(out) < n_turns:
        data, _ = link.read(0)
        got = [f.msg.player for f in dec.feed(data) if f.msg.__class__ is msg.FL_SELECTED]
        out += got
        if got:
            send(msg.INPUT(got[-1], PRESS, 0))
    return out[:n_turns]


def test_selection_replays_the_reference_draws():
    regs = [1, 3, 4]
    got = _turns(77, regs, 300)
    rng = Pcg32(77)
    assert got == [pick(rng, regs) for _ in range(300)]
    assert set(got) == set(regs)


@pytest.mark.parametrize("n", [2, 3, 6])
def test_next_player_is_uniform_and_repeats_one_time_in_n(n):
    """Chi-square over the selections and a binomial bound on repeats. The seeds are fixed, so the
    outcome is deterministic; the bounds (p = 0.001 quantiles) are what a fair unit passes."""
    turns = 6000
    got = _turns(1000 + n, list(range(n)), turns)
    counts = [got.count(i) for i in range(n)]
    expect = turns / n
    chi2 = sum((c - expect) ** 2 / expect for c in counts)
    critical = {1: 10.83, 2: 13.82, 5: 20.52}[n - 1]
    assert chi2 < critical, (counts, chi2)
    repeats = sum(a == b for a, b in zip(got, got[1:]))
    pairs = turns - 1
    mean, sd = pairs / n, (pairs * (1 / n) * (1 - 1 / n)) ** 0.5
    assert abs(repeats - mean) < 3.3 * sd, (repeats, mean)
    # the transition matrix is flat too: after any player, every player (itself included) follows
    for a in range(n):
        after = [b for x, b in zip(got, got[1:]) if x == a]
        assert all(abs(after.count(b) - len(after) / n) < 4 * (len(after) / n) ** 0.5 for b in range(n))
