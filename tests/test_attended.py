"""Steps that wait for a person (a wait_for with a prompt): validation, the runner's prompt hook, the
skip without --attended, the CLI's lines and rich displays, the pytest option. On the virtual clock
the person is the test: from the prompt hook it puts a physical edge on the emulated unit
(Device.physical_input) at an exact device time, as a person's press on the unit's own button."""
from __future__ import annotations

import io
import os
import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from unohil.protocol import catalogue as cat

from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.errors import ScenarioError
from unohil.harness.outcome import Outcome
from unohil.harness.report.console import LiveReport
from unohil.harness.run.prompts import Answer, Prompt
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_paths, loads
from unohil.harness.text import duration

ROOT = Path(__file__).resolve().parent.parent
ATTENDED = ROOT / "fixtures" / "attended"
PRESS = cat.ENUM_VALUES["action"]["press"]
PHYSICAL = cat.ENUM_VALUES["input_source"]["physical"]

def showdown(name: str, then: str) -> str:
    """A Showdown race whose green comes 3 s after the timer press at start + 1000, then the steps and
    expectations in then."""
    return f"""
- name: {name}
  unit: showdown
  config: {{countdown_min_us: 3000000, countdown_max_us: 3000000}}
  steps:
    - load: 2
    - press: timer
      at: start + 1000
{then}"""


GREEN = showdown("press A on green", """\
    - wait_for: {INPUT_SEEN: {input: paddle_a, action: press}}
      prompt: "press paddle A when the light turns green"
      timeout: 30000000
      ON_TIMEOUT
  expect:
    EXPECT
""")
WINS = """verdict: {loser: b, reason: first_press, reaction_a_us: 182114, press_a_us: green + 182114}
    reaction: {a: 182114}"""


def green(expect: str = WINS, on_timeout: str = "") -> str:
    return GREEN.replace("ON_TIMEOUT", on_timeout).replace("EXPECT", expect)


class Person:
    """Stands in for the person at the unit: at each prompt, presses input `delay_us` after the wait's
    start (or not at all), and keeps what it was shown and told."""

    def __init__(self, device, kind: str, inp: str | None, delay_us: int = 0):
        self.device, self.inp, self.delay_us = device, cat.UNITS[kind].inputs.get(inp), delay_us
        self.prompts: list[Prompt] = []
        self.answers: list[Answer] = []

    def shown(self, prompt: Prompt) -> None:
        self.prompts.append(prompt)
        if self.inp is not None:
            self.device.physical_input(prompt.since_dev_us + self.delay_us, self.inp, PRESS, 0)

    def answered(self, answer: Answer) -> None:
        self.answers.append(answer)


def attended_run(text: str, inp: str | None, delay_us: int, **runner):
    (sc,) = loads(text, "bench.yaml")
    with Driver.open(f"emu://{sc.unit}?clock=virtual") as d:
        person = Person(d.link.device, sc.unit, inp, delay_us)
        return Runner(d, attended=True, prompts=person, **runner).run(sc), person


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as exc:
        loads(text, "t.yaml")
    return [str(p) for p in exc.value.problems]


# ---- the runner ----

def test_a_persons_press_answers_the_prompt_at_its_exact_device_time_and_the_verdict_counts_from_it():
    # green comes 3 s after the timer press, the wait's start: the person reacts 182.114 ms after it
    res, person = attended_run(green(), "paddle_a", 3_182_114)
    assert res.status is Outcome.PASS, [r.failures for r in res.races]
    (prompt,) = person.prompts
    assert prompt.text == "press paddle A when the light turns green"
    assert prompt.awaited == "INPUT_SEEN (input paddle_a, action press, source physical)"
    assert prompt.timeout_us == 30_000_000 and prompt.since_dev_us == prompt.start_dev_us + 1000
    (answer,) = person.answers
    assert answer.prompt is prompt and answer.frame.msg.source == PHYSICAL
    assert answer.frame.dev_us == prompt.since_dev_us + 3_182_114
    assert answer.text == "paddle_a pressed 182.114 ms after green"


