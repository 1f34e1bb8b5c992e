"""Every Flash rule (SPEC.md 8, FL-1..FL-19) on the virtual clock, through the
wire: both sides of every boundary to the microsecond, the selection statistics, and one
game over a real pty."""
from __future__ import annotations


import pytest

from unohil.protocol import ENUMS, NONE_I32, PARAMS_BY_NAME, StreamDecoder, encode, msg
from unohil.protocol.devtime import wrap
from unohil.protocol.algorithms import Pcg32, pick

from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe, SelectLink

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
ST = ENUMS["flash_state"]
SEL = ENUMS["flash_select_reason"]
PEN = ENUMS["flash_penalty_reason"]
VR = ENUMS["flash_buzzer_reason"]
SOUND = ENUMS["flash_sound"]
SPEED = ENUMS["flash_speed"]
LIGHT_PLAYER = 0
OFF, ON, FLASH = 0, 1, 2
PLAY, BUZZ, SWITCH, POWER = 8, 9, 10, 11
PRESS, RELEASE = 1, 0
T0 = 100_000            # the game starts here in most tests
SHORT, LONG = 4_000_000, 6_000_000
WINDOW = 5_000_000
TIE = 1000


class Unit:
    def __init__(self, seed: int = 1, players: int | None = None, **config):
        opts = {"players": players} if players is not None else {}
        self.link = VirtualLink("flash", seed, **opts)
        self.p = Probe(self.link)
        self.p.wait_event("BOOT")
        for name, value in config.items():
            r = self.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
            assert r.name == "CONFIG_VALUE", r

    def inject(self, at: int, inp: int, action: int = PRESS, value: int = 0):
        r = self.p.request(msg.INJECT(wrap(at), inp, action, value))
        assert r.name == "ACK", r
        return r

    def tap(self, at: int, inp: int) -> None:
        """Press and release 1 us later: PLAY/PAUSE and BUZZER held together would reset the unit."""
        self.inject(at, inp)
        self.inject(at + 1, inp, RELEASE)

    def now(self) -> int:
        return self.link.device.now()

    def until(self, t: int) -> None:
        """Run the unit up to device time t (inclusive of everything due at t)."""
        self.p.run_for(max(0, t - self.now()))

    def start(self, players=(0, 1, 2), at: int = T0, speed: int | None = None) -> int:
        """Register players just before at, set the speed, press PLAY/PAUSE at at; returns the
        first selected player."""
        for k, i in enumerate(players):
            self.inject(at - 1000 + k, i)
        if speed is not None:
            self.inject(at - 10, SWITCH, PRESS, speed)
        self.tap(at, PLAY)
        self.until(at)
        return self.selected().player

    def selected(self):
        return self.p.events("FL_SELECTED")[-1].msg

    def trace(self, t_from: int = 0, t_to: int | None = None, seen: bool = False) -> list:
        return [(f.time_us, f.name, tuple(f.msg[1:])) for f in self.p.events()
                if f.time_us >= t_from and (t_to is None or f.time_us <= t_to) and (seen or f.name != "INPUT_SEEN")]

    def state(self) -> int:
        return self.p.request(msg.STATUS_GET()).msg.state

    def seen(self, inp: int) -> list:
        return [f.msg for f in self.p.events("INPUT_SEEN") if f.msg.input == inp]

    def names(self, t_from: int = 0) -> list[str]:
        return [n for _, n, _ in self.trace(t_from)]


def others(u: Unit, registered, player) -> list[int]:
    return [p for p in registered if p != player]


# ---- registration and start ----

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


# ---- the buzzer race ----

def _buzzer(u: Unit, players, at: int):
    """Start a game, press BUZZER at at; returns (buzzer player, opponents)."""
    first = u.start(players, speed=SPEED.four_seconds)
    u.tap(at, BUZZ)
    u.until(at)
    return first, others(u, players, first)


