"""Flash (SPEC.md 8): time that does not count: a pause (FL-10) and sleep after inactivity (FL-11)."""
from __future__ import annotations

from unohil.protocol import PARAMS_BY_NAME, msg

from flash_unit import (BUZZ, DISP, FLASH, LIGHT_PLAYER, OFF, ON, PLAY, POWER, PRESS, RELEASE, SEL, SHORT, SOUND,
                        SPEED, ST, SWITCH, T0, Unit, VR, WINDOW, start_buzzer)


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
    buzzer, (a, b) = start_buzzer(u, (0, 1, 2), bz)
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
    buzzer, (a, b) = start_buzzer(u, (0, 1, 2), bz)
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
