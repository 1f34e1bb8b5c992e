"""The scenario language's loops, waits, changes mid-race, expressions for counts and input names,
device times from anchors and comparisons across races (docs/scenarios.md): each validated with
its line and column, accepted and refused by `unohil schema` as by the validator, and run on the
virtual clock on units with different generators."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.errors import ScenarioError, SelectionError
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.lead import REAL_LEAD_US
from unohil.harness.scenarios.load import load_file, loads
from unohil.harness.scenarios.selection import matcher
from unohil.harness.session.driver import ACTION
from test_harness_scenarios import GOOD
from unohil.protocol import catalogue as cat

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test extra) checks files against the schema")
from unohil.harness.report.scenario_schema import scenario_schema  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "fixtures" / "scenarios"
DOC = ROOT / "docs" / "scenarios.md"
SCHEMA = jsonschema.Draft7Validator(scenario_schema())


def library(path: str, name: str):
    return next(sc for sc in load_file(LIBRARY / path) if sc.name == name)


def run(sc, rng: str = "reference", **kw):
    with Driver.open(f"emu://{sc.unit}?clock=virtual&rng={rng}") as d:
        return Runner(d, **kw).run(sc)


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as exc:
        loads(text, "t.yaml")
    return [str(p) for p in exc.value.problems]


def failures(res) -> list[str]:
    return [x for r in res.races for x in r.failures + ([r.error] if r.error else [])]


def inputs_seen(race, name: str) -> list[int]:
    number = cat.UNITS[race.unit.kind].inputs[name]
    return [f.dev_us - race.start_dev_us for f in race.frames
            if f.msg.NAME == "INPUT_SEEN" and f.msg.input == number and f.msg.action == ACTION["press"]]


LAUNCHER = """
name: t
unit: launcher
CONFIG
steps:
  - door: open
    at: start + 1000
  - load: 30
  - door: close
  - press: button
    at: previous + 100000
    times: TIMES
    every: 1000000
    until: LA_CARD
expect:
  count: {LA_DING: {min: 1}}
"""


# ---- repeat until an event ----

@pytest.mark.parametrize("rng", ["reference", "python"])
def test_hit_fire_presses_until_cards_come_out_whatever_the_draws(rng):
    sc = library("launcher/hits.yaml", "Wild Hit-Fire, press until cards come out")
    res = run(sc, rng)
    assert res.status == "pass", failures(res)
    for race in res.races:
        results = [v for v in race.verdicts]
        # every press before the last fired nothing, the last fired: the loop stopped at the first cards
        assert [v["fired"] > 0 for v in results] == [False] * (len(results) - 1) + [True]


@pytest.mark.parametrize("seed", [1, 7, 300, 4242])
def test_hit_fire_stops_at_the_first_firing_press_for_any_seed(seed):
    sc = library("launcher/hits.yaml", "Wild Hit-Fire, press until cards come out")
    res = run(sc.__class__(**{**sc.__dict__, "seed": seed}))
    assert res.status == "pass", failures(res)
    assert len({tuple(v["fired"] for v in r.verdicts) for r in res.races}) > 1   # seed + i: different draws


def test_a_loop_that_reaches_its_cap_without_the_event_fails_naming_it():
    text = LAUNCHER.replace("CONFIG", "config: {fire_base_permille: 0, fire_step_permille: 0}").replace("TIMES", "3")
    (sc,) = loads(text, "t.yaml")
    res = run(sc)
    assert res.status == "fail"
    (why,) = failures(res)
    # the last press at 2101000 us; LA_CARD's bound after it: motor_us + (burst_max - 1) * card_interval_us
    assert "no LA_CARD (until of the step at line 10, press button, after its 3 repetitions, the most its " \
           "times allows) by 2.891 s" in why


def test_a_loop_whose_event_comes_from_the_last_repetition_passes():
    # fire_base 0, step 1000: the second press always fires; a cap of 2 leaves it the last
    text = LAUNCHER.replace("CONFIG", "config: {fire_base_permille: 0, fire_step_permille: 1000}").replace("TIMES", "2")
    (sc,) = loads(text, "t.yaml")
    res = run(sc)
    assert res.status == "pass", failures(res)
    assert inputs_seen(res.races[0], "button") == [101000, 1101000]


def test_until_needs_times_and_goes_only_with_stimuli():
    text = LAUNCHER.replace("CONFIG", "").replace("    times: TIMES\n", "")
    assert any("steps[3].until: a step repeated until an event needs 'times'" in p for p in problems(text))
    bad = LAUNCHER.replace("CONFIG", "").replace("TIMES", "3").replace(
        "  - door: close\n", "  - door: close\n  - wait: 1000\n    until: LA_DING\n")
    assert any(re.search(r"t.yaml:\d+:\d+: steps\[3\].until: goes with a step of", p) for p in problems(bad))
    unknown = LAUNCHER.replace("CONFIG", "").replace("TIMES", "3").replace("until: LA_CARD", "until: SD_GREEN")
    assert any("t.yaml:14:12: steps[3].until: the launcher unit has no event 'SD_GREEN'" in p
               for p in problems(unknown))


# ---- wait for an event ----

WAIT = """
name: t
unit: launcher
config: {fire_base_permille: 0, fire_step_permille: 0}
steps:
  - door: open
    at: start + 1000
  - load: 5
  - door: close
  - press: button
    at: previous + 100000
  - wait_for: LA_CARD
    TIMEOUT
  - press: button
    at: previous + 1000