@pytest.mark.parametrize("players", [(0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4), (0, 1, 2, 3, 4, 5)])
def test_buzzer_race_slowest_draws(players):
    u = Unit(seed=len(players))
    bz = T0 + 500_000
    buzzer, opp = _buzzer(u, players, bz)
    assert u.trace(bz) == [
        (bz, "FL_BUZZER", (buzzer, sum(1 << o for o in opp))),
        (bz, "SOUND", (SOUND.buzzer, 0)),
        *[(bz, "LIGHT", (LIGHT_PLAYER, FLASH, o)) for o in opp],
        (bz, "STATE", (ST.buzzer, ST.turn)),
    ]
    reactions = {o: 150_000 + 37_000 * k for k, o in enumerate(reversed(opp))}
    for o, r in reactions.items():
        u.inject(bz + r, o)
    last = bz + max(reactions.values())
    slowest = max(reactions, key=reactions.get)
    u.until(last + 10 * SHORT)
    v = u.p.wait_event("FL_BUZZER_VERDICT")
    m = v.msg
    assert v.time_us == last
    assert (m.slowest, m.reason, m.tied_mask) == (slowest, VR.slowest, 1 << slowest)
    assert (m.buzzer_us, m.decisive_us, m.knowable_us) == (bz, last, last)
    assert list(m.reaction_us) == [reactions.get(i, NONE_I32) for i in range(8)]
    assert [e for e in u.trace(last, last)] == [
        (last, "FL_BUZZER_VERDICT", tuple(m[1:])),
        (last, "FL_PENALTY", (slowest, 2, PEN.buzzer_slowest)),
        *[(last, "LIGHT", (LIGHT_PLAYER, OFF, p)) for p in sorted(players) if p != slowest],
        (last, "LIGHT", (LIGHT_PLAYER, FLASH, slowest)),
        (last, "SOUND", (SOUND.slowest, 0)),
        (last, "STATE", (ST.flagged, ST.buzzer)),
    ]
    assert not u.p.events("FL_TIMEOUT")                      # the turn timer was discarded
    t = u.now() + 10
    u.inject(t, slowest)
    u.until(t)
    sel = u.selected()
    assert (sel.turn, sel.reason) == (2, SEL.after_flag)
    assert u.state() == ST.turn


def test_two_players_one_opponent_is_always_the_slowest():
    u = Unit(seed=8)
    bz = T0 + 10_000
    buzzer, (opp,) = _buzzer(u, (2, 5), bz)
    u.inject(bz + 90_000, opp)
    u.until(bz + 90_000)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask, m.reaction_us[opp]) == (opp, VR.slowest, 1 << opp, 90_000)
    assert m.reaction_us[buzzer] == NONE_I32


def test_slowest_tie_inside_the_tie_window():
    u = Unit(seed=21)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (0, 1, 2, 3), bz)
    a, b, c = opp
    u.inject(bz + 200_000, a)
    u.inject(bz + 300_000, c)
    u.inject(bz + 300_000 + TIE - 1, b)                     # 999 us after c: a tie
    u.until(bz + 400_000)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask) == (b, VR.slowest_tie, (1 << b) | (1 << c))
    assert m.decisive_us == m.knowable_us == bz + 300_000 + TIE - 1


def test_last_presses_exactly_the_tie_window_apart_are_no_tie():
    u = Unit(seed=21)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (0, 1, 2, 3), bz)
    a, b, c = opp
    u.inject(bz + 200_000, a)
    u.inject(bz + 300_000, c)
    u.inject(bz + 300_000 + TIE, b)
    u.until(bz + 400_000)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask) == (b, VR.slowest, 1 << b)


def test_slowest_tie_at_the_same_microsecond_lowest_index_draws():
    u = Unit(seed=30)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (0, 1, 2, 3, 4), bz)
    hi, lo = max(opp), min(opp)
    rest = [o for o in opp if o not in (hi, lo)]
    for k, o in enumerate(rest):
        u.inject(bz + 100_000 + k, o)
    u.inject(bz + 250_000, hi)                              # the higher index is processed first
    u.inject(bz + 250_000, lo)
    u.until(bz + 300_000)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask) == (lo, VR.slowest_tie, (1 << hi) | (1 << lo))
    assert m.reaction_us[hi] == m.reaction_us[lo] == 250_000


