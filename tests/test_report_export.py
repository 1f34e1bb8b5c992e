"""unohil export: a race as VCD (read back with a small VCD reader), a run's traces as Chrome trace JSON."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from unohil.harness.cli import main
from unohil.protocol import catalogue as cat

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "fixtures" / "scenarios"


def read_vcd(text: str) -> tuple[dict, dict, dict]:
    """A small VCD reader: the variables (id -> (scope.name, width)), the value of each at #0, and every
    change as name -> [(time, value)]."""
    header, _, body = text.partition("$enddefinitions $end")
    variables, scopes = {}, []
    for line in header.splitlines():
        words = line.split()
        if words[:1] == ["$scope"]:
            scopes.append(words[2])
        elif words[:1] == ["$upscope"]:
            scopes.pop()
        elif words[:1] == ["$var"]:
            assert words[1] == "wire" and words[-1] == "$end"
            variables[words[3]] = (".".join(scopes[1:] + [words[4]]), int(words[2]))
    assert "$timescale 1us $end" in " ".join(header.split()) and not scopes
    t, changes = None, {}
    tokens = body.split()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("#"):
            t = int(tok[1:])
        elif tok not in ("$dumpvars", "$end"):
            if tok.startswith("b"):         # a vector: b<bits> <id>
                value, ident = int(tok[1:], 2), tokens[i + 1]
                i += 1
            else:                           # a wire: <bit><id>
                value, ident = int(tok[0]), tok[1:]
            name, width = variables[ident]
            assert value < 2 ** width and t is not None
            changes.setdefault(name, []).append((t, value))
        i += 1
    initial = {name: values[0][1] for name, values in changes.items() if values[0][0] == 0}
    return variables, initial, changes


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    rc = main(["run", str(LIBRARY / "showdown" / "first_press.yaml"), str(LIBRARY / "flash" / "buzzer.yaml"),
               "-q", "--json", str(d / "r.json"), "--trace", str(d / "traces")])
    assert rc == 0
    return d


def test_each_race_is_a_vcd_with_wires_for_inputs_lights_and_anchors_and_a_state_vector(run):
    assert main(["export", str(run / "r.json"), "--vcd", str(run / "vcd")]) == 0
    doc = json.loads((run / "r.json").read_text())
    files = sorted((run / "vcd").glob("*.vcd"))
    assert len(files) == sum(len(s["results"]) for s in doc["scenarios"])
    showdown = next(f for f in files if f.name.startswith("000-"))
    first = doc["scenarios"][0]
    assert first["unit"] == "showdown"
    variables, initial, changes = read_vcd(showdown.read_text())
    widths = dict(variables.values())
    states = cat.ENUM_VALUES["showdown_state"]
    assert widths["unit.state"] == max(states.values()).bit_length()
    assert set(initial) == {name for name, _ in variables.values()}      # every variable dumped at #0
    assert {f"inputs.{i}" for i in cat.UNITS["showdown"].inputs} <= set(widths)
    assert all(widths[n] == 1 for n in widths if not n.startswith("unit."))
    events = first["results"][0]["events"]
    press = next(e["t_us"] for e in events if e["event"] == "INPUT_SEEN" and e["fields"]["action"] == "press"
                 and e["fields"]["input"].startswith("paddle"))
    paddle = next(e["fields"]["input"] for e in events if e["event"] == "INPUT_SEEN" and e["t_us"] == press)
    assert (press, 1) in changes[f"inputs.{paddle}"]
    green = next(e["t_us"] for e in events if e["event"] == "SD_GREEN")
    assert changes["events.green"][-2:] == [(green, 1), (green + 1, 0)]          # a 1 us pulse
    assert (green, 1) in changes["lights.green"]
    racing = [t for t, v in changes["unit.state"] if v == states["racing"]]
    assert racing == [e["t_us"] for e in events if e["event"] == "STATE" and e["fields"]["state"] == "racing"]


@pytest.mark.skipif(not (shutil.which("vcd2fst") and shutil.which("fst2vcd")),
                    reason="GTKWave's vcd2fst/fst2vcd not installed (.ci/run installs Debian's gtkwave)")
def test_gtkwave_reads_the_vcd_as_written(run, tmp_path):
    """GTKWave's own reader converts the file to its FST format and back with the same changes."""
    assert main(["export", str(run / "r.json"), "--vcd", str(tmp_path / "vcd")]) == 0
    for vcd in sorted((tmp_path / "vcd").glob("*.vcd"))[:3]:
        fst = tmp_path / (vcd.stem + ".fst")
        subprocess.run(["vcd2fst", str(vcd), str(fst)], check=True, capture_output=True, timeout=60)
        back = subprocess.run(["fst2vcd", str(fst)], check=True, capture_output=True, text=True, timeout=60).stdout
        ours, theirs = read_vcd(vcd.read_text()), read_vcd(back)
        assert sorted(ours[0].values()) == sorted(theirs[0].values())
        assert ours[2] == theirs[2]


