"""Scenario files: validation with positions, the runner's judgement, and the CLI's contract."""
import json
import os
import random
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from unohil.emulator import showdown as showdown_model
from unohil.emulator.device import GENERATORS
from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.run import anchors as anchors_module, runner as runner_module
from unohil.harness.run.anchors import WAIT_MARGIN_US
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import ScenarioError, load_paths, loads
from unohil.protocol import StreamDecoder
from unohil.protocol import catalogue as cat
from unohil.protocol.algorithms import Pcg32
from samples import GOOD     # one clean win for A: fixtures/samples/clean_win.yaml

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "fixtures" / "scenarios"


def run_one(text: str, url: str = "emu://showdown?clock=virtual", **kw):
    (sc,) = loads(text, "t.yaml")
    with Driver.open(url) as d:
        return Runner(d, **kw).run(sc)


# ---- validation ----

def test_every_problem_in_a_file_is_reported_with_line_and_column():
    text = """\
name: broken
unit: showdown
tags: ["fast one"]
colour: red
config: {tie_window_us: 0, turn_short_us: 5}
steps:
  - press: paddle_c
    at: green - 5
  - jump: 3
  - press: timer
    at: blue + 4
  - load: many
expect: {}
"""
    with pytest.raises(ScenarioError) as exc:
        loads(text, "broken.yaml")
    got = [(p.line, p.col, p.key) for p in exc.value.problems]
    assert (3, 8, "tags") in got
    assert (4, 1, "colour") in got
    assert (5, 25, "config.tie_window_us") in got
    assert (5, 28, "config.turn_short_us") in got
    assert (7, 12, "steps[0].press") in got
    assert (8, 9, "steps[0].at") in got
    assert (9, 5, "steps[1].jump") in got
    assert (11, 9, "steps[2].at") in got
    assert (12, 11, "steps[3].load") in got
    assert (13, 9, "expect") in got
    text_all = str(exc.value)
    assert "broken.yaml:8:9: steps[0].at: 'green - 5' is before its anchor 'green'" in text_all
    assert "no expectation" in text_all


def test_covers_names_decisions_of_the_scenarios_own_unit_with_the_valid_choices():
    (sc,) = loads(GOOD.replace("seed: 5", "seed: 5\ncovers: [SD-2, SD-9]"))
    assert sc.covers == ("SD-2", "SD-9")
    text = GOOD.replace("seed: 5", "seed: 5\ncovers: [SD-2, FL-3, SD-99, SD-2]")
    with pytest.raises(ScenarioError) as exc:
        loads(text, "c.yaml")
    got = {(p.line, p.col): p.message for p in exc.value.problems}
    assert set(got) == {(5, 16), (5, 22), (5, 29)}, got
    assert got[(5, 16)].startswith("FL-3 is a decision of the flash unit; the showdown unit's are: SD-1, SD-2,")
    last = [d.id for d in cat.UNITS["showdown"].decisions][-2:]
    assert got[(5, 22)].startswith("unknown decision id 'SD-99'") and got[(5, 22)].endswith(", ".join(last))
    assert got[(5, 29)] == "SD-2 named twice"


def test_a_scenario_without_expect_is_rejected():
    with pytest.raises(ScenarioError, match="expect: required key is missing"):
        loads("name: x\nunit: showdown\nsteps: [{load: 1}]\n")


def test_steps_the_unit_does_not_have_are_rejected():
    with pytest.raises(ScenarioError, match="the showdown unit has no 'door' step"):
        loads("name: x\nunit: showdown\nsteps: [{door: open}]\nexpect: {count: {SD_GREEN: 0}}\n")


def test_sweep_values_that_put_a_time_before_its_anchor_are_rejected():
    text = GOOD.replace("green + 180000", "green + 100 + d") + "sweep:\n  d: {from: -200, to: 0, step: 100}\n"
    with pytest.raises(ScenarioError, match=r"before its anchor 'green' \(with d=-200\)"):
        loads(text)


