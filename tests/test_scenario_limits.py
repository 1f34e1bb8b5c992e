"""The validator refuses what cannot be right and never crashes or blows up: times beyond the device
clock, expectations that would never run, hostile files (one message with file:line:col, exit 2),
and caps on everything validation's work grows with."""
import dataclasses
import re
import tracemalloc
from pathlib import Path

import pytest
import yaml

from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.outcome import Outcome
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios import expr
from unohil.harness.scenarios.validation import compose, times, words
from unohil.harness.scenarios.load import ScenarioError, loads
from unohil.protocol import catalogue as cat

ROOT = Path(__file__).resolve().parent.parent

RACE = """
name: clean win
unit: showdown
config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
SWEEP
steps:
  - load: 2
  - press: timer
    at: start + 1000
  - press: paddle_a
    at: AT
expect:
  verdict: {loser: b, reason: first_press}
"""


def scenario(at: str = "green + 180000", sweep: str = "", **extra) -> str:
    text = RACE.replace("SWEEP", sweep).replace("AT", at)
    for key, value in extra.items():
        text += f"{key}: {value}\n"
    return text


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as exc:
        loads(text, "t.yaml")
    return [str(p) for p in exc.value.problems]


def one_problem(text: str) -> str:
    (p,) = problems(text)
    return p


def validate(tmp_path, content: bytes | str, capsys, command: tuple[str, ...] = ("validate",)) -> tuple[int, str]:
    f = tmp_path / "s.yaml"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    code = main([*command, str(f)])
    return code, capsys.readouterr().err


# ---- times beyond the device clock ----

@pytest.mark.parametrize("at, shown", [
    ("green + 18446744073709551617", "18446744073709551617 us"),    # wrapped to 1 us: reaction_a_us = 1, a pass
    ("green + 4000000000", "1 h 6 min 40 s"),                       # wrapped into the past: "the link is too slow"
])
def test_a_time_the_device_clock_cannot_hold_is_refused_saying_the_limit(tmp_path, capsys, at, shown):
    code, err = validate(tmp_path, scenario(at), capsys)
    assert code == 2
    assert re.search(r"s\.yaml:10:5: steps\[2\]: .*reaches .*" + re.escape(shown), err)
    assert "at most 30 min ahead" in err and "wraps every 1 h 11 min 34.967296 s" in err
    code, err = validate(tmp_path, scenario(at), capsys, ("run", "-q"))
    assert code == 2 and "nothing was run" in err


def test_the_limit_is_thirty_minutes_to_the_microsecond():
    assert words.MAX_AHEAD_US == 30 * 60 * 1_000_000 < 2 ** 31
    loads(scenario(f"green + {words.MAX_AHEAD_US}"))
    assert "reaches 30 min 0.000001 s" in one_problem(scenario(f"green + {words.MAX_AHEAD_US + 1}"))


def test_times_chained_through_previous_add_up():
    text = scenario("start + 1000000000", end="previous + 900000000")
    assert one_problem(text).startswith("t.yaml:14:6: end: 'previous + 900000000' reaches 31 min 40 s")
    loads(scenario("start + 1000000000", end="previous + 700000000"))
    # an event anchor starts the count again: the runner hears of the event before it schedules
    loads(scenario("start + 1000000000", end="verdict + 1700000000"))


def test_repetitions_and_holds_count_and_every_value_of_the_sweep_is_checked():
    repeated = RACE.replace("SWEEP", "").replace("AT", "green + 1000\n    times: 1000\n    every: 2000000")
    assert "'green + 1000' repeated reaches 33 min 18.001 s" in one_problem(repeated)
    held = """
name: held
unit: flash
steps:
  - hold: [play_pause, buzzer]
    at: start + 1000
    for: 1900000000
expect: {absent: [FL_RESET]}
"""
    assert "held reaches 31 min 40.001 s" in one_problem(held)
    swept = scenario("green + 180000 + d", sweep="sweep: {d: [0, 1000, 1800000000]}")
    assert "(with d=1800000000)" in one_problem(swept)
    loads(scenario("green + 180000 + d", sweep="sweep: {d: [0, 1000, 1700000000]}"))


# ---- expectations that would never run ----

WHEN = RACE.replace("SWEEP", "sweep: {d: [0, 100, 200]}").replace("AT", "green + 180000 + d") + """\
  cases:
    - when: "CONDITION"
      verdict: {loser: a}
"""


def test_a_case_whose_when_holds_in_no_race_is_refused_naming_the_values(tmp_path, capsys):
    code, err = validate(tmp_path, WHEN.replace("CONDITION", "d > 1000"), capsys)
    assert code == 2
    assert ("s.yaml:15:13: expect.cases[0].when: 'd > 1000' holds in none of the races, so its checks would "
            "never run; the sweep gives d = 0, 100, 200; race = 0 to 2") in err
    loads(WHEN.replace("CONDITION", "d > 100"))