expect:
  count: {LA_DING: DINGS}
"""


def test_wait_for_an_event_that_never_comes_fails_saying_what_it_waited_for():
    (sc,) = loads(WAIT.replace("TIMEOUT", "timeout: 500000").replace("DINGS", "2"), "t.yaml")
    res = run(sc)
    assert res.status == "fail"
    (why,) = failures(res)
    assert "no LA_CARD (wait_for of the step at line 12) within 500000 us of the previous step (its timeout)" in why


def test_wait_for_with_on_timeout_continue_goes_on_from_the_timeout():
    (sc,) = loads(WAIT.replace("TIMEOUT", "timeout: 500000\n    on_timeout: continue").replace("DINGS", "2"), "t.yaml")
    res = run(sc)
    assert res.status == "pass", failures(res)
    assert inputs_seen(res.races[0], "button") == [101000, 101000 + 500000 + 1000]


def test_wait_for_an_event_that_comes_counts_the_next_step_from_it():
    text = WAIT.replace("fire_step_permille: 0", "fire_step_permille: 0, fire_base_permille: 1000, burst_min: 1, "
                        "burst_mode: 1, burst_max: 1").replace("{fire_base_permille: 0, ", "{")
    (sc,) = loads(text.replace("TIMEOUT", "timeout: 5000000").replace("DINGS", "2"), "t.yaml")
    res = run(sc)
    assert res.status == "pass", failures(res)
    card = next(f.dev_us - res.races[0].start_dev_us for f in res.races[0].frames if f.msg.NAME == "LA_CARD")
    assert inputs_seen(res.races[0], "button") == [101000, card + 1000]


def test_wait_for_is_validated_where_it_is_written():
    bad = WAIT.replace("TIMEOUT", "on_timeout: later").replace("DINGS", "2")
    assert any("t.yaml:13:17: steps[4].on_timeout: must be 'fail'" in p for p in problems(bad))
    at = WAIT.replace("TIMEOUT", "at: previous + 10").replace("DINGS", "2")
    assert any("steps[4].at: a wait_for step starts waiting at the previous step's time" in p for p in problems(at))
    soon = WAIT.replace("TIMEOUT", "timeout: 10").replace("DINGS", "2").replace("at: previous + 1000\nexpect",
                                                                              "at: previous\nexpect")
    assert any("steps[5].at: comes at the time of the wait_for step before it" in p for p in problems(soon))


# ---- configuration and switches mid-race ----

def test_a_config_change_between_two_games_takes_effect_on_the_next():
    sc = library("showdown/changes.yaml", "a countdown changed between two games takes effect on the next")
    res = run(sc)
    assert res.status == "pass", failures(res)
    v1, v2 = res.races[0].verdicts
    assert v2["green_us"] - v2["press_a_us"] == v1["green_us"] - v1["press_a_us"] == -180000
    # and the next race starts from the scenario's configuration again: 3 s, then 2 s
    res2 = run(sc.with_races(sc.races * 2))
    assert res2.status == "pass", failures(res2)


def test_a_config_step_the_unit_refuses_fails_the_race_at_the_step():
    text = SHOWDOWN.replace("  - press: paddle_a\n", "  - config: {go_timeout_us: 1000000}\n    at: countdown_start + "
                                                   "100000\n  - press: paddle_a\n").replace("FIELDS", "loser: b")
    res = run(loads(text, "t.yaml")[0])
    assert res.status == "fail"
    assert any("the step at line 10 (config go_timeout_us=1000000" in x and "wrong_state" in x for x in failures(res))


def test_config_steps_are_checked_against_the_configuration_the_race_has_by_then():
    text = """
