"""What a race waits for and whether it runs at all follow from that race: the verdicts of the cases
whose `when` holds in it (not the longest list of any case), and a mid-race `config:` step on a unit
that cannot set parameters makes the scenario a skip, as a top-level `config:` does."""
from __future__ import annotations

from unohil.harness import Driver
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads

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