def test_malformed_yaml_names_the_position():
    with pytest.raises(ScenarioError) as exc:
        loads("name: [unclosed\nunit: showdown\n", "bad.yaml")
    (p,) = exc.value.problems
    assert p.file == "bad.yaml" and p.line >= 2 and "malformed YAML" in p.message


def test_the_library_is_valid_and_big_enough():
    scenarios = load_paths([str(LIBRARY)])
    showdown = [s for s in scenarios if s.unit == "showdown"]
    assert len(showdown) >= 20
    tags = {t for s in showdown for t in s.tags}
    assert {"false-start", "tie", "line-tiebreak", "even-split", "no-press", "first-press", "sweep"} <= tags


# ---- running and judging ----

class _SaltedRandom(random.Random):
    """Another allowed generator: Python's, with the seed scrambled, so its draws differ again."""

    def __init__(self, seed):
        super().__init__(seed ^ 0x5A5A5A5A)

    def seed(self, a=None, version=2):
        super().seed(None if a is None else a ^ 0x5A5A5A5A, version)


class _OtherStreamPcg(Pcg32):
    """PCG32 on a stream of its own: a unit that took PCG from elsewhere and seeded it its own way."""

    def seed(self, seed, stream=12345):
        super().seed(seed, 12345)


def _run_library(variant: str) -> list:
    """Every library scenario on an emulated unit of its kind with the variant's options."""
    scenarios = load_paths([str(LIBRARY)])
    devices, out = {}, []
    try:
        for sc in scenarios:
            options = "&".join(o for o in variant.lstrip("?").split("&")
                               if o and (sc.unit == "showdown" or not o.startswith("landing_sensor")))
            url = f"emu://{sc.unit}" + (f"?{options}" if options else "")
            d = devices.get(sc.unit) or devices.setdefault(sc.unit, Driver.open(url))
            out.append((sc, Runner(d).run(sc)))
    finally:
        for d in devices.values():
            d.close()
    return out


@pytest.mark.parametrize("variant", ["", "?landing_sensor=0"])
def test_the_whole_library_passes_on_the_virtual_clock(variant):
    """Every scenario passes on each variant of unit, or is skipped as written for another variant."""
    results = _run_library(variant)
    ran = 0
    for sc, res in results:
        if res.status == "skip" and not res.applicable:
            continue
        ran += 1
        assert res.status == "pass", (sc.name, [r.failures or r.error for r in res.races if r.status != "pass"])
    # those run only through a rig, and those for a Flash base of another form (FL-20..FL-22: tests/test_flash_forms.py)
    other_forms = sum(any(n in cat.UNITS["flash"].variants for n in sc.needs)
                      for sc, _ in results if sc.unit == "flash")
    assert ran >= len(results) - 10 - sum(bool(sc.needs_rig) for sc, _ in results) - other_forms


@pytest.mark.parametrize("generator", ["python", "salted", "other_stream"])
def test_a_unit_with_another_generator_passes_every_scenario_not_written_for_the_reference_one(
        monkeypatch, generator):
    """SPEC 6 lets a unit bring its own generator: then the scenarios that need reference_rng are
    skipped, saying so and counting as unchecked, and every other one passes; a scenario that
    leans on the reference generator's draws without declaring it fails here."""
    monkeypatch.setitem(GENERATORS, "salted", _SaltedRandom)
    monkeypatch.setitem(GENERATORS, "other_stream", _OtherStreamPcg)
    results = _run_library(f"?rng={generator}")
    seeded = [(sc, res) for sc, res in results if "reference_rng" in sc.needs]
    assert seeded and all(res.status == "skip" and res.applicable and "reference_rng" in res.error
                          for _, res in seeded)
    for sc, res in results:
        if "reference_rng" not in sc.needs and res.applicable:
            assert res.status == "pass", (sc.name, [r.failures or r.error for r in res.races if r.status != "pass"])


