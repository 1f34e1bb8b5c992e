"""Flash (SPEC.md 8): a reset by holding both buttons (FL-12), power and RESET new_game (FL-13, FL-17), the
same seed giving the same bytes, and one game over a real pty."""
from __future__ import annotations

from unohil.protocol import ENUMS, PARAMS_BY_NAME, msg
from unohil.protocol.devtime import wrap
from unohil.emulator.probe import Probe, SelectLink

from flash_unit import (BUZZ, DISP, ERR, LIGHT_PLAYER, OFF, PLAY, POWER, PRESS, RELEASE, SHORT, SOUND, SPEED, SRC,
                        ST, SWITCH, T0, Unit)


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