name: t
unit: showdown
config: {countdown_min_us: 3000000, countdown_max_us: 3000000}
steps:
  - load: 2
  - config: {countdown_max_us: 2000000}
    at: start + 1000
  - config: {rng_seed: 4, turn_short_us: 1000000, countdown_min_us: 1}
    at: previous + 1000
expect:
  count: {SD_VERDICT: 0}
"""
    got = problems(text)
    assert any("t.yaml:7:14: steps[1].config.countdown_max_us: breaks the rule" in p and "(before)" in p for p in got)
    assert any("steps[2].config.rng_seed: a race's seed is the scenario's 'seed'" in p for p in got)
    assert any("steps[2].config.turn_short_us: not a parameter of the showdown unit" in p for p in got)
    assert any("steps[2].config.countdown_min_us: 1 is out of range" in p for p in got)


def test_the_speed_switch_moved_mid_game_takes_effect_from_the_next_turn():
    sc = library("flash/short_turns.yaml",
                 "a speed change mid-turn leaves the unlimited turn untimed, the next turn has 1 s")
    assert [st.action for st in sc.steps].count("physical") == 1
    for rng in ("reference", "python"):
        res = run(sc, rng)
        assert res.status == "pass", failures(res)


def test_physical_steps_name_switches_and_positions_of_the_unit():
    text = """
name: t
unit: UNIT
steps:
  - physical: SWITCHES
    at: start + 1000
expect:
  count: {STATE: {min: 0}}
