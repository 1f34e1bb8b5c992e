"""The stimulus-and-capture rig (SPEC 13): its catalogue section, the emulated rig and its path, fairness."""
from __future__ import annotations

from pathlib import Path

import pytest

from unohil.protocol import ENUMS, catalogue as cat, msg
from unohil.protocol.devtime import wrap
from unohil.protocol.schema import CatalogueError, load_catalogue

from unohil.emulator.path import PathSpecError
from unohil.emulator.rig import RIG_BOOT_US, open_pair
from unohil.harness.errors import DeviceURLError, Nak
from unohil.harness.measure.fairness import measure
from unohil.harness.rig.links import open_drivers
from unohil.harness.rig.session import RigSession
from unohil.harness.session.driver import Driver

YAML = (Path(cat.__file__).parent / "messages.yaml").read_text(encoding="utf-8")
SIGNAL = cat.ENUM_VALUES["rig_signal"]
SOURCE = ENUMS["input_source"]


# ---- the catalogue ----

def test_the_rig_is_a_kind_but_not_a_game_unit():
    assert cat.RIG.kind in cat.ENUM_VALUES["unit_kind"] and cat.RIG.kind not in cat.UNITS
    assert "rig_lines" in cat.RIG.capabilities
    assert not any("rig_lines" in u.capabilities for u in cat.UNITS.values())


@pytest.mark.parametrize("kind", list(cat.UNITS))
def test_each_units_reference_wiring_names_its_own_inputs_and_outputs(kind):
    wires = cat.RIG.wiring[kind]
    assert len({w.line for w in wires}) == len(wires) and all(0 <= w.line < cat.RIG.lines for w in wires)
    drives = [w for w in wires if w.drives]
    assert drives and all(cat.UNITS[kind].inputs[w.name] == w.id for w in drives)
    assert any(not w.drives for w in wires)


@pytest.mark.parametrize("old, new, problem", [
    ("{line: 1, signal: input, id: paddle_b}", "{line: 0, signal: input, id: paddle_b}", "line 0 is wired twice"),
    ("{line: 1, signal: input, id: paddle_b}", "{line: 1, signal: input, id: paddle_c}", "unknown showdown input"),
    ("{line: 19, signal: launch}", "{line: 19, signal: launch, id: green}", "a launch line has no id"),
    ("{line: 19, signal: launch}", "{line: 40, signal: launch}", "out of range"),
    ("  kind: rig\n", "  kind: robot\n", "unknown unit kind 'robot'"),
])
def test_a_bad_rig_section_fails_at_its_line(old, new, problem):
    assert old in YAML
    with pytest.raises(CatalogueError, match=problem) as exc:
        load_catalogue(YAML.replace(old, new, 1))
    assert str(exc.value).startswith("messages.yaml:")


# ---- the emulated rig, spoken to directly ----

@pytest.fixture
def bench():
    unit, rig = open_pair("showdown", {"seed": 3}, {})
    du, dr = Driver(unit), Driver(rig)
    du.hello()
    dr.hello(expect_kind="rig")
    du.sync_clock()
    dr.sync_clock()
    s = RigSession(du, dr)
    yield s
    du.close()
    dr.close()


def _nak(d: Driver, m) -> str:
    with pytest.raises(Nak) as exc:
        d.command(m)
    return exc.value.error


def test_the_rig_answers_its_commands_by_the_rules_of_inject(bench):
    rig = bench.rig
    assert rig.identity.kind == cat.ENUM_VALUES["unit_kind"]["rig"]
    assert rig.has_cap("rig_lines") and not rig.has_cap("host_input")
    assert rig.status().state == ENUMS["rig_state"].unwired
    now = rig.device_now()
    assert _nak(rig, msg.RIG_EDGE(at_us=wrap(now + 10_000), line=0, action=1)) == "bad_value"     # not wired
    assert _nak(rig, msg.RIG_WIRE(line=cat.RIG.lines, signal=0, id=0, target=0, polarity=0)) == "bad_value"
    bench.wire()
    assert rig.status().state == ENUMS["rig_state"].wired
    assert _nak(rig, msg.RIG_EDGE(at_us=wrap(now + 10_000), line=16, action=1)) == "bad_value"    # watched
    assert _nak(rig, msg.RIG_EDGE(at_us=wrap(now), line=0, action=1)) == "too_late"
    sid = bench.edge(now + 10_000, "paddle_a")
    assert sid == 1 and rig.status().pending_injects == 1
    assert _nak(rig, msg.RIG_WIRE(line=0, signal=0, id=0, target=0, polarity=0)) == "wrong_state"
    assert rig.cancel_injections() == 1
    assert _nak(rig, msg.INPUT(input=0, action=1, value=0)) == "unsupported"
    assert _nak(rig, msg.INJECT(at_us=wrap(now + 10_000), input=0, action=1, value=0)) == "bad_value"
    assert _nak(rig, msg.CONFIG_SET(param=1, value=1)) == "unsupported"
    assert _nak(rig, msg.CONFIG_GET(param=1)) == "unknown_param"
    rig.reset("new_game")
    assert rig.status().state == ENUMS["rig_state"].wired          # RESET new_game keeps the wiring
    rig.reboot()
    assert rig.status().state == ENUMS["rig_state"].unwired        # a reboot does not


