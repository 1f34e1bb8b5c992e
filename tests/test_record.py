"""unohil record: a trace of every library scenario becomes scenarios that pass on a fresh emulator; a
live session of a person's presses is recorded, validates and replays to the same verdicts; and a
replay on a unit whose rules differ fails where it differs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from unohil.emulator.device import SOURCE
from unohil.harness import Driver
from unohil.harness.cli.app import main
from unohil.harness.record.live import LiveRecording
from unohil.harness.record.scenario import dump, scenario_of
from unohil.harness.record.segments import segments_of
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.library import library_dir, library_paths
from unohil.harness.scenarios.load import load_paths, loads
from unohil.protocol import catalogue as cat
from test_harness_scenarios import GOOD

KINDS = tuple(cat.UNITS)


def run_all(scenarios, url: str) -> dict:
    """scenario name -> its failures (empty: it passed)."""
    out = {}
    with Driver.open(url) as d:
        runner = Runner(d)
        for sc in scenarios:
            res = runner.run(sc)
            out[sc.name] = [] if res.status == "pass" else [f for r in res.races for f in r.failures] + \
                [r.error for r in res.races if r.error] + ([res.error] if res.error else [])
    return out


def traced_library(kind: str, tmp_path: Path) -> Path:
    with Driver.open(f"emu://{kind}?clock=virtual", trace_dir=tmp_path) as d:
        runner = Runner(d)
        for sc in load_paths(library_paths(kind)):
            runner.run(sc)
    (trace,) = tmp_path.glob("*.jsonl")
    return trace


@pytest.mark.parametrize("kind", KINDS)
def test_a_trace_of_every_library_race_becomes_a_scenario_that_passes(kind, tmp_path):
    trace = traced_library(kind, tmp_path)
    out = tmp_path / "recorded.yaml"
    assert main(["record", "--from-trace", str(trace), "-o", str(out)]) == 0
    recorded = load_paths([str(out)])
    races = sum(1 for line in trace.read_text().splitlines() if '"text":"race"' in line)
    assert len(recorded) == races > 10          # one per race the library ran
    failures = {name: f for name, f in run_all(recorded, f"emu://{kind}?clock=virtual").items() if f}
    assert not failures, failures


def test_a_recorded_race_names_its_origin_and_anchors_on_what_it_followed(tmp_path):
    trace = traced_library("showdown", tmp_path)
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    seg = next(s for s in segments_of(records) if s.name == "clean win for A")
    doc, comments = scenario_of(seg, "x")
    assert comments[0].startswith("recorded from 'clean win for A' race 0 (")
    (a,) = [s for s in doc["steps"] if s.get("press") == "paddle_a"]
    assert a["at"].startswith("next green + ")          # the countdown is drawn: A pressed after that green
    assert doc["expect"]["verdicts"][0]["loser"] == "b"
    assert doc["expect"]["count"] == {"SD_VERDICT": 1}


def test_a_live_session_of_physical_presses_is_recorded_and_replays_to_the_same_verdicts():
    """A person loads two cards, starts the countdown, and presses A 212 ms after green, then plays a
    second race in which B starts early; the recorder only listens."""
    with Driver.open("emu://showdown?clock=virtual&seed=9") as d:
        dev = d.link.device
        inputs = cat.UNITS["showdown"].inputs
        press = cat.ENUM_VALUES["action"]["press"]
        rec = LiveRecording(d)
        rec.start()
        t0 = d.device_now() + 100_000
        for name, value in (("load_cards", 2), ("timer", 0)):
            dev.physical_input(t0, inputs[name], press, value)
            t0 += 50_000
        greens = []
        rec.run(8_000_000, lambda f: greens.append(f.dev_us) if f.msg.NAME == "SD_GREEN" else None)
        dev.physical_input(d.device_now() + 1000, inputs["paddle_a"], press, 0)   # late: the race is already over
        t1 = d.device_now() + 100_000
        dev.physical_input(t1, inputs["load_cards"], press, 1)
        dev.physical_input(t1 + 50_000, inputs["timer"], press, 0)
        dev.physical_input(t1 + 600_000, inputs["paddle_b"], press, 0)            # before any green can come
        rec.run(3_000_000)
    assert greens, "the countdown ended in green"
    segments = rec.segments()
    assert len(segments) == 2                   # the second race began at a load that found the tray empty
    text = dump([scenario_of(s, f"live {i}") for i, s in enumerate(segments)])
    recorded = loads(text, "live.yaml")
    first, second = (sc.expectations[0].verdicts[0] for sc in recorded)
    assert set(first) >= {"loser", "reason"} and set(second) >= {"loser", "reason"}
    assert recorded[0].seed == 9                # the recorder restarted the generator from the unit's seed
    results = run_all(recorded, "emu://showdown?clock=virtual")
    assert results == {"live 0": [], "live 1": []}, results


def test_a_replay_on_a_unit_whose_rule_differs_fails_where_it_differs(tmp_path):
    """Recorded on the defaults (A 60 ms ahead of B); replayed where a tie window of 100 ms makes it a tie."""
    scenario = GOOD.replace("verdict: {loser: b, reason: first_press, reaction_a_us: 180000}",
                                                           "count: {SD_VERDICT: 1}") \
        .replace("    at: green + 180000\n", "    at: green + 200000\n  - press: paddle_b\n    at: green + 260000\n")
    with Driver.open("emu://showdown?clock=virtual", trace_dir=tmp_path) as d:
        assert Runner(d).run(loads(scenario, "t.yaml")[0]).status == "pass"
    (trace,) = tmp_path.glob("*.jsonl")
    (seg,) = segments_of([json.loads(line) for line in trace.read_text().splitlines()])
    doc, _ = scenario_of(seg, "replay")
    assert doc["expect"]["verdicts"][0]["reason"] == "first_press"
    doc["config"]["tie_window_us"] = 100_000    # the next firmware's rule
    (changed,) = loads(dump([(doc, [])]), "changed.yaml")
    (failures,) = run_all([changed], "emu://showdown?clock=virtual").values()
    assert any("reason" in f and "first_press" in f for f in failures), failures


def test_a_trace_that_is_not_one_is_refused_naming_the_line(tmp_path, capsys):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"dir": "tx"}\nnot json\n')
    assert main(["record", "--from-trace", str(bad)]) == 2
    assert f"{bad}:2: not a trace line" in capsys.readouterr().err


def test_replay_compares_each_scenario_with_its_recording(tmp_path, capsys):
    """The library's ties, recorded on the reference generator: replayed there, every event is as recorded;
    replayed on a unit with another generator, the landings and verdicts that the line draw decides differ,
    and the diff names the fields."""
    with Driver.open("emu://showdown?clock=virtual", trace_dir=tmp_path) as d:
        runner = Runner(d)
        for sc in load_paths([str(library_dir() / "showdown" / "ties.yaml")]):
            runner.run(sc)
    (trace,) = tmp_path.glob("*.jsonl")
    out = tmp_path / "ties.yaml"
    assert main(["record", "--from-trace", str(trace), "-o", str(out)]) == 0
    assert (tmp_path / "ties.recorded.json").exists()
    capsys.readouterr()
    assert main(["replay", str(out)]) == 0
    same = capsys.readouterr().out
    assert "replay vs recording" in same and " differ, " in same
    assert all(line.endswith(" 0 differ, 0 missing, 0 not recorded") for line in same.splitlines()
               if "replay vs recording" in line)
    assert main(["replay", str(out), "--device", "emu://showdown?clock=virtual&rng=python"]) == 1
    other = capsys.readouterr().out
    assert "SD_LANDING" in other and "!= landed_a: " in other


def test_replay_without_its_recording_says_where_it_looked(tmp_path, capsys):
    f = tmp_path / "x.yaml"
    f.write_text(GOOD)
    assert main(["replay", str(f)]) == 2
    assert f"{tmp_path / 'x.recorded.json'}: no recording beside {f}" in capsys.readouterr().err


@pytest.mark.parametrize("option, says", [
    (["--config", "tie_window=5"], "--config tie_window=5: give NAME=VALUE with a parameter of the catalogue"),
    (["--config", "tie_window_us=0"], "--config tie_window_us=0: tie_window_us is 1..100000"),
    (["--config", "turn_long_us=5000000"], "--config turn_long_us: not a parameter of showdown ("),
    (["--config", "countdown_min_us=5000000"], "--config countdown_min_us=5000000: breaks the rule "
                                               "countdown_min_us <= countdown_max_us")])
def test_replay_with_a_changed_rule_names_a_bad_one(tmp_path, capsys, option, says):
    f = tmp_path / "x.yaml"
    f.write_text(GOOD)
    assert main(["replay", str(f), *option]) == 2
    assert says in capsys.readouterr().err


def test_a_whole_recording_keeps_what_a_unit_carries_from_one_showdown_to_the_next(tmp_path):
    """Two showdowns with no reset between (a game's): cut at the second one's empty tray, each piece starts
    from a new game and a unit that keeps a card on its count after a verdict passes both; recorded whole,
    the second load's tray count is expected, and that unit fails it."""
    from unohil.emulator.showdown import Showdown
    from test_games import _mutant_link

    class TrayKeptAfterVerdict(Showdown):
        def _verdict(self, *a, **kw):
            super()._verdict(*a, **kw)
            self.tray = 1

    with Driver.open("emu://showdown?clock=virtual", trace_dir=tmp_path) as d:
        t = d.device_now() + 10_000
        for cards, paddle in ((2, "paddle_a"), (1, "paddle_b")):
            d.inject(t, "load_cards", "press", cards)
            d.inject(t + 1000, "timer")
            d.inject(t + 7_000_000, paddle)         # after any countdown: the first press decides
            t += 9_000_000
            d.wait_until(t - 1000)
    (trace,) = tmp_path.glob("*.jsonl")
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(segments_of(records)) == 2
    (whole,) = segments_of(records, whole=True)
    doc, _ = scenario_of(whole, "two showdowns")
    assert doc["expect"]["count"] == {"SD_VERDICT": 2}
    assert doc["expect"]["events"].count({"SD_CARDS": {"cards": 1}}) == 1
    (scenario,) = loads(dump([(doc, [])]), "whole.yaml")
    assert run_all([scenario], "emu://showdown?clock=virtual") == {"two showdowns": []}
    d = Driver(_mutant_link("showdown", "emu://showdown", TrayKeptAfterVerdict))
    try:
        d.handshake(expect_kind="showdown")
        result = Runner(d).run(scenario)
    finally:
        d.close()
    failures = [f for r in result.races for f in r.failures]
    assert result.status == "fail" and any("SD_CARDS{cards=1} not seen" in f for f in failures), failures