@pytest.mark.parametrize("name", ["green", "countdown_start", "buzzer", "door", "verdict", "start", "previous",
                                  "race", "next", "max", "and"])
def test_a_sweep_variable_named_like_an_anchor_of_any_unit_or_a_reserved_word_is_refused(name):
    text = scenario("green + 180000", sweep=f"sweep: {{{name}: [0]}}")
    assert f"t.yaml:5:9: sweep.{name}: {name!r} cannot name a sweep variable" in problems(text)[0]


def test_every_anchor_of_every_unit_kind_is_a_reserved_sweep_name():
    assert words.ALL_ANCHORS >= {a for u in cat.UNITS.values() for a in u.anchors} | {"start", "previous"}


# ---- one clear error, never a traceback ----

@pytest.mark.parametrize("content, where, says", [
    (b"name: \xe9t\xe9\nunit: showdown\n", ":1:7: ", "not UTF-8 text: byte 0xe9"),
    (b"name: x\nunit: showdown\nsteps: \x89PNG\r\n\x1a\n\x00\x00", ":3:8: ", "not UTF-8 text: byte 0x89"),
    (b"name: a\x01b\nunit: showdown\n", ":1:8: ", "the character U+0001 is not allowed"),
    (b"name: x\nunit: showdown\nseed: " + b"9" * 5000 + b"\n", ":3:7: ", "an integer of 5000 characters"),
    (b"name: x\nunit: showdown\nsteps: " + b"[" * 5000 + b"]" * 5000 + b"\n", ":3:", "nested more than 100 levels"),
    (b"name: x\nunit: showdown\nsteps:\n" + b"".join(b"  " * i + b"- \n" for i in range(1, 300)), ":", "nested more"),
])
@pytest.mark.parametrize("loader", ["libyaml", "pure"])
def test_a_hostile_file_is_one_error_with_its_position(tmp_path, capsys, monkeypatch, content, where, says, loader):
    if loader == "pure":
        monkeypatch.setattr(compose, "_LOADER", compose._PureSafeLoader)
    elif not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml")
    code, err = validate(tmp_path, content, capsys)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 2 and lines[1] == "1 problem(s)", err
    assert re.match(r".*s\.yaml:\d+:\d+: ", lines[0]) and where in lines[0] and says in lines[0], err


def test_the_pytest_plugin_reports_a_file_that_is_not_utf8_as_one_collection_error(pytester):
    path = pytester.path / "scenarios" / "latin.yaml"
    path.parent.mkdir()
    path.write_bytes(b"name: \xe9t\xe9\nunit: showdown\n")
    result = pytester.runpytest("--hil-scenarios", "scenarios")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*latin.yaml:1:7: not UTF-8 text: byte 0xe9*"])
    assert "UnicodeDecodeError" not in result.stdout.str()


DIVIDES = RACE.replace("SWEEP", "sweep: {d: [0, 100, 200]}").replace("AT", "green + 180000 + d") + """\
  cases:
    - when: "1 // (d - 100) > 0"
      verdict: {loser: b}
"""


def test_a_when_with_no_value_in_some_race_is_refused_before_anything_runs(tmp_path, capsys):
    code, err = validate(tmp_path, DIVIDES, capsys, ("run", "-q"))
    assert code == 2 and "nothing was run" in err
    assert ("s.yaml:15:13: expect.cases[0].when: '1 // (d - 100) > 0': integer division or modulo by zero "
            "(with d=100, race=1)") in err
    assert "at: 'green + 180000 + 1 // (d - 100)'" not in err
    code, err = validate(tmp_path, scenario("green + 180000 + 1 // (d - 100)", "sweep: {d: [100]}"), capsys)
    assert code == 2 and "s.yaml:11:9: steps[2].at" in err and "by zero" in err


def test_an_expression_that_fails_at_run_time_is_that_races_error_and_the_run_goes_on():
    (sc,) = loads(DIVIDES.replace("1 // (d - 100)", "d"))
    broken = dataclasses.replace(sc.expectations[1], when=expr.parse("1 // (d - 100) > 0"))
    sc = dataclasses.replace(sc, expectations=[sc.expectations[0], broken])
    with Driver.open("emu://showdown?clock=virtual") as d:
        result = Runner(d).run(sc)
    statuses = [r.status for r in result.races]
    assert statuses == [Outcome.PASS, Outcome.ERROR, Outcome.PASS]
    assert "by zero (with d=100, race=1)" in result.races[1].error


