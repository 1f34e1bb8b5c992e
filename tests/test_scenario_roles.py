"""Player roles in scenarios (docs/scenarios.md, "Players by role"): a Flash scenario names the
players by what the unit reports (current, opponent_1, ...), so it runs on a unit with any generator;
roles used wrongly are rejected at load with file:line:col, and a wrong role expectation fails
naming the role, the player it stood for and the roles in force."""
from __future__ import annotations

import pytest

from unohil.harness import Driver
from unohil.harness.outcome import Outcome
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import ScenarioError, loads
from unohil.protocol import catalogue as cat
from unohil.protocol.schema import load_catalogue

from test_protocol_schema import TEXT as CATALOGUE, broken, fails

GAME = """\
name: race
unit: flash
steps:
  - speed: four_seconds
  - press: player_0
    at: start + 1000
  - press: player_2
  - press: player_5
  - press: play_pause
    at: previous + 1000
  - release: play_pause
    at: previous + 10000
"""

RACE = GAME + """\
  - press: buzzer
    at: previous + 490000
  - release: buzzer
    at: previous + 50000
  - press: opponent_2
    at: buzzer + 150000
  - press: opponent_1
    at: buzzer + 240000
  - press: opponent_1
    at: verdict + 1000000
    expect: acted
expect:
  verdict: {slowest: opponent_1, reason: slowest, tied_mask: opponent_1}
  reaction: {opponent_1: 240000, opponent_2: 150000}
  events:
    - {FL_BUZZER: {player: current, opponents_mask: opponents}}
    - {FL_PENALTY: {player: opponent_1, reason: buzzer_slowest}}
    - {LIGHT: {light: player, mode: flash, target: opponent_1}}
    - {FL_SELECTED: {turn: 2, reason: after_flag}}
  absent: [{FL_PENALTY: {player: [current, opponent_2]}}]
"""


def run(text: str, url: str = "emu://flash?clock=virtual&rng=python", **kw):
    (sc,) = loads(text, "roles.yaml")
    with Driver.open(url) as d:
        return Runner(d, **kw).run(sc)


def buzzer_player(race) -> int:
    (f,) = [f for f in race.frames if f.msg.NAME == "FL_BUZZER"]
    return f.msg.player


# ---- running ----

def test_a_race_by_roles_passes_whoever_the_unit_selects():
    """Units with other generators select other players; the roles follow them (the test is only
    worth something because the buzzer player differs between the units)."""
    players = set()
    for seed in range(1, 9):
        res = run(RACE, f"emu://flash?clock=virtual&rng=python&seed={seed}")
        assert res.status == Outcome.PASS, [r.failures or r.error for r in res.races]
        players.add(buzzer_player(res.races[0]))
    assert len(players) >= 2


def test_a_role_step_presses_the_player_the_role_names_and_says_whom():
    res = run(RACE.replace("    expect: acted\n", "    expect: reported\n"))
    (race,) = res.races
    assert res.status == Outcome.FAIL
    me = buzzer_player(race)
    opponents = [p for p in (0, 2, 5) if p != me]
    seen = [f.msg.input for f in race.frames if f.msg.NAME == "INPUT_SEEN" and f.msg.input < 8
            and f.dev_us > race.start_dev_us + 500_000 and f.msg.action == cat.ENUM_VALUES["action"]["press"]]
    assert seen == [opponents[1], opponents[0], opponents[0]]
    (failure,) = race.failures
    assert f"(press opponent_1 (opponent_1 = player {opponents[0]}) at" in failure
    assert "expected reported, the unit says acted" in failure


def test_a_wrong_role_expectation_names_the_role_the_player_and_the_roles():
    res = run(RACE.replace("verdict: {slowest: opponent_1,", "verdict: {slowest: opponent_2,"))
    (race,) = res.races
    assert res.status == Outcome.FAIL
    me = buzzer_player(race)
    o1, o2 = [p for p in (0, 2, 5) if p != me]
    assert race.failures == [
        f"verdict[0].slowest: expected opponent_2 (player {o2}), got {o1} (opponent_1)",
        f"verdict[0]: roles at it: current = player {me}, opponent_1 = player {o1}, opponent_2 = player {o2}",
    ]


def test_a_missing_event_by_role_shows_the_roles_over_the_race():
    res = run(RACE.replace("{FL_PENALTY: {player: opponent_1, reason", "{FL_PENALTY: {player: current, reason"))
    (race,) = res.races
    me = buzzer_player(race)
    (failure,) = race.failures
    assert failure.startswith("event FL_PENALTY{player=current, reason=buzzer_slowest} not seen")
    assert f"roles in the race: from 2000 us: current = player {me}," in failure
    assert "nobody selected yet" not in failure     # the game's start and its selection are one instant


