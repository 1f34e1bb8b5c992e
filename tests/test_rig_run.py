"""Scenarios in rig mode: the rig's view of each race beside the unit's, what no rig can play, expect: rig,
and the commands and the pytest plugin that run them (harness/rig/views.py, harness/rig/unit.py)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from unohil.protocol import catalogue as cat

from unohil.emulator.path import InputPath, parse as parse_path
from unohil.harness.errors import ScenarioError
from unohil.harness.outcome import Outcome
from unohil.harness.rig.links import open_rig_unit
from unohil.harness.rig.unit import unplayable
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_paths, loads
from unohil.harness.session.driver import Driver

LIBRARY = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
SHOWDOWN_RIG = LIBRARY / "showdown" / "rig.yaml"
FLASH_RIG = LIBRARY / "flash" / "rig.yaml"


def _run(kind: str, path: str, files) -> dict:
    """name -> ScenarioResult of the scenarios of files, through an emulated rig with these path options."""
    d = open_rig_unit(f"emu://{kind}", f"emurig://?{path}")
    try:
        return {sc.name: Runner(d).run(sc) for sc in load_paths([str(f) for f in files])}
    finally:
        d.close()


def _one(results: dict, word: str):
    return next(r for name, r in results.items() if word in name)


# ---- the rig's view: exact on a clean path ----

def test_a_clean_path_gives_exact_figures_and_the_verdicts_outputs():
    results = _run("showdown", "", [SHOWDOWN_RIG])
    assert {r.status for r in results.values()} == {Outcome.PASS}
    first = _one(results, "first press").races[0].rig
    assert [(p["input"], p["action"], p["timestamp_error_us"]) for p in first["presses"]] == [
        ("load_cards", "press", 0), ("timer", "press", 0), ("paddle_a", "press", 0), ("paddle_b", "press", 0)]
    assert all(p["unit_us"] == p["rig_us"] for p in first["presses"])
    assert first["reactions"] == [{"verdict": 0, "who": "a", "unit_reaction_us": 180_000, "rig_reaction_us": 180_000,
                                   "reaction_error_us": 0}]
    # the launch at the decisive press, the green lamp going off at the verdict (after the 1 ms tie window)
    assert [(o["output"], o["edge"], o["decision_to_output_us"]) for o in first["outputs"]] == [
        ("launch", "press", 0), ("green", "release", 0)]
    paddle_a = first["presses"][2]["rig_us"]
    assert [o["unit_us"] - paddle_a for o in first["outputs"]] == [0, cat.PARAMS_BY_NAME["tie_window_us"].default]
    false_start = _one(results, "false start").races[0].rig
    # B starts early: the red lamp, flashing toward both sides, swings to B (A's side goes dark)
    assert [(o["output"], o["line"], o["edge"], o["decision_to_output_us"]) for o in false_start["outputs"]] == [
        ("red", cat.RIG.line_of("showdown", "light", "red", cat.ENUM_VALUES["side"]["a"]), "release", 0),
        ("launch", cat.RIG.line_of("showdown", "launch"), "press", 0)]
    assert false_start["worst"] == {"decision_to_launch_us": 0, "decision_to_red_us": 0, "timestamp_error_us": 0}


def test_skew_and_output_delays_show_as_the_path_implies():
    results = _run("showdown", "skew_paddle_a=300us&delay_green=2ms&delay_launch=700us", [SHOWDOWN_RIG])
    first = _one(results, "first press")
    view = first.races[0].rig
    errors = {p["input"]: p["timestamp_error_us"] for p in view["presses"]}
    assert errors == {"load_cards": 0, "timer": 0, "paddle_a": 300, "paddle_b": 0}
    # the unit's reaction counts from its own green, the rig's from the lamp 2 ms later: the timestamp error plus
    # the lamp's delay (SPEC 13.5)
    assert [r["reaction_error_us"] for r in view["reactions"]] == [300 + 2000]
    assert {o["output"]: o["decision_to_output_us"] for o in view["outputs"]} == {"launch": 700, "green": 2000}
    assert first.status is Outcome.FAIL
    assert "rig.reaction_error_us: expected [-100, 2100] us, got 2300 us" in first.races[0].failures
    assert "rig.timestamp_error_us: expected [-100, 100] us, got 300 us (1 of 4 values)" in first.races[0].failures


def test_a_polling_units_timestamp_errors_are_its_poll_phases():
    path = {"poll": "1ms", "scan": "player_2,player_1"}
    unit = cat.UNITS["flash"]
    outputs = {w.name for w in cat.RIG.wiring["flash"] if not w.drives}
    model = InputPath(parse_path(path, unit.inputs, outputs), unit.inputs)
    res = _one(_run("flash", "&".join(f"{k}={v}" for k, v in path.items()), [FLASH_RIG]), "buzzer race")
    race = res.races[0]
    presses = race.rig["presses"]
    assert len(presses) >= 8
    for p in presses:
        t = race.start_dev_us + p["rig_us"]
        assert p["timestamp_error_us"] == model.taken(unit.inputs[p["input"]], t) - t
    assert any(p["timestamp_error_us"] > 0 for p in presses)
    # reactions count from the BUZZER press: both ends are late by their own poll phase
    stamp = {(p["input"], p["action"]): p["timestamp_error_us"] for p in presses}
    assert {r["who"]: r["reaction_error_us"] for r in race.rig["reactions"]} == {
        who: stamp[(who, "press")] - stamp[("buzzer", "press")] for who in ("player_1", "player_2")}


def test_a_5ms_red_delay_fails_the_scenario_naming_the_figure():
    results = _run("showdown", "delay_red=5ms", [SHOWDOWN_RIG])
    race = _one(results, "false start").races[0]
    assert race.status is Outcome.FAIL
    assert race.failures == ["rig.decision_to_red_us: expected [, 2000] us, got 5000 us"]
    assert _one(results, "first press").status is Outcome.PASS      # no red lamp in that verdict


# ---- what no rig can play; what needs a rig ----

def _scenario(steps: str, unit: str = "showdown", expect: str = "count: {SD_VERDICT: 0}"):
    text = f"name: probe\nunit: {unit}\nsteps:\n{textwrap.indent(textwrap.dedent(steps), '  ')}expect: {{{expect}}}\n"
    return loads(text, "probe.yaml")[0]


@pytest.mark.parametrize("steps, why", [
    ("- press: paddle_a\n  at: start + 1000\n  value: 2\n", "a rig closes a switch: paddle_a carries no value"),
    ("- release: paddle_b\n  at: start + 1000\n", "a rig cannot release paddle_b without pressing it first"),
    ("- press: paddle_b\n  at: start + 1000\n- release: paddle_b\n- release: paddle_b\n",
     "a rig cannot release paddle_b without pressing it first"),
    ("- load: 2\n  at: start + 1000\n- unload: 2\n", None),          # a feeder is an actuator: it takes values
    ("- press: timer\n  at: start + 1000\n- release: timer\n  at: previous + 5000\n", None),
])
def test_what_no_rig_can_play_is_derived_from_the_steps(steps, why):
    got = unplayable(_scenario(steps))
    assert (got is None) if why is None else got.startswith(why)


def test_switches_holds_and_players_by_role_are_playable():
    door = _scenario("- door: close\n  at: start + 1000\n- door: close\n", unit="launcher",
                     expect="count: {LA_RESULT: 0}")
    hold = _scenario("- hold: [play_pause, buzzer]\n  at: start + 1000\n  for: 5000\n- release: buzzer\n",
                     unit="flash", expect="count: {FL_BUZZER: 0}")
    # which button a role stands for is known in the race only: the releases after it are not judged
    role = _scenario("- press: player_0\n  at: start + 1000\n- press: player_1\n- press: play_pause\n"
                     "- release: opponent_1\n  at: previous + 1000\n- release: player_2\n",
                     unit="flash", expect="count: {FL_BUZZER: 0}")
    held_before = _scenario("- press: buzzer\n  at: start + 1000\n- hold: [play_pause, buzzer]\n  for: 5000\n"
                            "- release: buzzer\n", unit="flash", expect="count: {FL_BUZZER: 0}")
    assert [unplayable(sc) for sc in (door, role)] == [None, None]
    for sc in (hold, held_before):      # a hold lets go of what it held
        assert unplayable(sc).startswith("a rig cannot release buzzer")


def test_rig_scenarios_are_skipped_without_a_rig(tmp_path, capsys):
    from unohil.harness.cli.app import main
    d = Driver.open("emu://showdown?clock=virtual")
    try:
        for sc in load_paths([str(SHOWDOWN_RIG)]):
            res = Runner(d).run(sc)
            assert res.status is Outcome.SKIP and res.error.startswith("needs a rig (--rig URL)")
            assert not res.applicable and not res.races
    finally:
        d.close()
    out = tmp_path / "results.json"
    assert main(["run", "-q", "--json", str(out)]) == 0          # the default run stays green, with skips
    doc = json.loads(out.read_text())
    rig = [s for s in doc["scenarios"] if s["file"].endswith("rig.yaml")]
    assert len(rig) == 5 and {s["status"] for s in rig} == {"skip"}


@pytest.mark.parametrize("rig, problem", [
    ("{decision_to_lamp_us: {max: 1}}", "a rig measures no 'decision_to_lamp_us' on the showdown unit; it measures: "
                                        "timestamp_error_us, reaction_error_us, decision_to_green_us"),
    ("{timestamp_error_us: {most: 1}}", "timestamp_error_us"),
    ("{decision_to_loopback_us: {max: 1}}", "a rig measures no 'decision_to_loopback_us'"),   # the rig's own wire
    ("[timestamp_error_us]", "must be a mapping"),
])
def test_a_bad_rig_expectation_is_one_error_at_its_place(rig, problem):
    text = textwrap.dedent(f"""\
        name: probe
        unit: showdown
        steps:
          - press: paddle_a
            at: start + 1000
        expect:
          count: {{SD_VERDICT: 0}}
          rig: {rig}
        """)
    with pytest.raises(ScenarioError) as exc:
        loads(text, "probe.yaml")
    assert "probe.yaml:8:" in str(exc.value) and problem in str(exc.value)


def test_a_launcher_has_no_reaction_error_to_expect():
    with pytest.raises(ScenarioError, match="probe.yaml:6:39: .*no 'reaction_error_us'.*decision_to_card_us"):
        _scenario("- press: button\n  at: start + 1000\n", unit="launcher",
                  expect="count: {LA_RESULT: 1}, rig: {reaction_error_us: {max: 1}}")


# ---- the outputs: results JSON, JUnit, console; the pytest plugin ----

def test_unohil_run_in_rig_mode_reports_both_views(tmp_path, capsys):
    from unohil.harness.cli.app import main
    out, junit = tmp_path / "r.json", tmp_path / "r.xml"
    assert main(["run", "-q", "--device", "emu://showdown", "--rig", "emurig://?delay_red=5ms", "--json", str(out),
                 "--junit", str(junit), str(SHOWDOWN_RIG)]) == 1
    text = capsys.readouterr().out
    assert ("rig, the worst over the run: timestamp error 0 us, reaction error 0 us, decision to green 0 us, "
            "decision to launch 0 us, decision to red 5 ms") in text
    assert "rig.decision_to_red_us: expected [, 2000] us, got 5000 us" in text
    doc = {s["name"]: s for s in json.loads(out.read_text())["scenarios"]}
    fs = next(s for name, s in doc.items() if "false start" in name)
    assert fs["rig"] == {"decision_to_launch_us": 0, "decision_to_red_us": 5000, "timestamp_error_us": 0}
    assert fs["results"][0]["rig"]["outputs"][0]["decision_to_output_us"] == 5000
    assert "rig_decision_to_red_us_worst=5000" in junit.read_text()


def test_rig_mode_and_host_timed_presses_are_one_usage_error(capsys):
    from unohil.harness.cli.app import main
    assert main(["run", "-q", "--device", "emu://showdown", "--rig", "emurig://", "--host-timed",
                 str(SHOWDOWN_RIG)]) == 2
    assert "--rig and --host-timed: in rig mode the rig presses the unit's buttons" in capsys.readouterr().err


SCENARIO_DIR = "scenarios"


def test_the_pytest_plugin_runs_through_a_rig(pytester):
    (pytester.path / SCENARIO_DIR).mkdir()
    (pytester.path / SCENARIO_DIR / "rig.yaml").write_text(SHOWDOWN_RIG.read_text())
    pytester.makeini(f"[pytest]\nhil_scenarios = {SCENARIO_DIR}\n")
    result = pytester.runpytest("--hil-device", "emu://showdown", "--hil-rig", "emurig://?delay_red=5ms")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*rig.decision_to_red_us: expected [[], 2000] us, got 5000 us*"])
    pytester.makeini(f"[pytest]\nhil_scenarios = {SCENARIO_DIR}\nhil_rig = emurig://\n")
    pytester.runpytest("--hil-device", "emu://showdown").assert_outcomes(passed=4)
    pytester.makeini(f"[pytest]\nhil_scenarios = {SCENARIO_DIR}\n")
    pytester.runpytest().assert_outcomes(skipped=4)             # without a rig: skipped, saying why
    bad = pytester.runpytest("--hil-rig", "emurig://")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--hil-rig (hil_rig) needs one --hil-device*"])


def _later(f, by_us: int):
    """A copy of frame f that came by_us later."""
    from unohil.protocol import Frame
    g = Frame(f.version, f.seq, f.time_us, f.msg)
    g.dev_us = f.dev_us + by_us
    return g


def test_a_lamp_the_unit_switches_after_its_verdict_counts_from_the_verdict():
    # the false start as a unit would run it whose firmware lights the red lamp 30 ms after its verdict: the
    # unit's LIGHT and the rig's capture of the red line both 30 ms late
    from unohil.harness.rig.views import race_view
    d = open_rig_unit("emu://showdown", "emurig://")
    try:
        sc = next(sc for sc in load_paths([str(SHOWDOWN_RIG)]) if "false start" in sc.name)
        race = Runner(d).run(sc).races[0]
        s = d.session
        red = {w.line for w in cat.RIG.wiring["showdown"] if w.name == "red"}
        light = next(f for f in race.frames if f.msg.NAME == "LIGHT" and f.msg.light == 1 and f.msg.mode != 0
                     and f.msg.target != 0xFF)
        events = [f for f in race.frames if f is not light] + [_later(light, 30_000)]
        rig = [_later(f, 30_000) if f.msg.NAME == "RIG_CAPTURE" and f.msg.line in red and f.msg.origin == 1 else f
               for f in s.seen]
        view = race_view(s, d.driven, events, rig, race.start_dev_us, "SD_VERDICT")
    finally:
        d.close()
    verdict = next(f for f in race.frames if f.msg.NAME == "SD_VERDICT").dev_us - race.start_dev_us
    assert [(o["output"], o["decision_us"], o["unit_us"] - verdict, o["decision_to_output_us"])
            for o in view["outputs"]] == [("launch", verdict, 0, 0), ("red", verdict, 30_000, 30_000)]


def _replace_field(f, **fields):
    """A copy of frame f whose message has these fields changed (as a unit reporting them wrong would send)."""
    from unohil.protocol import Frame
    m = f.msg
    names = [fd.name for fd in m.DEF.fields]
    values = [fields.get(n, getattr(m, n)) for n in names]
    g = Frame(f.version, f.seq, f.time_us, type(m)(*values))
    g.dev_us = f.dev_us
    return g


@pytest.mark.parametrize("broken, says", [
    ("early", "rig.timestamp_error_us: expected [-100, 100] us, got -150 us"),
    ("unreported", "rig.timestamp_error_us: the unit reported no paddle_a press driven at"),
    ("reaction", "rig.reaction_error_us: expected [-100, 2100] us, got 5000 us"),
])
def test_a_unit_wrong_about_its_presses_fails_the_rig_expectation(broken, says):
    # the library's first-press rig scenario, its events as a broken unit would report them: the press of A
    # stamped 150 us before its edge, never reported, or its reaction counted 5 ms long
    from unohil.harness.rig.views import check, race_view
    d = open_rig_unit("emu://showdown", "emurig://")
    try:
        sc = next(sc for sc in load_paths([str(SHOWDOWN_RIG)]) if "first press" in sc.name)
        race = Runner(d).run(sc).races[0]
        assert race.status == "pass", race.failures
        s = d.session
        a = cat.UNITS["showdown"].inputs["paddle_a"]
        press_a = next(f for f in race.frames if f.msg.NAME == "INPUT_SEEN" and f.msg.input == a)
        verdict = next(f for f in race.frames if f.msg.NAME == "SD_VERDICT")
        events = list(race.frames)
        if broken == "early":
            events[events.index(press_a)] = _later(press_a, -150)
        elif broken == "unreported":
            events.remove(press_a)
        else:
            events[events.index(verdict)] = _replace_field(verdict, reaction_a_us=verdict.msg.reaction_a_us + 5000)
        view = race_view(s, d.driven, events, s.seen, race.start_dev_us, "SD_VERDICT")
        fails = check(sc.expectations, view, race.env)
        assert any(says in f for f in fails), fails
    finally:
        d.close()
