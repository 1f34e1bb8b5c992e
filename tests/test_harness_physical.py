"""A scenario's physical: the position of each switch (launcher door and power, Flash speed switch and
power) at the start of every race, the catalogue's boot position unless declared; set by the runner
before the race with the switch's own edge, never inherited from the scenario before."""
import pytest

from unohil.harness import Driver
from unohil.harness.run.anchors import WAIT_MARGIN_US
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import ScenarioError, loads

LEAVES_DOOR_OPEN = """
- name: leaves the door open
  unit: launcher
  steps:
    - door: open
      at: start + 1000
  expect:
    events: [{LA_DOOR: {open: 1}}]
- name: a press on a unit with its door shut
  unit: launcher
  steps:
    - press: button
      at: start + 1000
      expect: acted
  expect:
    count: {LA_RESULT: 1}
    absent: [LA_DOOR]                   # closed before the race started: the race sees none of it
"""


def test_a_door_left_open_is_closed_for_the_next_scenario_without_a_reboot():
    first, second = loads(LEAVES_DOOR_OPEN, "door.yaml")
    with Driver.open("emu://launcher?clock=virtual") as d:
        runner = Runner(d)
        assert runner.run(first).status == "pass"
        boot = d.identity.boot_id
        res = runner.run(second)
        assert d.identity.boot_id == boot           # an INPUT closed the door: no reboot was needed
    assert res.status == "pass", [r.failures or r.error for r in res.races]


OPEN_FROM_THE_START = """
name: cards go in at once through the door left open
unit: launcher
physical: {door: open}
seed: 1
config: {fire_base_permille: 1000, burst_min: 2, burst_mode: 2, burst_max: 2}
repeat: 2
steps:
  - load: 5
    at: start + 1000
    expect: acted
  - door: close
    at: previous + 1000
  - press: button
    at: previous + 1000
expect:
  verdict: {fired: 2, inside: 3, loaded_total: 5}
  events: [LA_LOADED, {LA_DOOR: {open: 0}}, LA_RESULT]
  count: {LA_DOOR: 1}
"""


@pytest.mark.parametrize("url", ["emu://launcher?clock=virtual", "emu://launcher?clock=virtual&without=host_input"])
def test_a_scenario_declaring_the_door_open_starts_every_race_with_it_open(url):
    """On a unit without host input the door is opened by INJECT, before the race's start too."""
    (sc,) = loads(OPEN_FROM_THE_START, "open.yaml")
    assert sc.physical == {"door": "open", "power": "on"}
    with Driver.open(url) as d:
        res = Runner(d).run(sc)
    assert res.status == "pass", [r.failures for r in res.races]
    assert len(res.races) == 2          # the second race too, though the first closed the door


SWITCHED_OFF = """
name: a launcher switched off reports the press
unit: launcher
physical: {power: off}
steps:
  - press: button
    at: start + 1000
    expect: reported
  - power: on
    at: previous + 1000
expect:
  events: [{STATE: {state: ready, previous: "off"}}]
  absent: [LA_DING]
"""


def test_power_declared_off():
    (sc,) = loads(SWITCHED_OFF, "off.yaml")
    with Driver.open("emu://launcher?clock=virtual") as d:
        res = Runner(d).run(sc)
    assert res.status == "pass", [r.failures for r in res.races]


GAME = """
name: a game of two
unit: flash
PHYSICAL
config: {turn_short_us: 2000000, turn_long_us: 3000000}
steps:
  - press: player_0
    at: start + 1000
  - press: player_1
  - press: play_pause
    at: previous + 1000
  - release: play_pause
    at: previous + 10000
"""
FIRST_TURN = GAME + """\
end: previous + 100000
expect:
  events: [{FL_SELECTED: {turn: 1, turn_time_us: TURN_TIME}}]
  absent: [FL_SPEED]
"""
TIMEOUT = GAME + """\
  - press: player_0
    at: timeout + 1000
expect:
  events: [FL_TIMEOUT]
"""


def test_the_speed_switch_declared_at_four_seconds_and_never_leaking_to_the_next():
    (four,) = loads(FIRST_TURN.replace("PHYSICAL", "physical: {speed_switch: four_seconds}")
                    .replace("TURN_TIME", "2000000"), "four.yaml")
    (default,) = loads(FIRST_TURN.replace("PHYSICAL", "").replace("TURN_TIME", "0"), "default.yaml")
    assert default.physical == {"speed_switch": "unlimited", "power": "on"}
    with Driver.open("emu://flash?clock=virtual") as d:
        runner = Runner(d)
        results = [runner.run(sc) for sc in (four, default, four)]
    assert [r.status for r in results] == ["pass"] * 3, [r.races[0].failures for r in results]


def test_a_flash_timeout_is_waited_for_as_long_as_the_longest_turn_time():
    """With the switch on unlimited no timeout comes: the runner gives up the longest turn time (plus
    the margin) after the last step, to the microsecond; on four_seconds the same steps pass."""
    (unlimited,) = loads(TIMEOUT.replace("PHYSICAL", ""), "t.yaml")
    with Driver.open("emu://flash?clock=virtual") as d:
        res = Runner(d).run(unlimited)
        elapsed = d.device_now() - res.races[0].start_dev_us
    assert res.status == "fail"
    (failure,) = res.races[0].failures
    assert "no FL_TIMEOUT (anchor of step at line 14" in failure
    assert "3 s (max(turn_short_us, turn_long_us)" in failure and "in state turn" in failure
    assert elapsed == 12_000 + 3_000_000 + WAIT_MARGIN_US
    (four,) = loads(TIMEOUT.replace("PHYSICAL", "physical: {speed_switch: four_seconds}"), "t.yaml")
    with Driver.open("emu://flash?clock=virtual") as d:
        res = Runner(d).run(four)
    assert res.status == "pass", res.races[0].failures


@pytest.mark.parametrize("physical, key, message", [
    ("{door: ajar}", "physical.door", "'ajar' is not a position of the door; expected one of: closed, open"),
    ("{speed_switch: 6s}", "physical.speed_switch",
     "'6s' is not a position of the speed_switch; expected one of: unlimited, six_seconds, four_seconds"),
    ("{lid: open}", "physical.lid", "the launcher unit has no switch 'lid'; it has: door, power"),
])
def test_an_invalid_physical_state_is_rejected_at_load_with_the_valid_choices(physical, key, message):
    unit = "flash" if "speed" in physical else "launcher"
    text = f"name: x\nunit: {unit}\nphysical: {physical}\nsteps: [{{wait: 1000}}]\nexpect: {{count: {{STATE: 0}}}}\n"
    with pytest.raises(ScenarioError) as exc:
        loads(text, "p.yaml")
    (p,) = exc.value.problems
    assert (p.file, p.line, p.key, p.message) == ("p.yaml", 3, key, message)
    assert p.col == text.splitlines()[2].index(physical.strip("{}").split(": ")[1 if key != "physical.lid" else 0]) + 1


def test_a_showdown_has_no_switches():
    text = "name: x\nunit: showdown\nphysical: {door: open}\nsteps: [{wait: 1000}]\nexpect: {count: {STATE: 0}}\n"
    with pytest.raises(ScenarioError) as exc:
        loads(text, "p.yaml")
    assert exc.value.problems[0].message == "the showdown unit has no switch 'door'; it has none"
