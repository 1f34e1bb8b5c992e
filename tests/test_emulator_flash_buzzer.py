"""Flash (SPEC.md 8): the buzzer race, who draws when the opponents press, tie or not, and its cancel."""
from __future__ import annotations

import pytest

from unohil.protocol import NONE_I32

from flash_unit import (BUZZ, DISP, FLASH, LIGHT_PLAYER, OFF, ON, PEN, SEL, SHORT, SOUND, ST, T0, TIE, Unit, VR,
                        WINDOW, start_buzzer)


@pytest.mark.parametrize("players", [(0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4), (0, 1, 2, 3, 4, 5)])
def test_buzzer_race_slowest_draws(players):
    u = Unit(seed=len(players))
    bz = T0 + 500_000
    buzzer, opp = start_buzzer(u, players, bz)
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
    buzzer, (opp,) = start_buzzer(u, (2, 5), bz)
    u.inject(bz + 90_000, opp)
    u.until(bz + 90_000)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask, m.reaction_us[opp]) == (opp, VR.slowest, 1 << opp, 90_000)
    assert m.reaction_us[buzzer] == NONE_I32


def test_slowest_tie_inside_the_tie_window():
    u = Unit(seed=21)
    bz = T0 + 100_000
    buzzer, opp = start_buzzer(u, (0, 1, 2, 3), bz)
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
    buzzer, opp = start_buzzer(u, (0, 1, 2, 3), bz)
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
    buzzer, opp = start_buzzer(u, (0, 1, 2, 3, 4), bz)
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
    buzzer, opp = start_buzzer(u, (0, 1, 2, 3, 4, 5), bz)
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
    buzzer, opp = start_buzzer(u, (0, 1, 2), bz)
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
    buzzer, opp = start_buzzer(u, (1, 3, 5), bz)
    u.until(bz + WINDOW)
    m = u.p.wait_event("FL_BUZZER_VERDICT").msg
    assert (m.slowest, m.reason, m.tied_mask) == (min(opp), VR.non_presser, sum(1 << o for o in opp))
    assert list(m.reaction_us) == [NONE_I32] * 8


def test_second_press_of_an_opponent_is_reported():
    u = Unit(seed=14)
    bz = T0 + 100_000
    buzzer, opp = start_buzzer(u, (0, 1, 2), bz)
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
    buzzer, opp = start_buzzer(u, (0, 1, 2), bz)
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
    buzzer, opp = start_buzzer(u, (0, 1, 2), bz)
    u.inject(bz + 10_000, opp[1])
    u.inject(bz + 20_000, buzzer)
    u.inject(bz + 30_000, opp[0])
    u.until(bz + 30_000)
    assert u.seen(buzzer)[-1].disposition == DISP.reported
    assert not u.p.events("FL_BUZZER_CANCEL")
    assert u.p.wait_event("FL_BUZZER_VERDICT").msg.slowest == opp[0]