def test_a_wrong_expectation_fails_with_a_readable_diff():
    res = run_one(GOOD.replace("loser: b", "loser: a").replace("180000}", "180001}"))
    assert res.status == "fail"
    (race,) = res.races
    assert "verdict[0].loser: expected a, got b" in race.failures
    assert "verdict[0].reaction_a_us: expected 180001, got 180000" in race.failures
    assert any(e["event"] == "SD_VERDICT" for e in race.events)


def test_latency_is_split_into_inherent_wait_and_processing():
    res = run_one(GOOD)
    lat = res.races[0].latency
    assert lat["inherent_us"] == 1000          # the tie window
    assert lat["processing_us"] == 0           # the emulator adjudicates at the earliest instant
    assert lat["device_us"] == 1000
    assert lat["host_us"] == 1000              # virtual link: no transit time


def test_a_step_refusal_expectation_is_judged():
    text = GOOD.replace("  - load: 2\n", "  - load: 2\n  - load: 11\n    at: start + 10\n    error: bad_value\n")
    assert run_one(text).status == "pass"
    wrong = GOOD.replace("  - load: 2\n", "  - load: 2\n  - load: 1\n    at: start + 10\n    error: bad_value\n")
    res = run_one(wrong)
    assert res.status == "fail"
    assert any("expected refused, the unit says acted" in f for f in res.races[0].failures)


class VerdictEater:
    """A link that loses every SD_VERDICT frame, resends included: an unrecoverable loss."""

    def __init__(self, link):
        self.inner, self.virtual, self.url = link, link.virtual, link.url
        from unohil.protocol import StreamDecoder
        self.dec = StreamDecoder()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read(self, timeout_us):
        data, t = self.inner.read(timeout_us)
        from unohil import protocol
        out = b""
        for f in self.dec.feed(data):
            if not isinstance(f, protocol.FrameError) and f.msg.NAME != "SD_VERDICT":
                out += b"\x00" + protocol.codec.cobs_encode(f.raw) + b"\x00"
        return out, t


def test_an_unrecoverable_lost_verdict_is_a_link_error_never_a_pass_or_fail():
    from unohil.harness.links import open_link
    (sc,) = loads(GOOD, "t.yaml")
    d = Driver(VerdictEater(open_link("emu://showdown")), command_timeout_us=200_000)
    d.hello()
    sc.timeout_us = 5_000_000
    res = Runner(d).run(sc)
    assert res.status == "link-error"
    assert res.health.gaps_detected >= 1 and res.health.events_lost >= 1


def test_a_reboot_mid_race_is_reported_as_reset_and_the_next_race_runs():
    text = GOOD + "repeat: 2\n"
    (sc,) = loads(text, "t.yaml")
    with Driver.open("emu://showdown") as d:
        dev = d.link.device
        original = dev._command
        calls = {"n": 0}

        def command(frame, t):              # every command the unit handles, as bytes or handed over
            calls["n"] += 1
            original(frame, t)
            if calls["n"] == 5:             # mid-way through the first race
                dev._boot(2)
        dev._command = command
        res = Runner(d).run(sc)
    assert [r.status for r in res.races] == ["reset", "pass"]
    assert "rebooted" in res.races[0].error
    assert res.health.resets == 1


# ---- the CLI ----

def test_cli_exit_codes_json_and_junit(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("loser: b", "loser: a").replace("clean win", "wrong"))
    out_json, out_xml = tmp_path / "r.json", tmp_path / "r.xml"
    assert main(["run", str(good), "-q", "--json", str(out_json), "--junit", str(out_xml)]) == 0
    assert main(["run", str(good), str(bad), "-q", "--json", str(out_json), "--junit", str(out_xml)]) == 1
    doc = json.loads(out_json.read_text())
    assert doc["summary"] == {"scenarios": 2, "passed": 1, "failed": 1, "link_error": 0, "reset": 0, "skipped": 0,
                              "error": 0, "interrupted": 0, "flaky": 0, "races": 2}
    by_name = {s["name"]: s for s in doc["scenarios"]}
    assert by_name["wrong"]["status"] == "fail"
    assert by_name["clean win"]["latency"]["processing_us"]["p99"] == 0
    assert "crc_errors" in doc["health"]
    suite = ET.parse(out_xml).getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["validate", str(good)]) == 0
    assert main(["run", str(good), "-q", "-k", "nothing_matches"]) == 2


