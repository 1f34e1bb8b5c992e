"""The rig's bench floor (SPEC 13.7: a loopback), the emulated rig on the real clock, and fairness for every
Flash seat (SPEC 13.6). Behaviour on the virtual clock, exact; one real-clock smoke test of structure."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from unohil.protocol import catalogue as cat, msg
from unohil.protocol.devtime import wrap
from unohil.protocol.schema import CatalogueError, load_catalogue

from unohil.emulator.inprocess import VirtualLink
from unohil.harness.cli.app import main
from unohil.harness.errors import Nak
from unohil.harness.measure.rig_latency import rig_latencies
from unohil.harness.measure.fairness import measure_seats
from unohil.harness.rig.links import open_drivers
from unohil.harness.rig.session import RigSession
from unohil.harness.session.driver import Driver

YAML = (Path(cat.__file__).parent / "messages.yaml").read_text(encoding="utf-8")
SIGNAL = cat.ENUM_VALUES["rig_signal"]
LOOP = cat.RIG.loopback


def _session(device: str, path: str) -> RigSession:
    unit, rig = open_drivers(device, f"emurig://?{path}")
    s = RigSession(unit, rig)
    s.wire()
    return s


def _nak(d: Driver, m) -> str:
    with pytest.raises(Nak) as exc:
        d.command(m)
    return exc.value.error


# ---- the loopback in the catalogue (SPEC 13.1, 13.7) ----

@pytest.mark.parametrize("kind", list(cat.UNITS))
def test_every_reference_wiring_carries_the_loopback_on_lines_no_unit_uses(kind):
    wires = cat.RIG.wiring[kind]
    assert LOOP in wires and (LOOP.line, LOOP.signal, LOOP.id) == (31, "loopback", 15)
    others = {w.line for w in wires if w is not LOOP}
    assert LOOP.line not in others and LOOP.id not in others


@pytest.mark.parametrize("new, problem", [
    ("loopback: {line: 31, drive: 0}", "line 0 is wired to the showdown unit"),
    ("loopback: {line: 16, drive: 15}", "line 16 is wired to the showdown unit"),
    ("loopback: {line: 15, drive: 15}", "not one to itself"),
    ("loopback: {line: 31, drive: 40}", "out of range"),
])
def test_a_bad_loopback_fails_at_its_line(new, problem):
    old = "loopback: {line: 31, drive: 15}"
    assert old in YAML
    with pytest.raises(CatalogueError, match=problem) as exc:
        load_catalogue(YAML.replace(old, new, 1))
    assert str(exc.value).startswith("messages.yaml:")


@pytest.mark.parametrize("old, new, problem", [
    ("launch: {event: SD_LAUNCH}", "launch: {event: SD_LAUNCHED}", "unknown event 'SD_LAUNCHED'"),
    ("sound: {event: SOUND, field: sound}", "sound: {event: SOUND, field: tone}", "unknown field of SOUND 'tone'"),
    ("    card: {event: LA_CARD}\n", "", "nothing moves the watched signal card"),
    ("launch: {event: SD_LAUNCH}", "launch: {event: SD_LAUNCH, level: 1}", "true or false"),
])
def test_what_moves_a_watched_line_is_checked_at_its_line(old, new, problem):
    assert old in YAML
    with pytest.raises(CatalogueError, match=problem) as exc:
        load_catalogue(YAML.replace(old, new, 1))
    assert str(exc.value).startswith("messages.yaml:")


# ---- the loopback on the emulated rig ----

def test_a_rig_served_on_its_own_loops_a_drive_line_back_and_refuses_bad_loopbacks():
    d = Driver(VirtualLink("rig"))
    d.hello(expect_kind="rig")
    at = d.device_now() + 1_000
    assert _nak(d, msg.RIG_EDGE(at_us=wrap(at), line=LOOP.id, action=1, value=0)) == "bad_value"    # not wired
    assert _nak(d, msg.RIG_WIRE(line=30, signal=SIGNAL["loopback"], id=30, target=0, polarity=1)) == "bad_value"
    assert _nak(d, msg.RIG_WIRE(line=30, signal=SIGNAL["loopback"], id=40, target=0, polarity=1)) == "bad_value"
    d.command(msg.RIG_WIRE(line=0, signal=SIGNAL["input"], id=0, target=0, polarity=1))
    assert _nak(d, msg.RIG_WIRE(line=30, signal=SIGNAL["loopback"], id=0, target=0, polarity=1)) == "bad_value"
    d.command(msg.RIG_WIRE(line=LOOP.line, signal=SIGNAL["loopback"], id=LOOP.id, target=0, polarity=1))
    # the drive line of a loopback is wired to nothing else
    assert _nak(d, msg.RIG_WIRE(line=LOOP.id, signal=SIGNAL["input"], id=1, target=0, polarity=1)) == "bad_value"
    d.command(msg.RIG_EDGE(at_us=wrap(at), line=LOOP.id, action=1, value=0))
    got = []
    d.wait_for(lambda f: f.msg.NAME == "RIG_CAPTURE" and f.msg.line == LOOP.line, 100_000, "the loopback",
               collect=got)
    caps = [(f.dev_us, f.msg.line, f.msg.origin) for f in got if f.msg.NAME == "RIG_CAPTURE"]
    assert caps == [(at, LOOP.id, 0), (at, LOOP.line, 1)]      # driven first, then watched, at one rig time


@pytest.mark.parametrize("path, floor", [("", 0), ("capture=30us", 30), ("capture=2ms&delay=5ms&poll=1ms", 2_000)])
def test_the_floor_is_the_rigs_own_capture_lag_and_nothing_of_the_units_path(path, floor):
    s = _session("emu://showdown?clock=virtual", path)
    try:
        assert [s.loopback() for _ in range(3)] == [floor] * 3
    finally:
        s.unit.close()
        s.rig.close()


# ---- bench --rig: each physical figure beside the floor of the same run ----

def test_each_press_to_output_figure_is_reported_beside_the_floor_and_less_its_least():
    s = _session("emu://showdown?clock=virtual&seed=2", "capture=30us&delay_red=5ms")
    try:
        r = rig_latencies(s, 12)
    finally:
        s.unit.close()
        s.rig.close()
    d = r["distributions"]
    assert r["outcomes"]["false_start"] > 0 and r["outcomes"]["first_press"] > 0
    assert d["floor_loopback_us"]["n"] == 12 and r["floor_median_us"] == 30
    assert d["floor_loopback_us"]["min"] == d["floor_loopback_us"]["max"] == 30
    # the rig's capture lag is in every figure from a driven stamp to a watched one, and less the floor it is gone
    assert d["press_to_red_us"]["min"] == d["press_to_red_us"]["max"] == 5_030
    assert d["press_to_red_less_floor_us"]["min"] == d["press_to_red_less_floor_us"]["max"] == 5_000
    assert d["press_to_launch_us"]["max"] == 30 and d["press_to_launch_less_floor_us"]["max"] == 0
    assert d["press_to_light_less_floor_us"] == d["unit_press_to_light_us"]
    # the unit's own figures and its stamps know nothing of the rig's lag; they get no floor
    assert d["unit_press_to_red_us"]["max"] == 0 and d["timestamp_error_us"]["max"] == 0
    assert not any(k.startswith(("unit_", "timestamp_", "reaction_")) and "floor" in k for k in d)


def test_less_the_floor_an_edge_never_reads_below_what_the_unit_does():
    """On a real clock the rig's lag varies race by race (a host's wake-ups, 90 us to milliseconds): each
    edge less the least loopback keeps at least the unit's own 1 ms, where less the median a quiet
    edge read 969 us. The races' lags here are what the loopbacks saw, some edges quieter than the median."""
    import random
    from unohil.harness.measure.rig_latency import summarise
    rng = random.Random(3)
    lags = [90 + int(rng.expovariate(1 / 60)) for _ in range(200)]
    edges = [1_000 + 90 + int(rng.expovariate(1 / 60)) for _ in range(200)]     # the unit's 1 ms and the rig's lag
    r = summarise({"_figures": {"floor_loopback_us": lags, "press_to_light_us": edges},
                   "_outcomes": {"first_press": 200}})
    d = r["distributions"]
    assert r["floor_least_us"] == min(lags) and r["races_done"] == 200
    assert d["press_to_light_less_floor_us"]["min"] >= 1_000
    assert min(e - r["floor_median_us"] for e in edges) < 1_000       # what the median did