"""
    flash = problems(text.replace("UNIT", "flash").replace("SWITCHES", "{speed_switch: fast, door: open}"))
    assert any("t.yaml:5:30: steps[0].physical.speed_switch: 'fast' is not a position" in p for p in flash)
    assert any("steps[0].physical.door: the flash unit has no switch 'door'" in p for p in flash)
    assert any("steps[0].physical: names no switch" in p
               for p in problems(text.replace("UNIT", "flash").replace("SWITCHES", "{}")))
    assert any("the showdown unit has no switch 'power'; it has none" in p
               for p in problems(text.replace("UNIT", "showdown").replace("SWITCHES", "{power: off}")))


# ---- expressions for counts and input names ----

@pytest.mark.parametrize("rng", ["reference", "python"])
def test_registration_of_2_to_6_players_is_one_sweep(rng):
    sc = library("flash/registration.yaml", "2 to 6 players register, PLAY/PAUSE starts a game of them all")
    res = run(sc, rng)
    assert res.status == "pass", failures(res)
    starts = [next(f.msg for f in r.frames if f.msg.NAME == "FL_GAME_START") for r in res.races]
    assert [m.count for m in starts] == [2, 3, 4, 5, 6]
    assert [m.players_mask for m in starts] == [(1 << n) - 1 for n in range(2, 7)]


@pytest.mark.parametrize("rng", ["reference", "python"])
def test_all_hit_presses_once_per_player(rng):
    sc = library("launcher/hits.yaml", "All Hit, every player presses once")
    res = run(sc, rng)
    assert res.status == "pass", failures(res)
    assert [len(r.verdicts) for r in res.races] == [2, 3, 4, 5, 6]


def test_a_count_from_the_sweep_fails_when_the_count_differs():
    sc = library("flash/registration.yaml", "2 to 6 players register, PLAY/PAUSE starts a game of them all")
    text = (LIBRARY / "flash/registration.yaml").read_text().replace("FL_REGISTERED: players,",
                                                                      "FL_REGISTERED: players - 1,")
    (bad,) = [s for s in loads(text, "r.yaml") if s.name == sc.name]
    res = run(bad)
    assert res.status == "fail"
    assert "count of FL_REGISTERED: expected players - 1 = 1, got 2" in res.races[0].failures
    text = text.replace("{FL_GAME_START: {count: players}}", "{FL_GAME_START: {count: players + 1}}")
    (bad,) = [s for s in loads(text, "r.yaml") if s.name == sc.name]
    assert "event FL_GAME_START{count=players + 1 = 3} not seen (in order after the previous expected event)" \
        in run(bad).races[0].failures


REGISTER = """
name: t
unit: flash
sweep: {n: [2, 9]}
steps:
  - press: NAME
    at: start + 1000
    times: TIMES
    every: 1000
expect:
  count: {FL_REGISTERED: n}