def test_non_presser_draws_at_the_window_end():
    u = Unit(seed=12)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (0, 1, 2, 3, 4, 5), bz)
    u.inject(bz + 100_000, opp[1])
    u.inject(bz + WINDOW - 1, opp[4])                        # 1 us before the end: counted
    end = bz + WINDOW
    u.inject(end, opp[3])                                    # at the end: too late
    u.until(end + 1_000_000)
    v = u.p.wait_event("FL_BUZZER_VERDICT")
    m = v.msg
    late = [opp[0], opp[2], opp[3]]
    assert v.time_us == end
    assert (m.slowest, m.reason, m.tied_mask) == (opp[0], VR.non_presser, sum(1 << o for o in late))
    assert (m.decisive_us, m.knowable_us) == (end, end)
    assert [m.reaction_us[o] for o in opp] == [NONE_I32, 100_000, NONE_I32, NONE_I32, WINDOW - 1]
    assert u.seen(opp[3])[-1].disposition == DISP.reported
    assert len(u.p.events("FL_BUZZER_VERDICT")) == 1 and u.state() == ST.flagged


def test_the_slowest_pressing_at_the_window_end_continues_the_game():
    """The window ends first (FL-9), then the press is the flagged player's, as in FL-1."""
    u = Unit(seed=12)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (0, 1, 2), bz)
    u.inject(bz + 100_000, opp[1])
    end = bz + WINDOW
    u.inject(end, opp[0])
    u.until(end)
    assert u.names(end) == ["FL_BUZZER_VERDICT", "FL_PENALTY", "LIGHT", "LIGHT", "LIGHT", "SOUND", "STATE",
                            "LIGHT", "FL_SELECTED", "LIGHT", "SOUND", "STATE"]
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.reaction_us[opp[0]]) == (opp[0], VR.non_presser, NONE_I32)
    assert u.selected().reason == SEL.after_flag and u.seen(opp[0])[-1].disposition == DISP.acted


def test_nobody_presses_lowest_numbered_opponent_draws():
    u = Unit(seed=13)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (1, 3, 5), bz)
    u.until(bz + WINDOW)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask) == (min(opp), VR.non_presser, sum(1 << o for o in opp))
    assert list(m.reaction_us) == [NONE_I32] * 8


def test_second_press_of_an_opponent_is_reported():
    u = Unit(seed=14)
    bz = T0 + 100_000
    buzzer, opp = _buzzer(u, (0, 1, 2), bz)
    u.inject(bz + 100_000, opp[0])
    u.inject(bz + 200_000, opp[0])
    u.tap(bz + 250_000, BUZZ)
    u.inject(bz + 300_000, opp[1])
    u.until(bz + 300_000)
    assert [m.disposition for m in u.seen(opp[0])] == [DISP.acted, DISP.acted, DISP.reported]
    assert u.seen(BUZZ)[-1].disposition == DISP.reported
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reaction_us[opp[0]]) == (opp[1], 100_000)


def test_cancel_before_any_opponent_presses():
    u = Unit(seed=15)
    bz = T0 + 700_000
    buzzer, opp = _buzzer(u, (0, 1, 2), bz)
    t = bz + 50_000
    u.inject(t, buzzer)
    u.until(t + 2 * WINDOW)
    nxt = u.p.events("FL_SELECTED")[1].msg
    assert u.trace(t, t) == [
        (t, "FL_BUZZER_CANCEL", (buzzer,)),
        (t, "SOUND", (SOUND.cancel, 0)),
        *[(t, "LIGHT", (LIGHT_PLAYER, OFF, o)) for o in opp],
        (t, "FL_TURN_END", (buzzer, 1, 750_000)),
        (t, "LIGHT", (LIGHT_PLAYER, OFF, buzzer)),
        (t, "FL_SELECTED", (nxt.player, 2, SHORT, SEL.after_cancel)),
        (t, "LIGHT", (LIGHT_PLAYER, ON, nxt.player)),
        (t, "SOUND", (SOUND.select, 0)),
        (t, "STATE", (ST.turn, ST.buzzer)),
    ]
    assert not u.p.events("FL_BUZZER_VERDICT")              # the window died with the cancel


