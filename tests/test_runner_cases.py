"""What a race waits for and whether it runs at all follow from that race: the verdicts of the cases
whose `when` holds in it (not the longest list of any case), and a mid-race `config:` step on a unit
that cannot set parameters makes the scenario a skip, as a top-level `config:` does."""
from __future__ import annotations

from unohil.harness import Driver
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads

from test_harness_scenarios import GOOD

# One press, or two, on a launcher that never fires (fire_base_permille 0): one LA_RESULT per press.
CASES = """
name: one verdict per press
unit: launcher
config: {fire_base_permille: 0}
sweep: {n: [1, 2]}
steps:
  - press: button
    at: start + 1000
    times: n
    every: 500000
expect:
  cases:
    - when: "n == 1"
      verdicts: [{press: 1, fired: 0}]
    - when: "n == 2"
      verdicts: [{press: 1, fired: 0}, {press: 2, fired: 0}]
"""


def run(text: str, url: str):
    (sc,) = loads(text, "t.yaml")
    with Driver.open(url) as d:
        return sc, Runner(d).run(sc)


def test_a_race_waits_for_the_verdicts_of_its_own_cases_only():
    sc, res = run(CASES, "emu://launcher?clock=virtual")
    assert res.status == "pass", [(r.env, r.failures, r.error) for r in res.races]
    assert [len(r.verdicts) for r in res.races] == [1, 2]
    assert [sc.verdict_count(env) for env in sc.races] == [1, 2]


def test_a_race_of_a_case_still_fails_without_its_verdicts():
    """The count per case is no looser: a race whose case asks for two verdicts and gets one still fails."""
    sc, res = run(CASES.replace("times: n", "times: 1"), "emu://launcher?clock=virtual")
    assert [r.status for r in res.races] == ["pass", "fail"]
    assert any("LA_RESULT (2 of 2" in f for f in res.races[1].failures), res.races[1].failures


# A config step between two games, and no top-level config: the first game runs on the defaults.
MID_RACE_CONFIG = GOOD.replace("seed: 5\nconfig: {countdown_min_us: 2000000, countdown_max_us: 2000000}\n", "").replace(
    "expect:\n", """  - config: {countdown_min_us: 3000000, countdown_max_us: 3000000}
    at: verdict + 100000
  - load: 2
    at: previous + 100000
  - press: timer
    at: previous + 1000
  - press: paddle_a
    at: next green + 180000
expect:
""").replace("verdict: {loser: b, reason: first_press, reaction_a_us: 180000}",
             "verdicts: [{loser: b}, {loser: b, green_us: countdown_start + 3000000}]")


def test_a_config_step_on_a_unit_without_config_set_is_a_skip_saying_why():
    sc, res = run(MID_RACE_CONFIG, "emu://showdown?clock=virtual&without=config_set")
    assert sc.parameters_set() == ["countdown_min_us", "countdown_max_us"]
    assert res.status == "skip" and res.applicable, (res.status, res.error, [r.failures for r in res.races])
    assert res.error == ("needs capability config_set to set countdown_min_us, countdown_max_us, which "
                         "emu://showdown?clock=virtual&without=config_set does not have")
    assert not res.races        # decided before any race: nothing was sent to the unit
    _, res = run(MID_RACE_CONFIG, "emu://showdown?clock=virtual")
    assert res.status == "pass", [r.failures for r in res.races]


def test_a_config_step_that_changes_nothing_needs_no_config_set():
    """Only a value away from what is in force needs CONFIG_SET, as for the top-level config."""
    text = MID_RACE_CONFIG.replace("countdown_min_us: 3000000, countdown_max_us: 3000000", "tie_window_us: 1000") \
        .replace(", green_us: countdown_start + 3000000", "")    # 1000 us: the default tie window
    sc, res = run(text, "emu://showdown?clock=virtual&without=config_set")
    assert sc.parameters_set() == []
    assert res.status == "pass", (res.error, [r.failures for r in res.races])