"""


def test_input_names_and_counts_are_validated_for_every_race_and_repetition():
    got = problems(REGISTER.replace("NAME", '"player_{rep}"').replace("TIMES", "n"))
    assert any("t.yaml:6:12: steps[0].press: 'player_{rep}' is 'player_8' (with n=9, rep=8), not an input of "
               "the flash unit" in p for p in got)
    got = problems(REGISTER.replace("NAME", '"player_{k}"').replace("TIMES", "n"))
    assert any("steps[0].press: unknown name(s) k in 'player_{k}'" in p for p in got)
    got = problems(REGISTER.replace("NAME", "player_0").replace("TIMES", "n * 200"))
    assert any("t.yaml:8:12: steps[0].times: 'n * 200' is 1800 (with n=9), is out of range [1, 1000]" in p for p in got)
    got = problems(REGISTER.replace("NAME", "player_0").replace("TIMES", "'n - 2'"))
    assert any("steps[0].times: 'n - 2' is 0 (with n=2), is out of range" in p for p in got)
    got = problems(REGISTER.replace("NAME", '"player_{rep"').replace("TIMES", "2"))
    assert any("braces hold one expression each" in p for p in got)
    assert any("count.FL_REGISTERED: unknown name(s) m" in p
               for p in problems(REGISTER.replace("NAME", "player_0").replace("TIMES", "2").replace(": n}", ": m}")))


def test_rep_is_a_name_of_the_language_not_a_sweep_variable():
    text = REGISTER.replace("sweep: {n: [2, 9]}", "sweep: {rep: [1]}").replace("NAME", "player_0").replace(
        "TIMES", "1").replace(": n}", ": 1}")
    assert any("sweep.rep: 'rep' cannot name a sweep variable" in p for p in problems(text))


# ---- device times from anchors ----

# the clean win of test_harness_scenarios without its seed (line numbers as there: the seed's line is blank)
SHOWDOWN = GOOD.replace("name: clean win", "name: t").replace("seed: 5", "").replace(
    "verdict: {loser: b, reason: first_press, reaction_a_us: 180000}", "verdict: {FIELDS}")


@pytest.mark.parametrize("fields", [
    "press_a_us: green + 180000, green_us: countdown_start + 2000000, decisive_us: green + 180000",
    "press_a_us: {value: green + 180010, tol: 10}, knowable_us: {min: green + 180000, max: green + 181000}",
    "green_us: start + 2001000, press_b_us: none",
])
def test_device_time_fields_match_from_anchors(fields):
    res = run(loads(SHOWDOWN.replace("FIELDS", fields), "t.yaml")[0])
    assert res.status == "pass", failures(res)


def test_a_device_time_off_its_anchor_fails_saying_by_how_much():
    res = run(loads(SHOWDOWN.replace("FIELDS", "press_a_us: green + 170000"), "t.yaml")[0])
    assert res.status == "fail"
    assert res.races[0].failures == ["verdict[0].press_a_us: expected green + 170000, got 2181000 us from the start "
                                     "(+10000 us)"]
    res = run(loads(SHOWDOWN.replace("FIELDS", "press_b_us: green + 0"), "t.yaml")[0])
    assert res.races[0].failures == ["verdict[0].press_b_us: expected green + 0, got none"]


def test_device_times_from_anchors_are_validated():
    got = problems(SHOWDOWN.replace("FIELDS", "press_a_us: previous + 1, green_us: {min: green, max: 5}, "
                                              "decisive_us: nowhere + 5, knowable_us: next green"))
    assert any("t.yaml:13:25: expect.verdict.press_a_us: an expected time counts from start or an event anchor" in p
               for p in got)
    assert any("expect.verdict.green_us: give every bound from an anchor" in p for p in got)
    assert any("expect.verdict.decisive_us: unknown name(s) nowhere" in p for p in got)
    assert any("expect.verdict.knowable_us: an expected time counts from start or an event anchor" in p for p in got)


# ---- comparisons across races ----

COMPARE = SHOWDOWN.replace("config: {countdown_min_us: 2000000, countdown_max_us: 2000000}", "SEED\nrepeat: 3") \
    .replace("verdict: {FIELDS}", "verdict: {loser: b}\ncompare:\n  - CHECK")


@pytest.mark.parametrize("rng", ["reference", "python"])
def test_races_compare_same_and_differ(rng):
    sc = library("showdown/changes.yaml", "the second race's countdown differs from the first's")
    assert run(sc, rng).status == "pass"
    same_seed = loads(COMPARE.replace("SEED", "seed: {same: 10}").replace("CHECK", "same: verdict.green_us"), "t.yaml")
    res = run(same_seed[0], rng)
    assert res.status == "pass", failures(res)


def test_a_comparison_that_does_not_hold_fails_the_last_race_naming_every_value():
    (sc,) = loads(COMPARE.replace("SEED", "seed: 10").replace("CHECK", "same: verdict.green_us"), "t.yaml")
    res = run(sc)
    assert [r.status for r in res.races] == ["pass", "pass", "fail"] and res.status == "fail"
    (why,) = res.races[2].failures
    assert why.startswith("compare (line 16) same: verdict.green_us: not the same in every race (race 0: ")
    assert re.search(r"race 0: \d+, race 1: \d+, race 2: \d+\)$", why)
    (sc,) = loads(COMPARE.replace("SEED", "seed: {same: 3}").replace("CHECK", "{differ: SD_GREEN.t_us, races: [0, 2]}")
                  .replace("- CHECK", "- CHECK"), "t.yaml")
    res = run(sc)
    assert "compare (line 16) differ: SD_GREEN.t_us: the same in two races" in res.races[2].failures[0]


def test_comparisons_are_validated():
    text = COMPARE.replace("SEED", "seed: {same: 10}")
    assert any("t.yaml:16:11: compare[0].same: SD_GREEN has no field 'colour'" in p
               for p in problems(text.replace("CHECK", "same: SD_GREEN.colour")))
    assert any("compare[0].same: the showdown unit has no event 'LA_CARD'" in p
               for p in problems(text.replace("CHECK", "same: LA_CARD.index")))
    assert any("compare[0].races: 3 is out of range [0, 2]" in p
               for p in problems(text.replace("CHECK", "{same: verdict.loser, races: [0, 3]}")))
    assert any("compare[0]: compares 1 race(s); a comparison needs two or more" in p
               for p in problems(text.replace("CHECK", "{same: verdict.loser, races: [1]}")))
    assert any("compare[0]: give one of same: PATH or differ: PATH" in p
               for p in problems(text.replace("CHECK", "{same: verdict.loser, differ: verdict.loser}")))
    assert any("verdicts[N].FIELD the N-th" in p for p in problems(text.replace("CHECK", "same: verdict[1].loser")))


# ---- the surprises ----

FLASH_OPENING = """
name: t
unit: flash
steps:
  - press: player_0
    at: start + 1000