def test_no_cancel_once_an_opponent_pressed():
    u = Unit(seed=15)
    bz = T0 + 700_000
    buzzer, opp = _buzzer(u, (0, 1, 2), bz)
    u.inject(bz + 10_000, opp[1])
    u.inject(bz + 20_000, buzzer)
    u.inject(bz + 30_000, opp[0])
    u.until(bz + 30_000)
    assert u.seen(buzzer)[-1].disposition == DISP.reported
    assert not u.p.events("FL_BUZZER_CANCEL")
    assert u.p.wait_event("FL_BUZZER_VERDICT").msg.slowest == opp[0]


# ---- pause (FL-10) ----

def test_pause_freezes_the_turn_timer():
    u = Unit(seed=16)
    first = u.start(speed=SPEED.four_seconds)
    p1, r1 = T0 + 1_000_000, T0 + 21_000_000
    u.tap(p1, PLAY)
    u.inject(p1 + 5, first)                                 # reported while paused
    u.tap(p1 + 6, BUZZ)
    u.tap(r1, PLAY)
    u.until(r1 + SHORT)
    assert u.trace(p1, p1) == [(p1, "FL_PAUSE", (1, 3_000_000)), (p1, "SOUND", (SOUND.pause, 0)),
                               (p1, "STATE", (ST.paused, ST.turn))]
    assert u.trace(r1, r1) == [(r1, "FL_PAUSE", (0, 3_000_000)), (r1, "SOUND", (SOUND.resume, 0)),
                               (r1, "STATE", (ST.turn, ST.paused))]
    assert [f.time_us for f in u.p.events("FL_TIMEOUT")] == [r1 + 3_000_000]
    assert u.seen(first)[-1].disposition == DISP.reported and u.seen(BUZZ)[-1].disposition == DISP.reported


def test_elapsed_excludes_paused_time_and_the_boundary_moves_with_it():
    u = Unit(seed=16)
    first = u.start(speed=SPEED.four_seconds)
    u.tap(T0 + 1_000_000, PLAY)
    u.tap(T0 + 3_000_000, PLAY)                          # 2 s paused
    u.inject(T0 + SHORT + 2_000_000 - 1, first)            # 3.999999 s of turn time
    u.until(T0 + 10_000_000)
    assert u.p.events("FL_TURN_END")[0].msg.elapsed_us == SHORT - 1
    assert [f.msg.turn for f in u.p.events("FL_TIMEOUT")] == [2]            # turn 1 never timed out


def test_pause_at_the_turn_deadline_comes_after_the_timeout():
    u = Unit(seed=17)
    first = u.start(speed=SPEED.four_seconds)
    t = T0 + SHORT
    u.tap(t, PLAY)
    u.until(t)
    assert [n for n in u.names(t)] == ["SOUND", "FL_TIMEOUT", "FL_PENALTY", "LIGHT", "STATE",
                                       "FL_PAUSE", "SOUND", "STATE"]
    assert tuple(u.p.events("FL_PAUSE")[0].msg[1:]) == (1, 0)       # flagged: no timer runs
    assert u.p.events("STATE")[-1].msg.previous == ST.flagged


def test_pause_in_an_unlimited_turn_has_nothing_remaining():
    u = Unit(seed=18)
    u.start(speed=SPEED.unlimited)
    u.tap(T0 + 10, PLAY)
    u.tap(T0 + 20, PLAY)
    u.until(T0 + 20)
    assert [tuple(f.msg[1:]) for f in u.p.events("FL_PAUSE")] == [(1, 0), (0, 0)]