def test_an_absent_event_by_role_that_happens_says_whom_it_named():
    res = run(RACE.replace("absent: [{FL_PENALTY: {player: [current, opponent_2]}}]",
                           "absent: [{FL_PENALTY: {player: [current, opponent_1]}}]"))
    (race,) = res.races
    (failure,) = race.failures
    assert failure.startswith("FL_PENALTY{player=one of current or opponent_1} must not happen; it did at ")
    assert "(current = player" in failure


def test_a_role_the_game_does_not_have_fails_the_race_saying_so():
    """A base of 5 buttons that says it has 6 refuses the press of player_5: 2 players, opponent_2 is nobody.
    (A base that says 5 skips the race: it is written for a base of 6, harness/run/buttons.py.)"""
    from test_conform import _virtual
    from mutants_link import Firmware

    class SaysSixHasFive(Firmware):
        def _hello(self, f, m, t):
            r = super()._hello(f, m, t)
            return r._replace(players=6) if r.NAME == "IDENTITY" else r

    (sc,) = loads(RACE, "roles.yaml")
    d = Driver(_virtual(SaysSixHasFive, "flash", players=5, rng="python"))
    try:
        d.handshake()
        res = Runner(d).run(sc)
    finally:
        d.close()
    (race,) = res.races
    assert race.status == Outcome.FAIL
    (failure,) = race.failures
    assert "roles.yaml:17: the step at line 17 (press opponent_2 at buzzer + 150000) names opponent_2" in failure
    assert "the game has no such player: current = player" in failure


def test_a_role_beyond_the_players_the_scenario_registers_is_rejected_where_it_is_written():
    got = problems(RACE.replace("  - press: opponent_2\n    at: buzzer + 150000",
                                "  - press: opponent_3\n    at: buzzer + 150000")
                   .replace("slowest: opponent_1, reason", "slowest: opponent_3, reason")
                   .replace("reaction: {opponent_1: 240000,", "reaction: {opponent_4: 240000,"))
    said = "the scenario registers 3 player(s) (player_0, player_2, player_5), so its game has 2 opponents " \
           "(opponent_1 .. opponent_2)"
    assert got == [f"roles.yaml:17:12: steps[8].press: 'opponent_3': {said}",
                   f"roles.yaml:25:22: expect.verdict.slowest: 'opponent_3': {said}; a player field names one "
                   f"player (a list: one of them)",
                   f"roles.yaml:26:14: expect.reaction.opponent_4: 'opponent_4': {said}"], got


def test_a_reaction_by_role_is_read_from_the_players_button():
    res = run(RACE.replace("reaction: {opponent_1: 240000,", "reaction: {opponent_1: 240001,"))
    (race,) = res.races
    o1 = [p for p in (0, 2, 5) if p != buzzer_player(race)][0]
    assert race.failures == [f"reaction.opponent_1 (player {o1}): expected 240001 us, got 240000 us"]


def test_a_held_role_is_pressed_with_the_other_held_inputs():
    text = GAME + """\
  - hold: [current, buzzer]
    for: 100000
    at: previous + 500000
expect:
  events: [{FL_TURN_END: {player: current, turn: 1}}, {INPUT_SEEN: {input: buzzer, disposition: reported}}]
"""
    res = run(text)
    assert res.status == Outcome.PASS, res.races[0].failures


def test_with_transit_time_a_role_step_too_close_to_its_anchor_is_said_to_be_so():
    """The runner learns who plays only from what the unit reported up to the step's anchor; on a
    link with transit time a step 1 ms after it cannot be scheduled in time, and the runner says so
    rather than pressing late or pressing the wrong player: the link's limit, a link error, not an
    error of the file (which runs on a faster link) nor a fail of the unit."""
    text = RACE.replace("  - press: opponent_1\n    at: buzzer + 240000", "  - press: opponent_1\n    at: previous + 1000")
    res = run(text, "emu://flash?clock=virtual&rng=python&faults=delay=3ms")
    (race,) = res.races
    assert race.status == Outcome.LINK_ERROR and not race.failures
    assert race.error.startswith("the link is too slow for this schedule: ")
    assert "roles.yaml:19: the step at line 19 (press opponent_1 at previous + 1000) names opponent_1" in race.error
    assert "less than the" in race.error and "anchor the step on an earlier event or give it more time" in race.error
    assert run(RACE, "emu://flash?clock=virtual&rng=python&faults=delay=3ms").status == Outcome.PASS


# ---- validation ----