"""

def test_previous_after_a_hold_counts_from_its_release():
    text = FLASH_OPENING + """  - hold: [player_1, player_2]
    for: 300000
    at: previous + 1000
  - press: player_3
    at: previous + 1000
expect:
  count: {FL_REGISTERED: 4}
"""
    res = run(loads(text, "t.yaml")[0])
    assert res.status == "pass", failures(res)
    assert inputs_seen(res.races[0], "player_3") == [1000 + 1000 + 300000 + 1000]


@pytest.mark.parametrize("at", ['""', "'  '"])
def test_an_empty_time_is_an_error_not_start(at):
    text = SHOWDOWN.replace("at: green + 180000", f"at: {at}").replace("FIELDS", "loser: b")
    (got,) = problems(text)
    assert got.startswith("t.yaml:11:9: steps[2].at: is empty; write a time")


def test_words_in_a_row_in_k_get_a_hint_to_join_them_with_and():
    with pytest.raises(SelectionError, match=r"unexpected 'presses'; to pick by several words, join them with "
                                             r"'and' \(or 'or'\): -k 'two and presses'"):
        matcher("two presses")
    assert matcher("two and presses")


def test_a_step_closer_to_its_anchor_than_a_real_link_can_honour_is_a_warning(tmp_path, capsys):
    close = SHOWDOWN.replace("green + 180000", "green + 10000").replace("FIELDS", "loser: b")
    (sc,) = loads(close, "t.yaml")
    (w,) = sc.warnings
    assert str(w).startswith("t.yaml:10:5: steps[2]: warning: press paddle_a at 'green + 10000' comes 10000 us after")
    assert f"needs about {REAL_LEAD_US} us" in str(w)
    assert run(sc).status == "pass"         # the virtual clock honours it
    path = tmp_path / "close.yaml"
    path.write_text(close)
    assert main(["validate", str(path)]) == 0
    assert "steps[2]: warning: press paddle_a" in capsys.readouterr().err
    # from start, or far enough from the event: no warning; a fast loop until an event: a warning
    assert loads(SHOWDOWN.replace("FIELDS", "loser: b"), "t.yaml")[0].warnings == ()
    fast = LAUNCHER.replace("CONFIG", "").replace("TIMES", "3").replace("every: 1000000", "every: 20000")
    assert "repeats until LA_CARD every 20000 us" in str(loads(fast, "t.yaml")[0].warnings[0])


def test_the_library_has_no_warnings():
    from unohil.harness.scenarios.load import load_paths
    assert [w for sc in load_paths([str(LIBRARY)]) for w in sc.warnings] == []


# ---- the schema says what the validator says ----

NEW_CONSTRUCTS = [
    LIBRARY / "launcher/hits.yaml", LIBRARY / "flash/registration.yaml", LIBRARY / "showdown/changes.yaml",
    LIBRARY / "flash/short_turns.yaml",
]


@pytest.mark.parametrize("path", NEW_CONSTRUCTS, ids=lambda p: p.name)
def test_the_schema_accepts_the_new_constructs(path):
    for doc in yaml.safe_load_all(path.read_text()):
        assert [e.message for e in SCHEMA.iter_errors(doc)] == []


@pytest.mark.parametrize("change", [
    lambda d: d["steps"][3].update(on_timeout="later"),
    lambda d: d["steps"].append({"config": {}}),
    lambda d: d["steps"].append({"config": {"turn_short_us": 1000000}}),
    lambda d: d["steps"].append({"config": {"rng_seed": 3}}),
    lambda d: d["steps"].append({"physical": {"speed_switch": "off"}}),
    lambda d: d["steps"].append({"wait_for": "SD_GREEN"}),
    lambda d: d["steps"][3].update(until="SD_GREEN"),
    lambda d: d["steps"][3].update(times=0),
    lambda d: d.update(seed={"each": 3}),
    lambda d: d.update(compare=[{"same": "verdict"}]),
    lambda d: d.update(compare=[{"same": "verdict.fired", "differ": "verdict.fired"}]),
])
def test_what_the_validator_refuses_of_them_the_schema_refuses(change):
    text = LAUNCHER.replace("CONFIG", "").replace("TIMES", "3")
    doc = yaml.safe_load(text)
    assert [e.message for e in SCHEMA.iter_errors(doc)] == []
    change(doc)
    assert list(SCHEMA.iter_errors(doc)), doc
    with pytest.raises(ScenarioError):
        loads(yaml.safe_dump(doc), "t.yaml")


def test_the_docs_examples_of_the_new_sections_validate_and_pass():
    text = DOC.read_text()
    section = text[text.index("## Loops, waits and changes mid-race"):text.index("## Decisions covered")]
    section += text[text.index("An input name may be built"):text.index("## Loops, waits and changes mid-race")]
    examples = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S) if b.startswith("- name:")]
    assert len(examples) == 4
    for example in examples:
        (sc,) = loads(example, "docs/scenarios.md")
        for rng in ("reference", "python"):
            res = run(sc, rng)
            assert res.status == "pass", (sc.name, failures(res))


def test_until_and_wait_for_patterns_match_by_role_and_by_time_from_an_anchor():
    # a buzzer race: wait for the verdict naming the slowest by role, then press its flashing button
    text = FLASH_OPENING + """  - press: player_1
  - press: player_2
  - press: play_pause
    at: previous + 1000
  - release: play_pause
    at: previous + 10000
  - press: buzzer
    at: previous + 490000
  - press: opponent_1
    at: buzzer + 150000
  - press: opponent_2
    at: buzzer + 240000
  - wait_for: {FL_BUZZER_VERDICT: {slowest: opponent_2}}
    timeout: 5000000
  - wait_for: {FL_PENALTY: {player: opponent_2}}
    timeout: 1000
    on_timeout: continue
  - press: opponent_2
    at: previous + 1000000