def test_pause_in_buzzer_mode_freezes_the_window_and_the_reactions():
    u = Unit(seed=19)
    bz = T0 + 100_000
    buzzer, (a, b) = _buzzer(u, (0, 1, 2), bz)
    u.inject(bz + 1_000_000, a)
    u.tap(bz + 2_000_000, PLAY)
    u.inject(bz + 2_000_001, b)                             # reported: the race is paused
    u.tap(bz + 12_000_000, PLAY)
    u.until(bz + 20_000_000)
    assert [tuple(f.msg[1:]) for f in u.p.events("FL_PAUSE")] == [(1, 3_000_000), (0, 3_000_000)]
    v = u.p.wait_event("FL_BUZZER_VERDICT")
    m = v.msg
    end = bz + WINDOW + 10_000_000
    assert v.time_us == end and (m.decisive_us, m.knowable_us) == (end, end)
    assert (m.slowest, m.reason, m.reaction_us[a]) == (b, VR.non_presser, 1_000_000)


def test_reaction_excludes_the_pause():
    u = Unit(seed=19)
    bz = T0 + 100_000
    buzzer, (a, b) = _buzzer(u, (0, 1, 2), bz)
    u.tap(bz + 100_000, PLAY)
    u.tap(bz + 600_000, PLAY)
    u.inject(bz + 700_000, a)
    u.inject(bz + 800_000, b)
    u.until(bz + 800_000)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.reaction_us[a], m.reaction_us[b], m.slowest, m.decisive_us) == (200_000, 300_000, b, bz + 800_000)


# ---- sleep (FL-11) ----

SLEEP = 10_000_000


def test_sleep_after_inactivity_and_one_play_pause_resumes_play():
    """Document 003: paused or asleep, one PLAY/PAUSE resumes the game (FL-11)."""
    u = Unit(seed=20, sleep_after_us=SLEEP)
    first = u.start(speed=SPEED.four_seconds)
    last = T0 + 1_000_000
    u.tap(last, PLAY)                                    # paused with 3 s left: no timeout comes
    s = last + 1 + SLEEP                                    # the release was the last edge
    u.until(s)
    assert u.trace(s, s) == [
        (s, "FL_SLEEP", (1,)), (s, "SOUND", (SOUND.sleep, 0)),
        (s, "LIGHT", (LIGHT_PLAYER, OFF, first)),
        (s, "STATE", (ST.asleep, ST.paused)),
    ]
    w = s + 50_000_000
    u.inject(w - 10, first)                                 # reported, does not wake
    u.tap(w, PLAY)
    u.until(w)
    assert u.trace(w, w) == [
        (w, "FL_SLEEP", (0,)), (w, "SOUND", (SOUND.wake, 0)),
        (w, "LIGHT", (LIGHT_PLAYER, ON, first)),
        (w, "FL_PAUSE", (0, 3_000_000)),                    # the pause it slept in ends with it
        (w, "STATE", (ST.turn, ST.asleep)),
    ]
    u.inject(w + 2_999_999, first)                          # the turn's last microsecond
    u.until(w + 3_000_000)
    assert not u.p.events("FL_TIMEOUT")
    assert u.p.events("FL_TURN_END")[0].msg.elapsed_us == SHORT - 1
    assert [m.disposition for m in u.seen(first)] == [DISP.acted, DISP.reported, DISP.acted]


def test_sleep_during_a_turn_freezes_it_and_play_pause_resumes_it():
    u = Unit(seed=22, sleep_after_us=SLEEP, turn_long_us=20_000_000)
    u.start(speed=SPEED.six_seconds)
    s = T0 + 1 + SLEEP                                      # PLAY/PAUSE released at T0 + 1
    u.until(s + 100_000_000)
    assert [f.time_us for f in u.p.events("FL_SLEEP")] == [s] and not u.p.events("FL_TIMEOUT")
    w = u.now() + 1
    u.tap(w, PLAY)
    u.until(w)
    assert u.trace(w, w)[-1] == (w, "STATE", (ST.turn, ST.asleep))
    assert not u.p.events("FL_PAUSE")                       # it never paused
    u.until(w + 10_000_000)
    assert [f.time_us for f in u.p.events("FL_TIMEOUT")] == [w + 10_000_000 - 1]