def test_a_wait_nobody_answers_fails_naming_what_was_awaited_and_the_prompt():
    res, person = attended_run(green(), None, 0)
    assert res.status is Outcome.FAIL
    (failure,) = res.races[0].failures
    assert "no INPUT_SEEN (input paddle_a, action press, source physical)" in failure
    assert "prompt 'press paddle A when the light turns green'" in failure
    assert "within 30000000 us of the previous step (its timeout)" in failure
    (answer,) = person.answers
    assert answer.frame is None and answer.text == ("not answered within 30 s: no INPUT_SEEN (input paddle_a, "
                                                    "action press, source physical)")


def test_a_press_after_the_timeout_is_too_late():
    res, person = attended_run(green(), "paddle_a", 30_000_001)
    assert res.status is Outcome.FAIL and person.answers[0].frame is None


def test_on_timeout_continue_goes_on_and_the_expectations_judge():
    # nobody presses: the unit's go timeout ends the race with nobody's press
    res, person = attended_run(green("verdict: {reason: no_press}", "on_timeout: continue"), None, 0)
    assert res.status is Outcome.PASS, [r.failures for r in res.races]
    assert person.answers[0].frame is None


@pytest.mark.parametrize("host_timed", [False, True], ids=["injected", "host"])
def test_a_press_the_host_sends_does_not_answer_a_wait_for_a_person(host_timed):
    """B's press from the harness (INJECT, or INPUT host-timed) is at the wait's start; only the
    person's own press of B, later, answers it."""
    text = showdown("B's press by the host is no person's", """\
    - press: paddle_b
      at: green + 100000
    - wait_for: {INPUT_SEEN: {input: paddle_b}}
      prompt: "press paddle B"
      timeout: 2000000
  expect:
    verdict: {loser: a}
""")
    res, person = attended_run(text, "paddle_b", 500_000, host_timed=host_timed)
    assert res.status is Outcome.PASS, [r.failures for r in res.races]
    answer = person.answers[0]
    assert answer.frame.msg.source == PHYSICAL and answer.frame.dev_us == person.prompts[0].since_dev_us + 500_000
    res, person = attended_run(text, None, 0, host_timed=host_timed)
    assert res.status is Outcome.FAIL and "no INPUT_SEEN (input paddle_b, source physical)" in res.races[0].failures[0]


def test_without_a_person_the_scenario_is_skipped_saying_why():
    (sc,) = loads(green(), "bench.yaml")
    assert sc.attended
    with Driver.open("emu://showdown?clock=virtual") as d:
        res = Runner(d).run(sc)
    assert res.status is Outcome.SKIP and res.error == "waits for a person (--attended)" and res.applicable
    assert not res.races


def test_the_prompt_is_worked_out_for_each_race():
    text = """
- name: each race its prompt
  unit: launcher
  sweep: {n: [3, 5]}
  steps:
    - wait_for: {INPUT_SEEN: {input: button, action: press}}
      prompt: "race {race + 1}: press the button {n} times"
      timeout: 1000000
  expect:
    events: [LA_DING]
"""
    res, person = attended_run(text, "button", 1000)
    assert res.status is Outcome.PASS
    assert [p.text for p in person.prompts] == ["race 1: press the button 3 times", "race 2: press the button 5 times"]


@pytest.mark.parametrize("name", [sc.name for sc in load_paths([str(ATTENDED)])])
def test_each_bench_scenario_passes_with_a_person_and_is_skipped_without(name):
    (sc,) = [s for s in load_paths([str(ATTENDED)]) if s.name == name]
    inp = {"showdown": "paddle_a", "launcher": "button", "flash": "player_1"}[sc.unit]
    with Driver.open(f"emu://{sc.unit}?clock=virtual") as d:
        assert Runner(d).run(sc).status is Outcome.SKIP
        person = Person(d.link.device, sc.unit, inp, 3_250_000 if sc.unit == "showdown" else 400_000)
        res = Runner(d, attended=True, prompts=person).run(sc)
    assert res.status is Outcome.PASS, [r.failures for r in res.races]
    assert len(person.answers) == len(sc.races) and all(a.frame is not None for a in person.answers)