def test_the_traces_of_a_run_are_one_chrome_trace_with_a_process_per_unit(run):
    traces = sorted((run / "traces").glob("*.jsonl"))
    assert len(traces) == 2
    out = run / "run.json"
    assert main(["export", *map(str, traces), "--perfetto", str(out)]) == 0
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(names.values()) == sorted(f"{t.stem} ({k})" for t, k in zip(traces, ("flash", "showdown")))
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    sd = next(p for p, n in names.items() if "showdown" in n)
    assert {(sd, t) for t in ("events", "inputs", "state", "commands")} <= threads
    sd_events = [e for e in events if e["pid"] == sd and e["ph"] != "M"]
    assert all(isinstance(e["ts"], int) and e.get("dur", 0) >= 0 for e in sd_events)
    verdicts = [e for e in sd_events if e.get("cat") == "verdict"]
    doc_r = json.loads((run / "r.json").read_text())
    assert len(verdicts) == sum(len(s["results"]) for s in doc_r["scenarios"] if s["unit"] == "showdown")
    # device-time spacing is exact: green to verdict as the results file has it, race by race
    greens = [e["ts"] for e in sd_events if e["name"] == "green"]
    first = next(s for s in doc_r["scenarios"] if s["unit"] == "showdown")["results"][0]["events"]
    gap = next(e["t_us"] for e in first if e["event"] == "SD_VERDICT") - \
        next(e["t_us"] for e in first if e["event"] == "SD_GREEN")
    assert verdicts[0]["ts"] - greens[0] == gap
    slices = [e for e in sd_events if e["ph"] == "X" and e["tid"] == next(
        e["tid"] for e in events if e["ph"] == "M" and e["pid"] == sd and e["args"]["name"] == "state")]
    assert {"countdown", "go", "racing"} <= {e["name"] for e in slices}
    commands = [e for e in sd_events if e["ph"] == "X" and e["name"] == "INJECT"]
    reply = cat.BY_NAME["INJECT"].reply
    assert commands and all(reply in e["args"] and e["dur"] >= 0 for e in commands)
    # the run's results file names its units' trace files: the same export from it
    assert main(["export", str(run / "r.json"), "--perfetto", str(run / "from_results.json")]) == 0
    assert (run / "from_results.json").read_text() == out.read_text()


def test_export_usage_errors_are_exit_2(run, tmp_path, capsys):
    assert main(["export", str(run / "r.json")]) == 2
    not_a_trace = tmp_path / "r.jsonl"
    shutil.copy(run / "r.json", not_a_trace)
    assert main(["export", str(not_a_trace), "--perfetto", str(tmp_path / "x.json")]) == 2
    assert "not a trace record" in capsys.readouterr().err
    untraced = json.loads((run / "r.json").read_text())
    for device in untraced["devices"]:
        device["trace"] = None
    (tmp_path / "untraced.json").write_text(json.dumps(untraced))
    assert main(["export", str(tmp_path / "untraced.json"), "--perfetto", str(tmp_path / "x.json")]) == 2
    assert "names no trace file" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert main(["export", str(tmp_path / "missing.json"), "--vcd", str(tmp_path / "v")]) == 2