def test_asleep_while_flagged_wakes_flagged_and_the_flashing_button_selects():
    """Document 003: on resuming, a flashing Player button is pressed to select the next player."""
    u = Unit(seed=21, sleep_after_us=SLEEP)
    first = u.start(speed=SPEED.four_seconds)
    timeout = T0 + SHORT
    s = timeout + SLEEP                                     # no edge since the PLAY/PAUSE release
    u.until(s)
    assert (u.state(), u.p.events("FL_TIMEOUT")[0].time_us) == (ST.asleep, timeout)
    w = s + 1_000_000
    u.tap(w, PLAY)
    u.until(w)
    assert u.trace(w, w) == [
        (w, "FL_SLEEP", (0,)), (w, "SOUND", (SOUND.wake, 0)),
        (w, "LIGHT", (LIGHT_PLAYER, FLASH, first)),
        (w, "STATE", (ST.flagged, ST.asleep)),
    ]
    u.inject(w + 500_000, first)
    u.until(w + 500_000)
    assert u.selected().reason == SEL.after_timeout and u.state() == ST.turn


def test_any_edge_restarts_the_inactivity_period():
    u = Unit(seed=23, sleep_after_us=SLEEP)
    u.inject(T0, 0)
    u.inject(T0 + SLEEP - 1, 0, RELEASE)                    # reported, still activity
    u.inject(T0 + 2 * SLEEP - 2, SWITCH, PRESS, SPEED.six_seconds)
    u.until(T0 + 3 * SLEEP)
    assert [f.time_us for f in u.p.events("FL_SLEEP")] == [T0 + 3 * SLEEP - 2]
    assert u.p.events("STATE")[-1].msg.previous == ST.setup


def test_an_edge_at_the_sleep_instant_comes_after_the_sleep():
    u = Unit(seed=23, sleep_after_us=SLEEP)
    u.inject(T0, 0)
    t = T0 + SLEEP
    u.tap(t, PLAY)
    u.until(t)
    assert u.names(t) == ["FL_SLEEP", "SOUND", "STATE", "FL_SLEEP", "SOUND", "STATE"]
    assert u.state() == ST.setup                            # slept in setup: wakes to setup


def test_sleep_after_us_set_later_counts_from_the_last_edge():
    u = Unit(seed=24)
    u.inject(T0, 0)
    u.until(T0 + 5_000_000)
    assert u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME["sleep_after_us"].id, SLEEP)).name == "CONFIG_VALUE"
    u.until(T0 + SLEEP + 1)
    assert [f.time_us for f in u.p.events("FL_SLEEP")] == [T0 + SLEEP]


def test_no_sleep_while_off():
    u = Unit(seed=24, sleep_after_us=SLEEP)
    u.inject(T0, POWER, RELEASE)
    u.until(T0 + 5 * SLEEP)
    assert not u.p.events("FL_SLEEP") and u.state() == ST.off


# ---- reset (FL-12) ----

HOLD = 3_000_000


def _hold(u: Unit, at: int, duration: int):
    u.inject(at, PLAY)
    u.inject(at, BUZZ)
    u.inject(at + duration, PLAY, RELEASE)
    u.inject(at + duration, BUZZ, RELEASE)