def test_a_rig_served_on_its_own_reports_its_driven_edges():
    from unohil.emulator.inprocess import VirtualLink
    d = Driver(VirtualLink("rig"))
    d.hello(expect_kind="rig")
    assert _nak(d, msg.INPUT(input=0, action=1, value=0)) == "unsupported"
    d.command(msg.RIG_WIRE(line=5, signal=SIGNAL["input"], id=0, target=0, polarity=0))
    at = d.device_now() + 1_000
    d.command(msg.RIG_EDGE(at_us=wrap(at), line=5, action=1, value=0))
    f = d.wait_for(lambda f: f.msg.NAME == "RIG_CAPTURE", 100_000, "RIG_CAPTURE")
    assert (f.dev_us, f.msg.line, f.msg.origin, f.msg.stimulus) == (at, 5, 0, 1)


def test_a_game_unit_refuses_rig_commands_and_on_a_bench_takes_no_host_input(bench):
    unit = bench.unit
    assert _nak(unit, msg.RIG_WIRE(line=0, signal=0, id=0, target=0, polarity=0)) == "unsupported"
    assert _nak(unit, msg.INPUT(input=0, action=1, value=0)) == "unsupported"
    assert _nak(unit, msg.INJECT(at_us=wrap(unit.device_now() + 10_000), input=0, action=1, value=0)) == "unsupported"


def test_a_clean_path_delivers_each_edge_at_its_rig_time_as_a_physical_input(bench):
    bench.wire()
    t = bench.rig_now() + 20_000
    bench.edge(t, "load_cards", "press", 3)
    bench.press(t + 1_000, "paddle_a", 5_000)
    bench.press(t + 2_000, "paddle_a", 5_000)       # a button already let go of: each press is an edge
    seen = bench.unit.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN", 1_000_000, "INPUT_SEEN")
    driven = bench.wait_capture(bench.line("input", "load_cards"), origin="driven")
    assert driven.dev_us == t and driven.msg.stimulus == 1
    assert seen.msg.source == SOURCE.physical and seen.msg.value == 3          # the feeder's three cards
    # one clock under both: a rig time is the unit time RIG_BOOT_US later, here
    assert seen.dev_us == t - RIG_BOOT_US == round(bench.rig_to_unit(t))
    bench.settle()
    assert bench.unit.status().cards == 3
    edges = [f for f in bench.unit.drain() if f.msg.NAME == "INPUT_SEEN"]
    # the second press came while the paddle was still held: the line did not move, the unit saw nothing
    assert [(f.dev_us - seen.dev_us, f.msg.action) for f in edges] == [(1_000, 1), (6_000, 0)]


def _green_capture(path: dict):
    unit, rig = open_drivers("emu://showdown?seed=3", "emurig://?" + "&".join(f"{k}={v}" for k, v in path.items()))
    s = RigSession(unit, rig)
    s.wire()
    s.unit.apply_config({"countdown_min_us": 500_000, "countdown_max_us": 500_000})
    t = s.rig_now() + 20_000
    s.edge(t, "load_cards", "press", 1)
    s.press(t + 20_000, "timer")
    green = s.unit.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 2_000_000, "SD_GREEN")
    lamp = s.wait_capture(s.line("light", "green"))
    return green.dev_us + RIG_BOOT_US, lamp.dev_us, s


def test_output_delays_are_per_line_and_debounce_swallows_short_pulses():
    unit_green, lamp, _ = _green_capture({})
    assert lamp == unit_green
    unit_green, lamp, _ = _green_capture({"delay_green": "5ms", "delay_red": "1ms"})
    assert lamp - unit_green == 5_000
    _, _, s = _green_capture({"debounce_paddle_a": "3ms"})
    t = s.rig_now() + 20_000
    s.press(t, "paddle_a", 2_000)              # shorter than the debounce: the unit never sees it
    s.press(t + 10_000, "paddle_b", 2_000)
    seen = s.unit.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN", 1_000_000, "INPUT_SEEN")
    assert seen.msg.input == cat.UNITS["showdown"].inputs["paddle_b"]


