"""unohil schema: a JSON Schema of scenario files that every library file validates against, that refuses
what the validator refuses where JSON Schema can say it, and whose vocabularies come from the catalogue."""
import json
from pathlib import Path

import pytest
import yaml

from unohil.harness.cli import main
from unohil.harness.errors import ScenarioError
from unohil.harness.report.scenario_schema import scenario_schema
from unohil.harness.scenarios.load import STEP_COMMON, loads
from unohil.harness.scenarios.units import UNITS
from unohil.protocol import catalogue as cat

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test extra) checks files against the schema")

LIBRARY = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
SCHEMA = scenario_schema()
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)

FLASH = """
name: buzzer, opponent_2 slowest
unit: flash
physical: {power: on}
steps:
  - {press: player_0}
  - {press: player_1}
  - {press: player_2}
  - {press: play_pause, at: start + 1000}
  - {press: buzzer, at: selected + 500000}
  - {press: opponent_1, at: buzzer + 100000}
  - {press: opponent_2, at: buzzer + 300000}
expect:
  verdict: {slowest: opponent_2, reason: slowest}
  events: [FL_BUZZER, {FL_PENALTY: {player: opponent_2}}]
"""


def errors(doc) -> list[str]:
    return [e.message for e in VALIDATOR.iter_errors(doc)]


def test_the_schema_is_valid_draft_07():
    jsonschema.Draft7Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", sorted(LIBRARY.rglob("*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_library_file_validates(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs
    for doc in docs:
        assert errors(doc) == [], path


def test_a_flash_scenario_with_roles_validates_and_loads():
    assert errors(yaml.safe_load(FLASH)) == []
    assert loads(FLASH, "f.yaml")


@pytest.mark.parametrize("change", [
    lambda d: d.update(colour="red"),                                       # an unknown key
    lambda d: d["steps"].append({"press": "player_9"}),                     # an input the unit lacks
    lambda d: d["steps"].append({"press": "player_1", "release": "player_1"}),   # two actions
    lambda d: d["steps"].append({"load": 2}),                               # a step of another kind
    lambda d: d.update(config={"turn_short_us": 1}),                        # below the parameter's minimum
    lambda d: d.update(config={"countdown_min_us": 2000000}),               # another kind's parameter
    lambda d: d["expect"].update(events=["SD_GREEN"]),                      # another kind's event
    lambda d: d["expect"]["verdict"].update(reason="first_press"),          # not a flash verdict reason
    lambda d: d["expect"]["verdict"].update(loser="a"),                     # no such verdict field
    lambda d: d.update(sweep={"buzzer": [0, 1]}),                           # a sweep name shadowing an anchor
    lambda d: d.update(needs=["landing_sensor"]),                           # another kind's capability
    lambda d: d.update(unit="toaster"),
    lambda d: d.pop("expect"),
])
def test_what_the_validator_refuses_the_schema_refuses(change):
    doc = yaml.safe_load(FLASH)
    change(doc)
    assert errors(doc), doc
    with pytest.raises(ScenarioError):
        loads(yaml.safe_dump(doc), "f.yaml")


@pytest.mark.parametrize("kind", list(UNITS))
def test_each_kinds_vocabulary_comes_from_the_catalogue(kind):
    unit = UNITS[kind]
    d = SCHEMA["definitions"][kind]["properties"]
    step = d["steps"]["items"]
    assert set(step["properties"]) - STEP_COMMON == set(unit.steps)
    press = step["properties"].get("press")
    if press is not None:
        assert press["anyOf"][0]["enum"] == list(unit.inputs)
    assert set(d["config"]["properties"]) == {p.name for p in unit.params}
    for p in unit.params:
        rng = d["config"]["properties"][p.name]
        assert (rng["minimum"], rng["maximum"]) == (p.min, p.max)
    pattern = SCHEMA["definitions"][f"{kind}.event-pattern"]
    assert set(pattern["anyOf"][0]["enum"]) == set(unit.events)
    verdict = SCHEMA["definitions"][f"{kind}.{unit.verdict}"]["properties"]
    assert set(verdict) == {f.name for f in cat.BY_NAME[unit.verdict].fields} - {"event_seq"}
    assert set(unit.anchors) <= set(d["sweep"]["propertyNames"]["not"]["enum"])


def test_unohil_schema_prints_and_writes_it(tmp_path, capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == SCHEMA
    assert main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text()) == SCHEMA
    assert main(["schema", "-o", str(tmp_path / "no" / "s.json")]) == 2
