"""record --from-trace keeps what happened (issue 31): traces of every library file run behind a faulty line
(corrupt and dropped frames: events recovered by EVENT_RESEND arrive late, some twice) become scenario files
that validate and pass on the same unit; a race the runner ran again is recorded once, as the try that
counted; a config step in the middle of a scenario is recorded as a config step."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from unohil.harness.cli.app import main
from unohil.harness.record.segments import segments_of
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths

ROOT = Path(__file__).resolve().parent.parent
FAULTS = "faults=corrupt=1e-3,dropframe=1e-3"


def _trace(tmp_path: Path, paths, url: str) -> Path:
    main(["run", *map(str, paths), "--device", url, "--trace", str(tmp_path / "t"), "-q"])
    (trace,) = (tmp_path / "t").iterdir()
    return trace


def _recorded(tmp_path: Path, trace: Path) -> Path:
    out = tmp_path / "rec.yaml"
    assert main(["record", "--from-trace", str(trace), "-o", str(out)]) == 0
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("kind", ["showdown", "flash", "launcher"])
def test_a_recording_of_a_faulty_lines_trace_validates_and_passes_on_the_same_unit(tmp_path, capsys, kind, seed):
    unit = f"emu://{kind}?clock=virtual&seed={seed}"
    trace = _trace(tmp_path, library_paths(kind), f"{unit}&{FAULTS}")
    rec = _recorded(tmp_path, trace)
    capsys.readouterr()
    assert main(["validate", str(rec)]) == 0, capsys.readouterr()
    assert main(["run", str(rec), "--device", unit, "-q", "--format", "lines"]) == 0, capsys.readouterr().out[-3000:]


def test_a_config_step_is_recorded_as_a_config_step_and_round_trips(tmp_path, capsys):
    changes = ROOT / "fixtures" / "scenarios" / "showdown" / "changes.yaml"
    rec = _recorded(tmp_path, _trace(tmp_path, [changes], "emu://showdown?clock=virtual"))
    first = load_paths([rec])[0]
    assert [st.config for st in first.steps if st.action == "config"] == [
        {"countdown_min_us": 2_000_000, "countdown_max_us": 2_000_000}]
    assert "configuration is set once" not in rec.read_text()
    capsys.readouterr()
    assert main(["run", str(rec), "-q", "--format", "lines"]) == 0, capsys.readouterr().out[-3000:]


def test_a_race_run_again_is_recorded_once_as_the_try_that_counted(tmp_path):
    """A race the runner ran again (INJECT too_late: nothing was judged) leaves two tries in the trace, each
    after its own race note: the recording holds the second only."""
    changes = ROOT / "fixtures" / "scenarios" / "showdown" / "changes.yaml"
    trace = _trace(tmp_path, [changes], "emu://showdown?clock=virtual")
    records = [json.loads(x) for x in trace.read_text().splitlines()]
    notes = [i for i, r in enumerate(records) if r.get("dir") == "note" and r.get("text") == "race"]
    first, second = notes[0], notes[1]
    # the first race again, as a second try: its records once more, on the device clock after the first try's
    shift = max(r.get("dev_us") or 0 for r in records[first:second]) + 1000 - records[first]["start_dev_us"]
    again = [{**r, **({"dev_us": r["dev_us"] + shift} if r.get("dev_us") is not None else {}),
              **({"start_dev_us": r["start_dev_us"] + shift} if "start_dev_us" in r else {})}
             for r in records[first:second]]
    once = segments_of(records)
    twice = segments_of(records[:second] + again + records[second:])
    assert [(s.name, s.race) for s in twice] == [(s.name, s.race) for s in once]
    assert twice[0].start_us == once[0].start_us + shift


def test_a_switch_moved_mid_game_is_recorded_as_a_physical_step_and_round_trips(tmp_path, capsys):
    short_turns = ROOT / "fixtures" / "scenarios" / "flash" / "short_turns.yaml"
    rec = _recorded(tmp_path, _trace(tmp_path, [short_turns], "emu://flash?clock=virtual"))
    moved = [st.switches for sc in load_paths([rec]) for st in sc.steps if st.action == "physical"]
    assert {"speed_switch": "four_seconds"} in moved
    capsys.readouterr()
    assert main(["run", str(rec), "-q", "--format", "lines"]) == 0, capsys.readouterr().out[-3000:]