def test_bench_rig_prints_the_floor_and_writes_it_as_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--device", "emu://flash?players=3", "--rig", "emurig://?capture=5us", "--races", "3",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["floor_median_us"] == 5 and r["distributions"]["press_to_flag_less_floor_us"]["n"] == 3
    text = capsys.readouterr().out
    assert "floor_loopback" in text and "less floor" in text
    assert main(["bench", "--device", "emu://flash", "--rig", "emurig://", "--races", "0"]) == 2


# ---- the emulated rig on the real clock ----

def test_an_emulated_rig_on_the_real_clock_gives_real_time_figures_of_the_same_shape(tmp_path):
    out = tmp_path / "real.json"
    assert main(["bench", "--device", "emu://launcher?clock=real", "--rig", "emurig://", "--races", "2",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    d = r["distributions"]
    for key in ("floor_loopback_us", "press_to_first_card_us", "press_to_first_card_less_floor_us",
                "unit_press_to_first_card_us", "timestamp_error_us"):
        assert d[key]["n"] == 2 and d[key]["min"] <= d[key]["p50"] <= d[key]["max"]
    assert sum(r["outcomes"].values()) == 2 and isinstance(r["floor_median_us"], int)


# ---- fairness: every Flash seat ----

def test_a_skew_on_player_2_alone_is_found_on_player_2_within_20us_and_on_no_other_seat():
    s = _session("emu://flash?clock=virtual&seed=5&players=4", "skew_player_2=300us")
    try:
        r = measure_seats(s, fine_trials=2)
    finally:
        s.unit.close()
        s.rig.close()
    seats = {x["seat"]: x for x in r["seats"]}
    assert r["reference"] == "player_0" and list(seats) == ["player_1", "player_2", "player_3"]
    late = seats.pop("player_2")
    assert abs(late["skew_toward_reference_us"] - 300) <= 20 and late["differs"]
    lo, hi = late["interval_us"]
    assert lo <= 300 <= hi
    for x in seats.values():
        assert not x["differs"] and abs(x["skew_toward_reference_us"]) <= 20
    assert abs(r["tie_window_us"] - r["tie_setting_us"]) <= r["tie_step_us"]      # measured once, on the first pair


def test_unohil_fairness_on_a_flash_reports_every_seat_and_fails_the_late_one(tmp_path, capsys):
    out = tmp_path / "fair.json"
    assert main(["fairness", "--device", "emu://flash?players=3", "--rig", "emurig://?skew_player_1=300us",
                 "--trials", "2", "--reference", "player_2", "--json", str(out)]) == 1
    r = json.loads(out.read_text())
    seats = {x["seat"]: x for x in r["seats"]}
    assert list(seats) == ["player_0", "player_1"]
    assert seats["player_0"]["within_bound"] and not seats["player_0"]["differs"]
    assert not seats["player_1"]["within_bound"] and abs(seats["player_1"]["skew_toward_reference_us"] - 300) <= 20
    text = capsys.readouterr().out
    assert "player_1: +300 us toward player_2" in text and "OUTSIDE for player_1" in text
    assert main(["fairness", "--device", "emu://flash?players=2", "--rig", "emurig://"]) == 2
    assert "no race between two opponents" in capsys.readouterr().err
    assert main(["fairness", "--device", "emu://flash", "--rig", "emurig://", "--reference", "buzzer"]) == 2


def test_conform_holds_every_flash_seat_to_the_bound():
    from unohil.harness.conform.rig import rig_checks
    from unohil.harness.outcome import Outcome
    checks = rig_checks("emu://flash?players=3", "emurig://?skew_player_2=300us")
    assert [(c.section, c.status) for c in checks] == [("13.6", Outcome.PASS), ("13.6", Outcome.FAIL)]
    assert "seat player_2 against player_0" in checks[1].name and "+300 us toward player_0" in checks[1].detail
    assert all("within +-100 us (fairness_bound_us)" in c.name for c in checks)
    skipped = rig_checks("emu://flash?players=2", "emurig://")
    assert [c.status for c in skipped] == [Outcome.SKIP] and "no race between two opponents" in skipped[0].detail
