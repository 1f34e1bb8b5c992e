"""Card launcher (SPEC.md 9): power and RESET new_game (LA-7, LA-8), the unit at boot, its top light and sounds
(LA-10..LA-12), the accounting over long random runs, and one press over a real pty."""
from __future__ import annotations

import random

import pytest

from unohil.protocol import ENUMS, NONE_U8, PARAMS_BY_NAME, StreamDecoder, encode, msg
from unohil.protocol.devtime import wrap
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe, SelectLink

from launcher_unit import (BUTTON, DISP, DOOR, INTERVAL, LIGHT, LOAD, MODE, MOTOR, POWER, PRESS, RELEASE, SOUND, ST,
                           T0, Unit)


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