def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as exc:
        loads(text, "roles.yaml")
    return [str(p) for p in exc.value.problems]


def test_a_role_before_any_game_start_is_rejected_where_it_is_written():
    got = problems("""\
name: early
unit: flash
steps:
  - press: player_0
    at: start + 1000
  - press: player_1
  - press: current
    at: previous + 1000
  - press: play_pause
    at: previous + 1000
expect: {count: {FL_SELECTED: 1}}
""")
    assert got == ["roles.yaml:7:12: steps[2].press: names a role before any step starts a game (a press of "
                   "play_pause): before the unit's first selection nobody is current and there are no opponents"]


def test_a_role_timed_from_start_or_at_its_anchors_own_time_is_rejected():
    got = problems(GAME + """\
  - press: current
    at: start + 900000
  - press: current
    at: previous
  - hold: [opponent_1, buzzer]
    for: 1000
    at: timeout + 0
expect: {count: {FL_SELECTED: 1}}
""")
    assert len(got) == 3
    assert got[0].startswith("roles.yaml:13:12: steps[6].press: names a role but is timed from 'start'")
    assert got[1].startswith("roles.yaml:15:12: steps[7].press: names a role at its anchor's own time ('previous')")
    assert got[2].startswith("roles.yaml:17:11: steps[8].hold: names a role at its anchor's own time ('timeout + 0')")


def test_unknown_roles_and_roles_where_none_fit_are_rejected():
    got = problems(GAME + """\
  - press: opponent_0
    at: previous + 1000
  - press: opponent_8
    at: previous + 1000
  - press: curent
    at: previous + 1000
expect:
  verdict: {slowest: opponents, tied_mask: opponent_1 | oponent_2}
  events: [{FL_BUZZER: {player: opponent_9}}]
  reaction: {opponent_8: 1000}
""")
    text = "\n".join(got)
    assert "roles.yaml:13:12: steps[6].press: 'opponent_0' is not a role; roles are current and opponent_1 .. " \
           "opponent_7 (a game has at most 7 opponents, counted from 1)" in text
    assert "roles.yaml:15:12: steps[7].press: 'opponent_8' is not a role" in text
    assert "roles.yaml:17:12: steps[8].press: the flash unit has no input 'curent'; it has: player_0" in text
    assert ", or a role (current, opponent_1, opponent_2, ...)" in text
    assert "roles.yaml:20:22: expect.verdict.slowest: 'opponents' names several players: it goes in a mask field" \
           in text
    assert "roles.yaml:20:44: expect.verdict.tied_mask: 'oponent_2' is not a role" in text
    assert "roles.yaml:21:33: expect.events[0].FL_BUZZER.player: 'opponent_9' is not a role" in text
    assert "roles.yaml:22:14: expect.reaction.opponent_8: the flash unit's FL_BUZZER_VERDICT has no such " \
           "reaction time" in text


def test_a_unit_without_roles_has_none():
    got = problems("""\
name: showdown by role
unit: showdown
steps:
  - load: 2
  - press: current
expect: {verdict: {loser: current}, reaction: {current: 1000}}
""")
    text = "\n".join(got)
    assert "roles.yaml:5:12: steps[1].press: the showdown unit has no input 'current'; it has: paddle_a, paddle_b, " \
           "timer, load_cards" in text
    assert "'current' is not a side" in text
    assert "expect.reaction.current: the showdown unit's SD_VERDICT has no such reaction time" in text


# ---- the catalogue's facts ----

def test_the_catalogue_says_where_the_flash_base_reports_its_roles():
    roles = cat.UNITS["flash"].roles
    assert roles.players == ("FL_GAME_START", "players_mask") and roles.current == ("FL_SELECTED", "player")
    assert ("FL_BUZZER_VERDICT", "slowest") in roles.player_fields
    assert ("FL_BUZZER_VERDICT", "tied_mask") in roles.mask_fields
    assert cat.UNITS["showdown"].roles is None
    assert load_catalogue(CATALOGUE)["units"]["flash"]["roles"]["started_by"] == "play_pause"


def test_a_role_fact_naming_a_field_that_cannot_hold_a_button_is_refused_at_load():
    text, at = broken("current: FL_SELECTED.player ", "current: FL_SELECTED.turn ", "FL_SELECTED.turn")
    assert fails(text).startswith(f"messages.yaml:{at}: unit flash roles current: 'FL_SELECTED.turn' is not a u8 "
                                  "field of FL_SELECTED")
    text, at = broken("started_by: play_pause ", "started_by: play ", "play ")
    assert fails(text).startswith(f"messages.yaml:{at}: unit flash roles started_by: unknown input 'play'")
