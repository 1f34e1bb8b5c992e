"""bench and fairness keep their results (issue 31), with real processes: SIGINT, SIGTERM or SIGHUP (once:
at the next race; twice: at once), a console that fails, an exception while reporting: the JSON holds
everything that finished, the part cut short marked, and the exit status says what happened."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_results_kept import CLI, ROOT

STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _bench(tmp_path: Path, *extra: str) -> list[str]:
    return CLI + ["bench", "--json", str(tmp_path / "b.json"), *extra]


def _wait_for(proc, err: Path, text: str) -> None:
    deadline = time.monotonic() + 120          # a generous bound for a loaded host, never asserted on
    while text not in (err.read_text() if err.exists() else ""):
        assert proc.poll() is None, f"ended before {text!r}: {err.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r}"
        time.sleep(0.02)


def _unit_kept(u: dict) -> None:
    """A unit's figures are those of the races it finished, every one of them."""
    done = u["races_done"]
    assert all(len(u["samples"][k]) == done for k in ("processing_us", "read_us", "delivered_us"))
    assert sum(u["outcomes"].values()) == done
    assert u["distributions"]["processing_us"]["n"] == done


def _signalled_bench(tmp_path, sigs, line: str, *args):
    """`unohil bench ARGS` sent sigs once its stderr says line: (its JSON, the first signal's name, stderr's
    path), after checking the exit status that signal owes and the JSON's interrupted reason."""
    err = tmp_path / "err.txt"
    with open(err, "w") as fh:
        proc = subprocess.Popen(_bench(tmp_path, *args), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=fh)
        try:
            _wait_for(proc, err, line)
            for sig in sigs:
                proc.send_signal(sig)
            proc.wait(timeout=60)
        finally:
            proc.kill()
    name = signal.Signals(sigs[0]).name
    assert proc.returncode == STATUS[sigs[0]], err.read_text()
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["interrupted"].startswith(f"interrupted by {name}")
    return doc, name, err


@pytest.mark.parametrize("sigs", [(signal.SIGINT,), (signal.SIGTERM,), (signal.SIGHUP,),
                                  (signal.SIGTERM, signal.SIGTERM)], ids=["INT", "TERM", "HUP", "TERM twice"])
def test_bench_stopped_by_a_signal_keeps_every_finished_race(tmp_path, sigs):
    """Emulators on ptys, real clock: the signal comes once 50 Showdown races were done."""
    doc, name, err = _signalled_bench(tmp_path, sigs, "bench: showdown 50/400 races",
                                      "--races", "400", "--kind", "showdown", "--kind", "flash")
    (u,) = doc["units"].values()
    assert u["interrupted"] and 50 <= u["races_done"] < 400
    _unit_kept(u)
    assert doc["not_run"] == ["flash"] and "not measured" in doc["floors"]
    assert f"interrupted by {name}" in err.read_text()


@pytest.mark.parametrize("sigs", [(signal.SIGINT,), (signal.SIGTERM,), (signal.SIGHUP,),
                                  (signal.SIGTERM, signal.SIGTERM)], ids=["INT", "TERM", "HUP", "TERM twice"])
def test_bench_through_a_rig_stopped_by_a_signal_keeps_every_finished_race(tmp_path, sigs):
    """An emulated rig, virtual clock: the signal comes once 20 races were done; every race kept is whole
    (its floor sample with it), and the unit is named (the store records its firmware)."""
    doc, name, err = _signalled_bench(tmp_path, sigs, "bench: 20/100000 races through the rig",
                                      "--device", "emu://showdown?clock=virtual", "--rig", "emurig://", "--races", "100000")
    done = doc["races_done"]
    assert 20 <= done < 100000 and sum(doc["outcomes"].values()) == done
    assert doc["distributions"]["floor_loopback_us"]["n"] == done
    assert doc["identity"]["kind"] == "showdown" and doc["identity"]["firmware"]
    assert f"interrupted by {name}" in err.read_text()


