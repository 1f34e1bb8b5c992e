"""The race tools/race_instructions.py counts through `unohil run` is the race it counts in-process, and it
passes: a count of a failing or different race would measure something else."""
import json

import yaml

from unohil.harness.cli import main
from tools.race_instructions import FAST, RUNNER_SCENARIO


def test_the_runner_race_is_the_in_process_race_and_passes(tmp_path):
    scenario = tmp_path / "race.yaml"
    scenario.write_text(RUNNER_SCENARIO.format(n=3))
    (written,) = yaml.safe_load(scenario.read_text())
    assert written["config"] == FAST                # the configuration one_race's driver applies
    out = tmp_path / "run.json"
    assert main(["run", str(scenario), "--json", str(out), "--store", "off", "-q", "--format", "lines"]) == 0
    (sc,) = json.loads(out.read_text())["scenarios"]
    assert sc["status"] == "pass" and sc["races"] == 3
    for race in sc["results"]:
        (verdict,) = race["verdicts"]
        assert verdict["reaction_a_us"] == 180_000 and verdict["loser"] == "b"