def test_the_bench_file_fits_the_published_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from unohil.harness.report.scenario_schema import scenario_schema
    validator = jsonschema.Draft7Validator(scenario_schema())
    for path in ATTENDED.glob("*.yaml"):
        for doc in yaml.safe_load(path.read_text()):
            assert [e.message for e in validator.iter_errors(doc)] == [], (path, doc["name"])


# ---- validation ----

def test_a_prompt_goes_only_on_a_wait_for_with_a_timeout_and_a_physical_source():
    text = """
- name: bad prompts
  unit: showdown
  steps:
    - load: 2
      prompt: "load"
    - wait_for: SD_GREEN
      prompt: ""
      timeout: 1000
    - wait_for: {INPUT_SEEN: {input: paddle_a}}
      prompt: "press A"
    - wait_for: {INPUT_SEEN: {input: paddle_a, source: host}}
      prompt: "press A"
      timeout: 1000
    - wait_for: SD_GREEN
      prompt: "player {who}"
      timeout: 1000
  expect:
    events: [SD_VERDICT]
"""
    assert problems(text) == [
        "t.yaml:6:7: steps[0].prompt: goes with a step of wait_for, not 'load'",
        "t.yaml:8:15: steps[1].prompt: is empty; say what the person is to do ('press paddle A when the light "
        "turns green')",
        "t.yaml:11:7: steps[2].timeout: a wait for a person needs 'timeout': how long the person is given, in us "
        "(the unit's rules give no bound for them)",
        "t.yaml:12:56: steps[3].wait_for.INPUT_SEEN.source: a wait for a person is answered by a physical edge "
        "(source physical), not host",
        "t.yaml:16:15: steps[4].prompt: unknown name(s) who in 'player {who}'; it may use the sweep variables "
        "(none) and race",
    ]


def test_a_prompt_whose_expression_has_no_value_in_a_race_names_it():
    text = green().replace('"press paddle A when the light turns green"', '"{10 // (n - 2)} s"').replace(
        "  config:", "  sweep: {n: [1, 2]}\n  config:")
    (problem,) = problems(text)
    assert re.fullmatch(r"t\.yaml:\d+:\d+: steps\[2\]\.prompt: '\{10 // \(n - 2\)\} s' \(with n=2\): .*", problem), \
        problem


# ---- what the CLI shows ----

class _PersonReadingStdout(io.StringIO):
    """stdout, read by a person at the unit: at the PROMPT line (shown when the runner reaches the wait,
    just before the fixed 3 s countdown starts), presses paddle A 3.5 s later, after green."""

    def __init__(self, devices: list):
        super().__init__()
        self.devices = devices

    def write(self, s: str) -> int:
        if s.startswith("PROMPT "):
            (dev,) = self.devices
            dev.physical_input(dev.clock.now() + 3_500_000, cat.UNITS["showdown"].inputs["paddle_a"], PRESS, 0)
        return super().write(s)


def test_unohil_run_attended_lines_shows_the_prompt_and_its_answer(tmp_path, monkeypatch):
    """The CLI side, in process: the emulated unit's device is the one the test's person presses on
    (a person at a served unit in another process is the interactive unit's part)."""
    from unohil.emulator import inprocess
    made = []
    real = inprocess.VirtualLink

    class Kept(real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self.device)
    monkeypatch.setattr(inprocess, "VirtualLink", Kept)
    path = tmp_path / "bench.yaml"
    path.write_text(green("verdict: {loser: b, reason: first_press}"))
    out = _PersonReadingStdout(made)
    monkeypatch.setattr(sys, "stdout", out)
    code = main(["run", str(path), "--attended", "--format", "lines", "--json", str(tmp_path / "r.json")])
    monkeypatch.undo()
    text = out.getvalue()
    assert code == 0, text
    verdict = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["results"][0]["verdicts"][0]
    lines = text.splitlines()
    assert lines[0] == "PROMPT press A on green: press paddle A when the light turns green"
    assert lines[1] == f"ANSWERED press A on green: paddle_a pressed {duration(verdict['reaction_a_us'])} after green"
    assert lines[2].startswith("pass      press A on green")