@pytest.mark.parametrize("shell", ["| true", "> /dev/full"])   # true: a reader gone before the report
def test_bench_with_a_failing_console_keeps_its_results(tmp_path, shell):
    cmd = " ".join(f"'{a}'" for a in _bench(tmp_path, "--device", "emu://showdown?clock=virtual", "--races", "30"))
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} {shell}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    assert "error: stdout: " in r.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    assert "interrupted" not in doc and doc["units"]["showdown"]["races_done"] == 30
    _unit_kept(doc["units"]["showdown"])


def test_bench_whose_report_fails_still_writes_its_results(tmp_path, monkeypatch):
    """An exception while the console report is made: the file is written first-hand all the same."""
    import unohil.harness.cli.bench as bench
    from unohil.harness.cli.app import main

    def broken(*_a):
        raise RuntimeError("a broken report")
    monkeypatch.setattr(bench, "print_report", broken)
    with pytest.raises(RuntimeError):
        main(["bench", "--device", "emu://showdown?clock=virtual", "--races", "20", "--json", str(tmp_path / "b.json")])
    _unit_kept(json.loads((tmp_path / "b.json").read_text())["units"]["showdown"])


def test_bench_whose_file_cannot_be_made_says_so(tmp_path, monkeypatch, capsys):
    import unohil.harness.cli.bench as bench
    from unohil.harness.cli.app import main

    def broken(_doc):
        raise ValueError("not serialisable")
    monkeypatch.setattr(bench, "json_text", broken)
    assert main(["bench", "--device", "emu://showdown?clock=virtual", "--races", "5",
                 "--json", str(tmp_path / "b.json")]) == 2
    assert "cannot be made: ValueError: not serialisable" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


# ---- fairness ----

def _fairness(tmp_path: Path) -> list[str]:
    """A Flash base's every seat through an emulated rig, virtual clock: several seconds of sweeps."""
    return CLI + ["fairness", "--device", "emu://flash?clock=virtual", "--rig", "emurig://", "--trials", "12",
                  "--json", str(tmp_path / "f.json")]


@pytest.mark.parametrize("sig, seats_done", [(signal.SIGINT, 1), (signal.SIGTERM, 2), (signal.SIGHUP, 3)])
def test_fairness_stopped_by_a_signal_keeps_every_finished_seat(tmp_path, sig, seats_done):
    """The signal comes as the progress line says seats_done seats are measured: the next seat's first race
    (where the stop is asked) is cut, whatever the host's pace."""
    errfile = tmp_path / "err.txt"
    with open(errfile, "w") as fh:
        proc = subprocess.Popen(_fairness(tmp_path), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=fh)
        try:
            _wait_for(proc, errfile, f"({seats_done}/5 seats)")
            proc.send_signal(sig)
            proc.wait(timeout=60)
        finally:
            proc.kill()
    err = errfile.read_text()
    name = signal.Signals(sig).name
    assert proc.returncode == STATUS[sig], err
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["interrupted"] == f"interrupted by {name}"
    assert len(doc["seats"]) == seats_done
    for seat in doc["seats"]:                       # each finished seat whole
        assert {"skew_toward_reference_us", "interval_us", "races"} <= set(seat)
    cut = doc["cut"]
    assert cut["seat"] not in {s["seat"] for s in doc["seats"]}
    assert cut["so_far"]["cut"]["sweep"] in ("coarse", "fine", "tie")
    assert f"seat {cut['seat']} cut short" in err


def test_fairness_with_stdout_on_a_full_device_keeps_its_results(tmp_path):
    cmd = CLI + ["fairness", "--device", "emu://showdown?clock=virtual", "--rig", "emurig://",
                 "--json", str(tmp_path / "f.json")]
    with open("/dev/full", "w") as full:
        r = subprocess.run(cmd, cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "error: stdout: No space left on device [ENOSPC]" in r.stderr
    doc = json.loads((tmp_path / "f.json").read_text())
    assert "interrupted" not in doc and doc["within_bound"] and "tie_window_us" in doc