def test_holding_both_for_reset_hold_resets():
    u = Unit(seed=25)
    first = u.start(speed=SPEED.four_seconds)
    h = T0 + 1_000_000
    _hold(u, h, HOLD)
    u.until(h + HOLD + SHORT)
    r = h + HOLD
    assert u.trace(r, r, seen=True) == [
        (r, "INPUT_SEEN", (PLAY, RELEASE, 0, SRC.injected, DISP.reported, 0)),
        (r, "FL_RESET", (HOLD,)),
        (r, "SOUND", (SOUND.reset, 0)),
        (r, "LIGHT", (LIGHT_PLAYER, OFF, first)),
        (r, "STATE", (ST.setup, ST.paused)),                  # the PLAY/PAUSE press had paused it
        (r, "INPUT_SEEN", (BUZZ, RELEASE, 0, SRC.injected, DISP.reported, 0)),
    ]
    assert [m.disposition for m in u.seen(BUZZ)] == [DISP.reported, DISP.reported]   # paused: reported
    assert u.state() == ST.setup
    assert u.p.request(msg.INPUT(PLAY, PRESS, 0)).msg.error == ERR.wrong_state    # nobody registered
    u.p.request(msg.INPUT(first, PRESS, 0))
    assert u.p.events("FL_REGISTERED")[-1].msg.count == 1


def test_a_hold_one_us_short_does_nothing():
    u = Unit(seed=25)
    u.start(speed=SPEED.unlimited)
    h = T0 + 1_000_000
    _hold(u, h, HOLD - 1)
    u.until(h + 2 * HOLD)
    assert not u.p.events("FL_RESET")
    assert u.state() == ST.paused


def test_reset_hold_is_configurable_and_needs_both_buttons():
    u = Unit(seed=26, reset_hold_us=500_000)
    u.inject(T0, 0)
    u.inject(T0 + 1, 1)
    u.inject(T0 + 10, BUZZ)                              # buzzer alone: setup reports it
    u.inject(T0 + 600_000, BUZZ, RELEASE)
    u.inject(T0 + 700_000, BUZZ)
    u.inject(T0 + 800_000, PLAY)                          # both down from here: the game starts too
    u.until(T0 + 800_000 + 500_000)
    assert [f.time_us for f in u.p.events("FL_RESET")] == [T0 + 1_300_000]
    assert tuple(u.p.events("FL_RESET")[0].msg[1:]) == (500_000,)
    assert u.p.events("FL_GAME_START")[0].time_us == T0 + 800_000
    assert u.p.events("STATE")[-1].msg.state == ST.setup


def test_buttons_pressed_and_never_released_stay_held():
    """FL-19: edges are all the unit sees. PLAY/PAUSE pressed to start and never released, then BUZZER
    pressed and never released: both are held, and the unit resets reset_hold_us later."""
    u = Unit(seed=27)
    for i in (0, 1, 2):
        u.inject(T0 - 10 + i, i)
    u.inject(T0, PLAY)                                      # starts the game, stays down
    bz = T0 + 500_000
    u.inject(bz, BUZZ)                                      # a buzzer race, and both buttons down
    u.until(bz + HOLD)
    assert [f.time_us for f in u.p.events("FL_BUZZER")] == [bz]
    assert [f.time_us for f in u.p.events("FL_RESET")] == [bz + HOLD]
    assert u.state() == ST.setup


def test_reset_in_setup_still_reports_the_state():
    u = Unit(seed=27)
    u.inject(T0, 3)
    _hold(u, T0 + 10, HOLD)
    u.until(T0 + 10 + HOLD)
    assert u.trace(T0 + 10 + HOLD)[-1] == (T0 + 10 + HOLD, "STATE", (ST.setup, ST.setup))


# ---- power and RESET new_game (FL-13, FL-17) ----

def test_power_off_loses_the_game_and_on_starts_in_setup():
    u = Unit(seed=28)
    first = u.start(speed=SPEED.four_seconds)
    off = T0 + 1_000_000
    u.inject(off, POWER, RELEASE)
    u.inject(off + 10, first)
    u.tap(off + 20, PLAY)
    u.inject(off + 30, SWITCH, PRESS, SPEED.unlimited)      # the switch works while off
    u.until(off + 10 * SHORT)
    assert u.trace(off, off) == [(off, "LIGHT", (LIGHT_PLAYER, OFF, first)), (off, "STATE", (ST.off, ST.turn))]
    assert not u.p.events("FL_TIMEOUT")
    assert [m.disposition for m in (u.seen(first)[-1], u.seen(PLAY)[-1])] == [DISP.reported] * 2
    assert u.p.events("FL_SPEED")[-1].time_us == off + 30
    assert u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME["turn_short_us"].id, 2_000_000)).name == "CONFIG_VALUE"
    on = u.now() + 10
    u.inject(on, POWER)
    u.inject(on + 1, POWER)                                 # already on
    u.until(on + 1)
    assert u.trace(on) == [(on, "STATE", (ST.setup, ST.off))]
    assert u.seen(POWER)[-1].disposition == DISP.reported
    assert u.p.request(msg.INPUT(PLAY, PRESS, 0)).msg.error == ERR.wrong_state