def test_cli_unwritable_output_is_refused_before_running_and_nothing_is_written(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert main(["run", str(good), "-q", "--json", str(tmp_path / "no" / "such" / "dir" / "r.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["run", str(good), "-q", "--json", str(tmp_path)]) == 2
    assert not [p for p in os.listdir(tmp_path) if p != "good.yaml"]


def test_cli_bad_device_url_is_exit_2(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert main(["run", str(good), "--device", "emu://toaster"]) == 2
    assert "unknown emulated unit 'toaster'" in capsys.readouterr().err


def test_cli_k_selects_by_name_and_tag(tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", str(LIBRARY / "showdown"), "-q", "-k", "false-start and not both", "--json", str(out)]) == 0
    names = [s["name"] for s in json.loads(out.read_text())["scenarios"]]
    assert names and all("both" not in n for n in names)
    assert "false start by A" in names


def test_host_timed_mode_skips_exact_scenarios_and_reports_timing_error(tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", str(LIBRARY / "showdown"), "-q", "--host-timed", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    statuses = {s["name"]: s["status"] for s in doc["scenarios"]}
    assert statuses["press 1 us before green is a false start"] == "skip"
    assert statuses["clean win for A"] == "pass"
    timed = [s for s in doc["scenarios"] if s["mode"] == "host-timed" and s["status"] == "pass"]
    assert timed and all(s["latency"]["timing_error_us"]["max"] == 0 for s in timed)


def test_trace_files_reconstruct_the_run(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert main(["run", str(good), "-q", "--trace", str(tmp_path / "traces")]) == 0
    (trace,) = (tmp_path / "traces").glob("*.jsonl")
    recs = [json.loads(x) for x in trace.read_text().splitlines()]
    verdicts = [r for r in recs if r.get("type") == "SD_VERDICT"]
    assert verdicts and verdicts[0]["names"]["loser"] == "b" and verdicts[0]["dev_us"] is not None
    assert {r["dir"] for r in recs} >= {"tx", "rx"}
    assert all("host_us" in r for r in recs)


# ---- expectations judged as written ----

def test_absent_with_a_field_filter_judges_that_field():
    """A clean race beeps (SOUND beep) but never sounds a false start: the filter must count."""
    clean = GOOD.replace("  verdict: {loser: b, reason: first_press, reaction_a_us: 180000}",
                         "  absent: [{SOUND: {sound: false_start}}]")
    res = run_one(clean)
    assert res.status == "pass", res.races[0].failures
    assert any(e["event"] == "SOUND" for e in res.races[0].events)
    early = clean.replace("at: green + 180000", "at: countdown_start + 1000")
    res = run_one(early)
    assert res.status == "fail"
    assert any("SOUND{sound=false_start} must not happen" in f for f in res.races[0].failures)
    any_sound = clean.replace("{SOUND: {sound: false_start}}", "SOUND")
    assert run_one(any_sound).status == "fail"


@pytest.mark.parametrize("unit, config, key, rule", [
    ("showdown", "{countdown_min_us: 5000000, countdown_max_us: 2000000}", "config.countdown_min_us",
     "countdown_min_us <= countdown_max_us"),
    ("showdown", "{tie_window_us: 30000, flight_us: 20000}", "config.tie_window_us", "tie_window_us < flight_us"),
    ("showdown", "{countdown_min_us: 9000000}", "config.countdown_min_us", "countdown_min_us <= countdown_max_us"),
    ("launcher", "{burst_min: 9, burst_mode: 4}", "config.burst_min", "burst_min <= burst_mode <= burst_max"),
])
def test_a_configuration_the_unit_would_refuse_is_a_validation_error(unit, config, key, rule):
    text = f"name: x\nunit: {unit}\nconfig: {config}\nsteps:\n  - wait: start + 1\nexpect:\n  count: {{}}\n"
    text = text.replace("count: {}", "count: {SD_VERDICT: 0}" if unit == "showdown" else "count: {LA_RESULT: 0}")
    with pytest.raises(ScenarioError) as exc:
        loads(text, "cfg.yaml")
    (p,) = exc.value.problems
    assert (p.line, p.key) == (3, key) and rule in p.message, str(p)


def test_a_reaction_the_units_verdict_does_not_have_is_a_validation_error():
    text = GOOD.replace("  verdict: {loser: b, reason: first_press, reaction_a_us: 180000}",
                        "  reaction: {a: 180000, player_0: 5}")
    with pytest.raises(ScenarioError) as exc:
        loads(text, "r.yaml")
    (p,) = exc.value.problems
    assert p.key == "expect.reaction.player_0" and "it has: a, b" in p.message


MANY = """
name: two hundred reported releases in one step
unit: showdown
steps:
  - release: paddle_a
    at: start + 1000
    times: 200
    every: 1000
expect:
  count: {INPUT_SEEN: 200, SD_VERDICT: 0}
"""


def test_two_hundred_stimuli_in_one_step_never_overflow_the_units_inject_queue():
    res = run_one(MANY)
    assert res.status == "pass", [r.failures or r.error for r in res.races]
    seen = [e for e in res.races[0].events if e["event"] == "INPUT_SEEN"]
    assert [e["t_us"] for e in seen] == [1000 + 1000 * k for k in range(200)]      # each at its time


def test_more_stimuli_at_one_instant_than_the_queue_holds_is_the_scenarios_mistake():
    res = run_one(MANY.replace("every: 1000", "every: 0"))
    assert res.status == "error" and "inject_queue" in res.races[0].error and "t.yaml:" in res.races[0].error


def test_a_missed_timing_budget_is_reported_apart_and_never_fails_the_verdict(tmp_path, capsys):
    """processing_us is how fast the unit was, not what it decided: a budget it misses (here one no
    unit can meet, as a stalled host would make it) shows in the timing report, not as a fail."""
    text = GOOD.replace("reaction_a_us: 180000}", "reaction_a_us: 180000}\n  latency: {processing_us: {max: -1}}")
    path = tmp_path / "budget.yaml"
    path.write_text(text)
    out = tmp_path / "r.json"
    assert main(["run", str(path), "-q", "--json", str(out)]) == 0
    (sc,) = json.loads(out.read_text())["scenarios"]
    assert sc["status"] == "pass"
    assert sc["budgets"]["processing_us"] == {"limit": "[, -1]", "met": 0, "races": 1, "worst": 0}
    assert "timing budget processing_us [, -1] us missed in 1 of 1" in capsys.readouterr().out
    wrong = text.replace("loser: b", "loser: a")
    assert run_one(wrong).status == "fail"          # the functional verdict is still judged


# ---- how long the runner waits: the unit's own bound after the latest step, plus WAIT_MARGIN_US ----

NO_TIMER = GOOD.replace("  - press: timer\n    at: start + 1000\n", "").replace("  - load: 2\n",
                                                                                  "  - load: 2\n    at: start + 1000\n")


def run_timed(text: str, url: str = "emu://showdown?clock=virtual"):
    """The result, and the device time from the race's start to the end of the run (exact: virtual clock)."""
    (sc,) = loads(text, "t.yaml")
    with Driver.open(url) as d:
        res = Runner(d).run(sc)
        return res, d.device_now() - res.races[0].start_dev_us


def test_an_anchor_that_never_comes_fails_at_the_units_bound_naming_the_step_and_the_units_state():
    """No 'press: timer': there is no green. The unit answers, so it is a fail, not a link error, and
    it comes the longest countdown (plus the margin) after the step before, to the microsecond."""
    res, elapsed = run_timed(NO_TIMER.replace("countdown_max_us: 2000000", "countdown_max_us: 3000000"))
    assert res.status == "fail"
    (failure,) = res.races[0].failures
    assert failure.startswith("no SD_GREEN (anchor of step at line 9 in 'clean win') by "
                              "3.201 s: 3 s (countdown_max_us")
    assert "after the step time 1 ms" in failure and "the unit is in state loaded" in failure
    assert elapsed == 1000 + 3_000_000 + WAIT_MARGIN_US


def test_the_scenarios_timeout_still_wins():
    res, elapsed = run_timed(NO_TIMER.replace("steps:", "timeout_us: 500000\nsteps:"))
    assert res.status == "fail" and "within 500 ms (the scenario's timeout_us)" in res.races[0].failures[0]
    assert elapsed < 1000 + 500_000 + 10_000


REFUSED_PRESS = """
name: a press with the door open has no verdict
unit: launcher
physical: {door: open}
config: {motor_us: 100000, burst_max: 5, burst_mode: 3, card_interval_us: 20000}
steps:
  - press: button
    at: start + 1000
    expect: refused
expect:
  verdict: {fired: 0}
"""


def test_a_launcher_verdict_is_waited_for_as_long_as_the_longest_burst():
    res, elapsed = run_timed(REFUSED_PRESS, "emu://launcher?clock=virtual")
    assert res.status == "fail"
    (failure,) = res.races[0].failures
    bound = 100_000 + 4 * 20_000
    assert failure.startswith(f"no LA_RESULT (1 of 1 LA_RESULT event(s) of scenario "
                              f"'a press with the door open has no verdict') by 381 ms: "
                              f"180 ms (motor_us + (burst_max - 1) * card_interval_us")
    assert "the unit is in state door_open" in failure
    assert elapsed == 1000 + bound + WAIT_MARGIN_US


class LateGreen(showdown_model.Showdown):
    """A right unit whose green timer runs 5 us after its due time (a firmware's tick)."""

    def _countdown(self, t):
        super()._countdown(t)
        self.green_t += 5


def test_a_timer_event_a_few_microseconds_late_passes_within_the_margin(monkeypatch):
    """GOOD's countdown is exactly countdown_max_us: its green, 5 us late, is past the bound itself."""
    monkeypatch.setattr(showdown_model, "MODEL", LateGreen)
    assert run_one(GOOD).status == "pass"
    monkeypatch.setattr(anchors_module, "WAIT_MARGIN_US", 0)     # without the margin the same unit would fail
    res = run_one(GOOD)
    assert res.status == "fail" and "no SD_GREEN" in res.races[0].failures[0]


def test_host_timed_reactions_are_judged_within_the_measured_timing_error():
    """On a link with transit time, a host-timed press lands late by a measured amount: the
    reaction is judged within that error, and only within it."""
    url = "emu://showdown?clock=virtual&faults=delay=300us..300us"
    res = run_one(GOOD, url, host_timed=True)
    race = res.races[0]
    assert race.timing_errors_us and max(map(abs, race.timing_errors_us)) > 0
    assert res.status == "pass", race.failures
    off = GOOD.replace("reaction_a_us: 180000", f"reaction_a_us: {180000 + 10 * max(map(abs, race.timing_errors_us))}")
    assert run_one(off, url, host_timed=True).status == "fail"


class _StallsOnce:
    """A real-clock link on a host that stalls once: after the race's last stimulus went out, the
    runner is off the CPU for 600 ms, as a preempted runner or a swapping CI machine would be."""

    STALL_S = 0.6

    def __init__(self, inner, after_injects: int):
        self.inner, self.after_injects, self.injects, self.stalled = inner, after_injects, 0, False
        self.url, self.virtual = inner.url, inner.virtual
        self._sent = StreamDecoder()

    def write(self, data):
        self.injects += sum(1 for f in self._sent.feed(bytes(data))
                            if not isinstance(f, Exception) and f.msg.NAME == "INJECT")
        self.inner.write(data)

    def read(self, timeout_us):
        if not self.stalled and self.injects >= self.after_injects:
            self.stalled = True
            time.sleep(self.STALL_S)
        return self.inner.read(timeout_us)

    def __getattr__(self, name):
        return getattr(self.inner, name)


STALLED = GOOD.replace("countdown_min_us: 2000000, countdown_max_us: 2000000", "countdown_min_us: 500000, "
                       "countdown_max_us: 500000").replace(
    "reaction_a_us: 180000}", "reaction_a_us: 180000}\n  latency: {host_us: {max: 100000}}")


def test_a_host_stall_on_a_real_clock_changes_the_timing_report_not_the_verdict():
    """The stimuli are scheduled in device time, so the unit decides as it would have; only the
    verdict's arrival at the host is late, and that is a timing budget missed, not a fail."""
    (sc,) = loads(STALLED, "t.yaml")
    with Driver.open("emu://showdown?clock=real") as plain:
        counting = plain.link = _StallsOnce(plain.link, after_injects=1 << 30)
        calm = Runner(plain).run(sc)
    with Driver.open("emu://showdown?clock=real") as d:
        stalled_link = _StallsOnce(d.link, after_injects=counting.injects)
        d.link = stalled_link
        res = Runner(d).run(sc)
    assert stalled_link.stalled
    assert calm.status == "pass" and res.status == "pass", [r.failures or r.error for r in res.races]
    (race,) = res.races
    assert race.verdicts[0]["reaction_a_us"] == 180000
    # the verdict came at most ~200 ms after the last stimulus was sent: it waited out the stall
    assert race.latency["host_us"] > 100_000
    assert res.budget_summary()["host_us"]["met"] == 0


class _StallsBeforeAStimulus(_StallsOnce):
    """The host stalls just before it sends the race's first INJECT, past the stimulus's time."""

    def write(self, data):
        frames = [f for f in self._sent.feed(bytes(data)) if not isinstance(f, Exception)]
        if not self.stalled and any(f.msg.NAME == "INJECT" for f in frames):
            self.stalled = True
            time.sleep(self.STALL_S)
        self.inner.write(data)

    def read(self, timeout_us):
        return self.inner.read(timeout_us)


def test_a_host_stall_before_a_stimulus_reruns_the_race_instead_of_blaming_anyone():
    """The unit refuses the late stimulus too_late, as it must; the race judged nothing, so it runs
    again and passes, and the result says why it was rerun."""
    (sc,) = loads(STALLED, "t.yaml")
    with Driver.open("emu://showdown?clock=real") as d:
        d.link = stalled = _StallsBeforeAStimulus(d.link, after_injects=0)
        res = Runner(d).run(sc)
    assert stalled.stalled
    assert res.status == "pass", [r.failures or r.error for r in res.races]
    (race,) = res.races
    assert len(race.reruns) == 1 and "too_late" in race.reruns[0] and "reruns" in race.as_dict()


def test_a_host_always_too_slow_for_the_schedule_is_a_link_error_after_the_reruns(monkeypatch):
    class AlwaysStalls(_StallsBeforeAStimulus):
        def write(self, data):
            self.stalled = False
            super().write(data)
    (sc,) = loads(STALLED, "t.yaml")
    monkeypatch.setattr(_StallsOnce, "STALL_S", 0.1)
    with Driver.open("emu://showdown?clock=real") as d:
        d.link = AlwaysStalls(d.link, after_injects=0)
        res = Runner(d).run(sc)
    (race,) = res.races
    assert race.status == "link-error" and "too slow for this schedule" in race.error
    assert len(race.reruns) == runner_module.LATE_RERUNS