@pytest.mark.parametrize("device, rig, problem", [
    ("emu://showdown?clock=real&host_offset_us=5", "emurig://", "not available with an emulated rig on the real"),
    ("emu://showdown?clock=sundial", "emurig://", "clock must be"),
    ("tcp://localhost:1", "emurig://", "emulated unit"),
    ("emu://showdown", "emurig://?skew_paddle_c=1ms", "no input 'paddle_c'"),
    ("emu://showdown", "emurig://?poll=1ms&irq=5us", "not both"),
    ("emu://showdown", "emurig://?delay_red=soon", "not a duration"),
])
def test_bad_bench_urls_are_one_clear_error(device, rig, problem):
    with pytest.raises(DeviceURLError, match=problem):
        open_drivers(device, rig)


def test_path_options_are_checked_against_the_unit():
    with pytest.raises(PathSpecError, match="needs a poll loop"):
        open_pair("flash", {}, {"scan": "player_1"})


# ---- fairness (SPEC 13.6): the cases ----

def _fairness(kind: str, path: str, **kw) -> dict:
    unit, rig = open_drivers(f"emu://{kind}?clock=virtual&seed=5", f"emurig://?{path}")
    s = RigSession(unit, rig)
    s.wire()
    return measure(s, **kw)


def test_a_300us_skew_on_side_b_is_found_within_20us():
    r = _fairness("showdown", "skew_paddle_b=300us")
    assert abs(r["skew_toward_a_us"] - 300) <= 20
    lo, hi = r["interval_us"]
    assert lo <= 300 <= hi and hi - lo <= 40
    assert abs(r["tie_window_us"] - 1000) <= r["tie_step_us"]      # the unit's own tie window, from outside


def test_a_clean_path_is_fair():
    r = _fairness("showdown", "")
    lo, hi = r["interval_us"]
    assert lo <= 0 <= hi and abs(r["skew_toward_a_us"]) <= 20


@pytest.mark.parametrize("seed", [2, 3])
def test_a_17us_skew_under_50us_of_jitter_is_found_with_the_count_the_tool_chose(seed):
    """The interval is the races' (a bootstrap over races at offsets drawn at random), not a sweep step's:
    each edge late by a further 0..50 us blurs the flip over ~100 us, and the tool races on until its
    interval is +-5 us; a clean path under the same jitter is found level."""
    unit, rig = open_drivers(f"emu://showdown?clock=virtual&seed={seed}", f"emurig://?skew_paddle_b=17us&jitter=50us&seed={seed}")
    s = RigSession(unit, rig)
    s.wire()
    r = measure(s, tie=False, seed=seed)
    lo, hi = r["interval_us"]
    assert 0 < lo <= 17 <= hi and (hi - lo) / 2 <= 5
    assert r["fine"]["races"] >= 300 and r["races"] > r["fine"]["races_all_brackets"]
    unit, rig = open_drivers(f"emu://showdown?clock=virtual&seed={seed}", f"emurig://?jitter=50us&seed={seed}")
    s = RigSession(unit, rig)
    s.wire()
    level = measure(s, tie=False, seed=seed)
    assert level["interval_us"][0] <= 0 <= level["interval_us"][1]


def test_a_1ms_poll_loop_scanning_a_first_is_a_skew_toward_a_of_half_its_period():
    # A is read 1 us before B in every cycle: whenever both presses fall in one cycle, A is judged first,
    # so B must be earlier by more than the press's place in the cycle: half a period on average
    r = _fairness("showdown", "poll=1ms&scan=paddle_a,paddle_b", fine_trials=10)
    lo, hi = r["interval_us"]
    assert lo <= 500 <= hi and 400 <= r["skew_toward_a_us"] <= 600
    flipped = _fairness("showdown", "poll=1ms&scan=paddle_b,paddle_a", fine_trials=10)
    assert -600 <= flipped["skew_toward_a_us"] <= -400


def test_the_flash_buzzer_race_finds_a_seat_that_is_late():
    r = _fairness("flash", "skew_player_1=300us")
    assert r["seats"] == ["player_0", "player_1"]
    assert abs(r["skew_toward_a_us"] - 300) <= 20


# ---- latency from the physical press (SPEC 13.5) ----