def test_config_set_is_refused_during_a_game():
    u = Unit(seed=28)
    u.start()
    r = u.p.request(msg.CONFIG_SET(PARAMS_BY_NAME["turn_short_us"].id, 2_000_000))
    assert (r.name, r.msg.error, r.msg.detail) == ("NAK", ERR.wrong_state, ST.turn)


def test_reset_new_game_keeps_the_switches():
    u = Unit(seed=29)
    u.start(speed=SPEED.four_seconds)
    assert u.p.request(msg.RESET(0)).name == "ACK"
    assert u.state() == ST.setup
    u.start((0, 1), at=u.now() + 10_000)
    assert u.selected().turn_time_us == SHORT                # still on 4 s
    assert u.p.request(msg.INPUT(POWER, RELEASE, 0)).name == "ACK"
    assert u.p.request(msg.RESET(0)).name == "ACK"
    assert u.state() == ST.off                               # still switched off
    assert u.p.request(msg.RESET(1)).name == "ACK"           # a boot: switch on, unlimited
    u.p.wait_event("BOOT")
    assert u.state() == ST.setup
    u.start((0, 1), at=u.now() + 10_000)
    assert u.selected().turn_time_us == 0


def test_same_seed_same_bytes():
    def run(seed):
        u = Unit(seed=seed)
        cur = u.start((0, 1, 2, 3), speed=SPEED.four_seconds)
        t = T0
        for k in range(40):
            t += 50_000
            u.inject(t, cur)
            u.until(t)
            cur = u.selected().player
        return bytes(u.p.raw)
    assert run(4) == run(4) != run(5)


# ---- served over a real pty ----

def test_pty_handshake_and_a_turn(emulator_process):
    proc, (path,) = emulator_process("flash", "--pty", "--seed", "3")
    assert path.startswith("/dev/")
    link = SelectLink.open_path(path)
    try:
        p = Probe(link)
        ident = p.request(msg.HELLO(1, 0), timeout_us=5_000_000).msg
        assert (ident.kind, ident.players) == (ENUMS["unit_kind"].flash, 6)
        now = p.request(msg.TIME_SYNC(0), timeout_us=5_000_000).msg.t3_us
        t = now + 50_000
        for at, inp, value in ((t, 0, 0), (t + 1, 3, 0), (t + 2, SWITCH, SPEED.four_seconds), (t + 3, PLAY, 0)):
            assert p.request(msg.INJECT(wrap(at), inp, PRESS, value), timeout_us=5_000_000).name == "ACK"
        sel = p.wait_event("FL_SELECTED", 5_000_000)
        assert (sel.msg.turn, sel.msg.turn_time_us) == (1, SHORT)
        end = wrap(t + 3 + 250_000)
        assert p.request(msg.INJECT(end, sel.msg.player, PRESS, 0), timeout_us=5_000_000).name == "ACK"
        te = p.wait_event("FL_TURN_END", 5_000_000)
        assert (te.msg.player, te.msg.elapsed_us) == (sel.msg.player, 250_000)    # exact on any clock
        seen = [f for f in p.events("INPUT_SEEN") if f.msg.input == sel.msg.player]
        assert seen[-1].time_us == end and seen[-1].msg.source == SRC.injected
        assert p.wait_event("FL_SELECTED", 5_000_000).msg.turn == 2
    finally:
        link.close()
    proc.terminate()
    assert proc.wait(timeout=10) == 0