def test_unohil_run_skips_a_scenario_that_waits_for_a_person_unless_attended(capsys):
    assert main(["run", str(ATTENDED), "--format", "lines"]) == 0
    out = capsys.readouterr().out
    assert out.count("waits for a person (--attended)") >= 3 and "PROMPT" not in out
    assert "0 passed, 0 failed, 3 skipped" in out


def test_the_rich_display_keeps_the_prompt_above_the_bar_until_answered():
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    live = LiveReport(console, "rich", races=1, scenarios=1)
    (sc,) = loads(green(), "bench.yaml")
    prompt = Prompt(sc.name, sc.file, 10, 0, "emu://showdown", "press paddle A", "INPUT_SEEN", 0, 0, 1_000_000)
    with live:
        live.shown(prompt)
        shown = [str(r) for r in live._bar.get_renderables()]
        assert shown[0] == " PROMPT press A on green: press paddle A "
        live.answered(Answer(prompt, None, "not answered within 1 s: no INPUT_SEEN"))
        assert not any("PROMPT" in str(r) for r in live._bar.get_renderables())
    printed = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console.file.getvalue())
    assert "UNANSWERED press A on green: not answered within 1 s: no INPUT_SEEN (press paddle A)" in printed


# ---- the pytest plugin ----

def test_the_pytest_plugin_skips_unless_hil_attended_and_then_shows_the_prompt(pytester):
    (pytester.path / "bench.yaml").write_text(green())
    pytester.makeini("[pytest]\nhil_scenarios = bench.yaml\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*waits for a person (--attended)*"])
    result = pytester.runpytest("--hil-attended")      # nobody at the virtual unit: the prompt runs out
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["PROMPT press A on green: press paddle A when the light turns green",
                                 "UNANSWERED press A on green: not answered within 30 s*"])
    result = pytester.runpytest_subprocess("--hil-attended", "-n", "2", "--hil-device", "emu://showdown",
                                           "--hil-device", "emu://showdown?seed=2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--hil-attended shows each prompt on this terminal*run it without -n*"])


# ---- a person at a served unit, the CLI in another process ----

class _PortWithAPerson:
    """A served unit's pty with a second descriptor: a pipe on which the test, reading the CLI's
    output, says when the person presses. The press is scheduled in the server's own thread (the
    unit's clock belongs to it), 3.5 s of the unit's time after the word came: after green."""

    def __init__(self, device):
        from unohil.emulator.serve import PtyPort

        class Port(PtyPort):
            def read_fds(port):
                return [port.master, self.said]

            def on_readable(port, fd):
                if fd != self.said:
                    return PtyPort.on_readable(port, fd)
                if os.read(fd, 64):
                    device.physical_input(device.now() + 3_500_000, cat.UNITS["showdown"].inputs["paddle_a"],
                                          PRESS, 0)
                return b""

        self.said, self.say = os.pipe()
        self.port = Port()