def _bench(kind: str, path: str, races: int = 24) -> dict:
    from unohil.harness.measure.rig_latency import rig_latencies
    unit, rig = open_drivers(f"emu://{kind}?clock=virtual&seed=2", f"emurig://?{path}")
    s = RigSession(unit, rig)
    s.wire()
    return rig_latencies(s, races)


def test_a_5ms_delay_on_the_red_light_shows_in_the_bench_and_nowhere_else():
    r = _bench("showdown", "delay_red=5ms")
    d = r["distributions"]
    assert r["outcomes"]["false_start"] > 0 and r["outcomes"]["first_press"] > 0
    assert d["press_to_red_us"]["min"] == d["press_to_red_us"]["max"] == 5_000
    assert d["unit_press_to_red_us"]["max"] == 0           # the unit cannot see its own lamp's delay
    assert d["press_to_launch_us"]["max"] == 0 and d["timestamp_error_us"]["max"] == 0
    assert d["press_to_light_us"] == d["unit_press_to_light_us"]   # green off at the verdict, on both clocks


def test_a_unit_stamping_presses_at_its_poll_time_is_reported_with_its_timestamp_error():
    r = _bench("showdown", "poll=1ms")
    err = r["distributions"]["timestamp_error_us"]
    assert 0 <= err["min"] and err["max"] < 1_000 and 200 < r["means"]["timestamp_error_us"] < 800
    # the reaction times it reports are late by the same amounts: the green lamp itself is on time
    reaction = r["distributions"]["reaction_error_us"]
    assert err["min"] <= reaction["min"] and reaction["max"] <= err["max"] and reaction["n"] == r["outcomes"]["first_press"]
    clean = _bench("showdown", "")
    assert clean["distributions"]["timestamp_error_us"]["max"] == 0


@pytest.mark.parametrize("kind, path, figure, late", [
    ("flash", "irq=30us", "press_to_flag_us", 30),
    ("launcher", "skew_button=700us&delay_card=2ms", "press_to_first_card_us", 2_700),
])
def test_the_other_kinds_measure_from_the_press(kind, path, figure, late):
    r = _bench(kind, path, races=8)
    rig, unit = r["distributions"][figure], r["distributions"]["unit_" + figure]
    assert rig["min"] - unit["min"] == rig["max"] - unit["max"] == late


# ---- the commands ----

def test_unohil_fairness_and_bench_through_an_emulated_rig(tmp_path, capsys):
    import json
    from unohil.harness.cli.app import main
    out = tmp_path / "fair.json"
    status = main(["fairness", "--device", "emu://showdown", "--rig", "emurig://?skew_paddle_b=300us",
                   "--json", str(out)])
    assert status == 1                  # 300 us is outside the SPEC 13.6 bound
    r = json.loads(out.read_text())
    assert abs(r["skew_toward_a_us"] - 300) <= 20 and r["within_bound"] is False
    assert "300 us toward paddle_a" in capsys.readouterr().out
    assert main(["fairness", "--device", "emu://showdown", "--rig", "emurig://"]) == 0
    assert main(["fairness", "--device", "emu://launcher", "--rig", "emurig://"]) == 2
    assert main(["bench", "--device", "emu://launcher", "--rig", "emurig://", "--races", "3"]) == 0
    assert main(["bench", "--rig", "emurig://"]) == 2
    assert main(["fairness", "--device", "emu://showdown", "--rig", "emurig://?poll=1s&irq=1us"]) == 2
    # 2 ms of debounce on A alone: a skew toward B beyond the offsets swept, one clear message
    assert main(["fairness", "--device", "emu://showdown", "--rig", "emurig://?debounce_paddle_a=2ms",
                 "--range", "1000"]) == 2
    assert "give a larger --range" in capsys.readouterr().err
    assert main(["fairness", "--device", "emu://showdown", "--rig", "emurig://?debounce_paddle_a=2ms",
                 "--range", "4000", "--json", str(out)]) == 1
    assert abs(json.loads(out.read_text())["skew_toward_a_us"] + 2000) <= 20


# ---- rig mode: the scenario library through the rig ----

# what no rig can play, derived from the steps and the catalogue (harness/rig/unit.py: unplayable): a paddle
# press carrying a value, and releases of paddles never pressed (a button that is open cannot be let go)
UNPLAYABLE = {
    "a paddle press with a value is refused and starts nothing": "a rig closes a switch: paddle_a carries no value",
    "releases do not count, a paddle released in the countdown is no false start":
        "a rig cannot release paddle_a without pressing it first: no edge exists",
    "TIMER with a value on an empty tray is refused bad_value, not wrong_state":
        "a rig closes a switch: timer carries no value",
    "the button with a value while the door is open is refused bad_value, not wrong_state":
        "a rig closes a switch: button carries no value",
}
# the scenarios of the Showdown's other forms (SD-11, SD-3) skip on this one
VARIANTS = ("no landing_sensor", "no false_start_launch")