@pytest.mark.parametrize("option, says", [
    ("host_offset_us=-1", "host_offset_us must be a host time in us, from 0"),
    ("drift_ppm=-1000000", "drift_ppm must be more than -1000000"),
    ("drift_ppm=inf", "drift_ppm must be more than -1000000"),
])
def test_an_emulator_url_option_out_of_range_is_a_url_error(tmp_path, capsys, option, says):
    url = f"emu://showdown?clock=virtual&{option}"
    code, err = validate(tmp_path, scenario(), capsys, ("run", "-q", "--device", url))
    assert code == 2
    assert f"error: {url}: {says}" in err


# ---- caps ----

def test_a_sweep_product_over_the_cap_is_refused_before_it_is_expanded():
    axis = "{from: 0, to: 9999, step: 1}"
    text = scenario("green + 180000 + a", sweep=f"sweep: {{a: {axis}, b: {axis}, c: {axis}}}")
    tracemalloc.start()
    try:
        message = one_problem(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "sweep: 10000 x 10000 x 10000 = 1000000000000 races; at most 10000 per scenario (MAX_RACES)" in message
    assert peak < 20_000_000        # three ranges of 10,000, never their product


def test_a_range_over_the_cap_is_refused_before_it_is_listed():
    tracemalloc.start()
    try:
        message = one_problem(scenario(sweep="sweep: {d: {from: 0, to: 30000000, step: 1}}"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "sweep.d: 30000001 values; at most 10000 races per scenario (MAX_RACES)" in message
    assert peak < 5_000_000


def test_repeat_and_times_have_caps():
    assert "repeat: 10001 is out of range [1, 10000]" in one_problem(scenario(repeat=10001))
    assert "sweep: 100 x repeat 101 = 10100 races" in one_problem(
        scenario(sweep="sweep: {d: {from: 1, to: 100, step: 1}}", repeat=101))
    many = RACE.replace("SWEEP", "").replace("AT", "green + 1000\n    times: 1001\n    every: 10")
    assert "times: 1001 is out of range [1, 1000]" in one_problem(many)


def test_races_of_a_file_have_a_cap(monkeypatch):
    monkeypatch.setattr(times, "MAX_FILE_RACES", 25)
    two = "---\n" + scenario(repeat=20) + "---\n" + scenario(repeat=20).replace("clean win", "again")
    assert "40 in the file so far; at most 25 in one file (MAX_FILE_RACES)" in one_problem(two)


def test_expression_work_has_a_cap(monkeypatch):
    swept = scenario("green + d", "sweep: {d: {from: 1, to: 600, step: 1}}")
    # 600 races of "1000" (one node: a constant, still checked in every race) and of "d" (a name, its load)
    monkeypatch.setattr(times, "MAX_EVALUATIONS", 600 * 1 + 600 * 2)
    loads(swept)
    monkeypatch.setattr(times, "MAX_EVALUATIONS", 600 * 1 + 600 * 2 - 1)
    assert "more than 1799 steps of expression evaluation" in one_problem(swept)


def test_an_expression_has_a_size_cap():
    long_time = "green + " + " + ".join(["1"] * 250)
    assert "steps[2].at: 1005 characters; a time is at most 500 (MAX_EXPR_CHARS)" in one_problem(scenario(long_time))
    long_when = WHEN.replace("CONDITION", "d > " + " + ".join(["1"] * 250))
    assert "when: 1001 characters; a condition is at most 500" in one_problem(long_when)


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path, capsys):
    big = scenario() + "# " + "x" * words.MAX_FILE_BYTES + "\n"
    code, err = validate(tmp_path, big, capsys)
    assert code == 2 and "s.yaml:1:1: larger than 1000000 bytes" in err
    assert "larger than 1000000 bytes" in one_problem(big)


def test_aliases_cannot_multiply_what_validation_walks():
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    for i, name in enumerate("bcdefg"):
        prev = "abcdefg"[i]
        bomb += f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]\n"
    assert len(bomb) < 500
    assert "more than 200000 YAML nodes (an alias counts at each use)" in one_problem(bomb)


def test_the_fast_loader_is_used_and_gives_the_same_positions_as_the_pure_one(monkeypatch):
    if yaml.__with_libyaml__:
        assert compose._LOADER is yaml.CSafeLoader
    broken = scenario("green - 5", sweep="sweep: {d: [0, x]}", colour="red")
    fast = problems(broken)
    monkeypatch.setattr(compose, "_LOADER", compose._PureSafeLoader)
    assert problems(broken) == fast and len(fast) == 3


def test_every_cap_is_documented_with_its_value():
    docs = (ROOT / "docs" / "scenarios.md").read_text()
    caps = {name: value for name, value in vars(words).items() if name.startswith("MAX_")}
    assert len(caps) == 9
    for name, value in caps.items():
        shown = "30 min" if name == "MAX_AHEAD_US" else f"{value:,}"
        assert f"| `{name}` | {shown} |" in docs, name