expect:
  verdict: {slowest: opponent_2}
"""
    for rng in ("reference", "python"):
        res = run(loads(text, "t.yaml")[0], rng)
        assert res.status == "pass", failures(res)
        verdict = next(f for f in res.races[0].frames if f.msg.NAME == "FL_BUZZER_VERDICT")
        slowest = cat.UNITS["flash"].inputs[f"player_{verdict.msg.slowest}"]
        presses = [f.dev_us for f in res.races[0].frames if f.msg.NAME == "INPUT_SEEN" and f.msg.input == slowest
                   and f.msg.action == ACTION["press"]]
        assert presses[-1] >= verdict.dev_us + 1000000
    wrong = text.replace("{slowest: opponent_2}}\n    timeout: 5000000", "{slowest: opponent_1}}\n    timeout: 5000000")
    res = run(loads(wrong, "t.yaml")[0])
    assert res.status == "fail"
    assert "no FL_BUZZER_VERDICT (wait_for of the step at line 19) within 5000000 us" in failures(res)[0]
    sure = "config: {fire_base_permille: 1000, burst_min: 2, burst_mode: 2, burst_max: 2}"
    timed = LAUNCHER.replace("CONFIG", sure) \
        .replace("TIMES", "3").replace("until: LA_CARD", "until: {LA_RESULT: {press_us: {min: start + 1000000}}}")
    res = run(loads(timed, "t.yaml")[0])
    assert res.status == "pass", failures(res)
    assert inputs_seen(res.races[0], "button") == [101000, 1101000]     # the second press's verdict stops it