@pytest.mark.parametrize("kind", list(cat.UNITS))
def test_the_library_passes_in_rig_mode_on_a_clean_path(kind):
    from unohil.harness.outcome import Outcome
    from unohil.harness.rig.links import open_rig_unit
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.library import library_paths
    from unohil.harness.scenarios.load import load_paths
    scenarios = [s for s in load_paths(library_paths()) if s.unit == kind]
    d = open_rig_unit(f"emu://{kind}", "emurig://")
    try:
        results = {sc.name: Runner(d).run(sc) for sc in scenarios}
        seen = [f for f in d.history if f.msg.NAME == "INPUT_SEEN"]
    finally:
        d.close()
    skipped = {name: r.error for name, r in results.items() if r.status is Outcome.SKIP}
    unplayable = {name: why for name, why in UNPLAYABLE.items() if name in results}
    # and those of the other forms (no sensor, no throw at a false start; the Flash base's FL-20..FL-22, which
    # need a capability bit this unit lacks)
    variant = {sc.name for sc in scenarios if set(VARIANTS) & set(sc.needs) or set(sc.needs) & set(cat.UNITS[kind].variants)}
    assert {name: why.split(" (the step")[0] for name, why in skipped.items() if name not in variant} == unplayable
    bad = {name: (r.status, r.races[0].failures if r.races else r.error) for name, r in results.items()
           if r.status is not Outcome.PASS and name not in skipped}
    assert not bad
    assert all(r.races and r.races[0].rig["presses"] for r in results.values() if r.status is Outcome.PASS)
    assert seen and all(f.msg.source == SOURCE.physical for f in seen)      # every edge came through the rig


def test_rig_mode_catches_a_polling_unit():
    from unohil.harness.outcome import Outcome
    from unohil.harness.rig.links import open_rig_unit
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.library import library_paths
    from unohil.harness.scenarios.load import load_paths
    scenarios = [s for s in load_paths(library_paths()) if s.unit == "showdown" and "tie" in s.tags]
    d = open_rig_unit("emu://showdown", "emurig://?poll=1ms")
    try:
        statuses = [Runner(d).run(sc).status for sc in scenarios]
    finally:
        d.close()
    assert Outcome.FAIL in statuses


def test_unohil_run_in_rig_mode(tmp_path):
    import json
    from unohil.harness.cli.app import main
    out = tmp_path / "results.json"
    assert main(["run", "-q", "--device", "emu://launcher", "--rig", "emurig://", "--json", str(out),
                 "fixtures/scenarios/launcher"]) == 0
    assert json.loads(out.read_text())["summary"]["passed"] >= 15
    # a debounce on the button: every press reaches the unit 3 ms late, and exact timing says so
    assert main(["run", "-q", "--device", "emu://launcher", "--rig", "emurig://?debounce_button=3ms",
                 "fixtures/scenarios/launcher/bursts.yaml"]) == 1
    assert main(["run", "-q", "--rig", "emurig://", "fixtures/scenarios/launcher"]) == 2


def test_unohil_conform_gains_the_fairness_check_of_spec_13_6(tmp_path):
    import json
    from unohil.harness.cli.app import main
    out = tmp_path / "conform.json"
    assert main(["conform", "-q", "--no-scenarios", "--device", "emu://showdown",
                 "--rig", "emurig://?skew_paddle_b=300us", "--json", str(out)]) == 1
    fair = [c for c in json.loads(out.read_text())["checks"] if c["section"] == "13.6"]
    assert len(fair) == 1 and fair[0]["status"] == "fail" and "+300 us" in fair[0]["detail"]
    assert main(["conform", "-q", "--no-scenarios", "--device", "emu://flash?players=3", "--rig", "emurig://",
                 "--json", str(out)]) == 0
    fair = [c for c in json.loads(out.read_text())["checks"] if c["section"] == "13.6"]
    assert [c["status"] for c in fair] == ["pass", "pass"]      # each seat against player_0, the bound stated
    assert ["player_1" in fair[0]["name"], "player_2" in fair[1]["name"]] == [True, True]
    assert all("within +-100 us (fairness_bound_us)" in c["name"] for c in fair)