def test_unohil_run_attended_in_another_process_is_answered_by_a_press_on_the_served_unit(tmp_path):
    """The served unit on the real clock, the CLI in a process of its own: the PROMPT line comes on its
    stdout as the wait starts (flushed: the pipe is read line by line), the person's press on the
    unit's own paddle answers it, and the verdict counts the reaction from it."""
    import subprocess
    import threading
    from unohil.emulator.clock import RealClock
    from unohil.emulator.device import Device
    from unohil.emulator.serve import Server
    clock = RealClock()
    device = Device("showdown", clock, seed=1)
    server = Server(clock)
    person = _PortWithAPerson(device)
    server.add(device, person.port)
    device.start()
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    path = tmp_path / "bench.yaml"
    path.write_text(green("verdict: {loser: b, reason: first_press, reaction_a_us: {min: 1, max: 3000000}}"))
    proc = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "run", str(path), "--attended", "--format", "lines",
                             "--device", person.port.name, "--json", str(tmp_path / "r.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        first = proc.stdout.readline()
        assert first == "PROMPT press A on green: press paddle A when the light turns green\n", proc.stderr.read()
        os.write(person.say, b"press\n")
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 0, rest + proc.stderr.read()
    finally:
        proc.kill()
        server.stop()
        thread.join(timeout=5)
        server.close()
        os.close(person.say)
        os.close(person.said)
    (race,) = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["results"]
    reaction = race["verdicts"][0]["reaction_a_us"]
    assert rest.splitlines()[0] == f"ANSWERED press A on green: paddle_a pressed {duration(reaction)} after green"


# ---- players by role in a prompt ----

FLASH = """
- name: the current player ends their turn
  unit: flash
  steps:
    - press: player_0
      at: start + 1000
    - press: player_2
    - press: play_pause
      at: previous + 1000
    - release: play_pause
      at: previous + 10000
    - wait_for: {FL_TURN_END: {player: current}}
      prompt: "player {current} (button {current + 1}): end your turn; player {opponent_1} waits"
      timeout: 3000000
  expect:
    events: [{FL_TURN_END: {turn: 1}}]
"""


def test_a_prompt_names_the_players_in_their_roles_when_the_wait_starts():
    (sc,) = loads(FLASH, "bench.yaml")
    with Driver.open("emu://flash?clock=virtual") as d:
        dev = d.link.device

        class Current(Person):
            def shown(self, prompt):
                self.prompts.append(prompt)
                current = int(prompt.text.split()[1])
                dev.physical_input(prompt.since_dev_us + 700_000, cat.UNITS["flash"].inputs[f"player_{current}"],
                                   PRESS, 0)
        person = Current(dev, "flash", None)
        res = Runner(d, attended=True, prompts=person).run(sc)
    assert res.status is Outcome.PASS, [r.failures for r in res.races]
    selected = next(f.msg.player for f in res.races[0].frames if f.msg.NAME == "FL_SELECTED")
    other = 2 - selected
    assert person.prompts[0].text == (f"player {selected} (button {selected + 1}): end your turn; "
                                      f"player {other} waits")
    assert person.answers[0].text == "FL_TURN_END 710 ms after selected"     # selected at the PLAY press


def test_a_prompt_names_roles_only_once_a_game_has_started_and_only_those_it_has():
    early = FLASH.replace("    - press: player_2\n", "    - wait_for: {FL_REGISTERED: {count: 1}}\n"
                                                 "      prompt: \"player {current}\"\n      timeout: 1000\n"
                                                 "    - press: player_2\n      at: previous + 1000\n", 1)
    assert problems(early) == ["t.yaml:8:15: steps[1].prompt: names current before any step starts a game "
                               "(a press of play_pause): before the unit's first selection nobody plays"]
    assert problems(FLASH.replace("{opponent_1} waits", "{opponent_2} waits")) == [
        "t.yaml:13:15: steps[4].prompt: 'opponent_2': the scenario registers 2 player(s) (player_0, player_2), "
        "so its game has 1 opponent (opponent_1)"]


def test_the_prompt_is_shown_when_the_wait_starts_on_the_units_clock_not_when_the_runner_gets_there():
    text = """
- name: a prompt after five seconds
  unit: launcher
  steps:
    - wait: start + 5000000
    - wait_for: {INPUT_SEEN: {input: button, action: press}}
      prompt: "press the button"
      timeout: 1000000
  expect:
    events: [LA_DING]
"""
    (sc,) = loads(text, "bench.yaml")
    with Driver.open("emu://launcher?clock=virtual") as d:
        dev = d.link.device

        class Watching(Person):
            def shown(self, prompt):
                self.shown_at = dev.now()
                super().shown(prompt)
        person = Watching(dev, "launcher", "button", 1000)
        res = Runner(d, attended=True, prompts=person).run(sc)
    assert res.status is Outcome.PASS
    prompt = person.prompts[0]
    assert prompt.since_dev_us == prompt.start_dev_us + 5_000_000 and person.shown_at >= prompt.since_dev_us


def test_the_unattended_library_never_waits_for_a_person():
    """The default run (the library, in CI) stays unattended: prompts belong in fixtures/attended."""
    from unohil.harness.scenarios.library import library_paths
    assert not [sc.id for sc in load_paths(library_paths()) if sc.attended]
