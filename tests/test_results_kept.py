"""Results kept whatever ends a command (issue 31), with real processes: conform stopped by SIGINT,
SIGTERM or SIGHUP (also started in the background, SIGINT inherited ignored) leaves JSON and JUnit
holding every check that finished; a console that fails (a closed pipe, a full device) stops only
the console; Ctrl-C during start-up is one line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from test_outputs import scenario_file

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "unohil.harness.cli"]
REAL = "emu://showdown?clock=real"
MARKS = ("pass", "FAIL", "skip", "ERROR", "INTERRUPTED")


def _conform(tmp_path: Path) -> list[str]:
    return CLI + ["conform", "--device", REAL, "--no-scenarios", "--json", str(tmp_path / "c.json"),
                  "--junit", str(tmp_path / "c.xml")]


def _check_lines(text: str) -> list[tuple[str, str]]:
    """(status, "section: name") of each check the console announced as it finished."""
    out = []
    for line in text.splitlines():
        mark, _, rest = line.partition("  ")
        if mark in MARKS and rest:
            out.append((mark.lower(), rest.split(": the unit does not have")[0]))
    return out


def _wait_lines(path: Path, n: int, proc) -> None:
    deadline = time.monotonic() + 120          # a generous bound for a loaded host, never asserted on
    while len(_check_lines(path.read_text() if path.exists() else "")) < n:
        assert proc.poll() is None, "conform ended before the signal"
        assert time.monotonic() < deadline, f"fewer than {n} checks announced"
        time.sleep(0.02)


def _kept(tmp_path: Path, announced: list[tuple[str, str]]) -> dict:
    """The JSON and the JUnit agree, and hold at least every check announced before the signal."""
    doc = json.loads((tmp_path / "c.json").read_text())
    checks = [(c["status"], f"{c['section']}: {c['name']}") for c in doc["checks"]]
    assert checks[:len(announced)] == announced
    suites = ET.parse(tmp_path / "c.xml").getroot()
    assert int(suites.get("tests")) == len(checks)
    cases = [f"{s.get('name')}: {c.get('name')}" for s in suites.iter("testsuite") for c in s.iter("testcase")]
    assert sorted(cases) == sorted(name for _, name in checks)
    return doc


def _signalled(tmp_path: Path, after: int, *sigs: int) -> tuple[subprocess.Popen, list, str]:
    """conform, sent sigs once `after` checks were announced: the process, those checks, its stderr."""
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        proc = subprocess.Popen(_conform(tmp_path), cwd=ROOT, stdout=fh, stderr=subprocess.PIPE, text=True)
        try:
            _wait_lines(out, after, proc)
            announced = _check_lines(out.read_text())
            for sig in sigs:
                proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    return proc, announced, err


@pytest.mark.parametrize("sig, after, status", [(signal.SIGINT, 3, 130), (signal.SIGTERM, 17, 143),
                                                (signal.SIGHUP, 29, 129)])
def test_conform_stopped_by_a_signal_keeps_every_finished_check(tmp_path, sig, after, status):
    out = tmp_path / "out.txt"
    proc, announced, err = _signalled(tmp_path, after, sig)
    name = signal.Signals(sig).name
    assert proc.returncode == status, err
    assert err.startswith(f"{name}: stopping after the check in progress")
    doc = _kept(tmp_path, announced)
    assert doc["interrupted"] == f"interrupted by {name}" and doc["verdict"] != "CONFORMS"
    assert f"(interrupted by {name})" in out.read_text().splitlines()[-1]
    assert "interrupted" not in {c["status"] for c in doc["checks"]}       # one signal: the check in progress ends


def test_a_second_signal_keeps_the_check_it_cut_short_as_interrupted(tmp_path):
    proc, announced, err = _signalled(tmp_path, 10, signal.SIGTERM, signal.SIGTERM)
    assert proc.returncode == 143, err
    doc = _kept(tmp_path, announced)
    statuses = [c["status"] for c in doc["checks"]]
    # the second signal came while a check ran (it is kept, marked), or in the gap between two
    assert statuses.count("interrupted") <= 1 and "interrupted" not in statuses[:-1]
    if statuses[-1] == "interrupted":
        assert doc["checks"][-1]["detail"] == "interrupted by SIGTERM: cut short"
        errors = [c for c in ET.parse(tmp_path / "c.xml").getroot().iter("testcase") if c.find("error") is not None]
        assert [c.get("name") for c in errors] == [doc["checks"][-1]["name"]]


def test_conform_started_in_the_background_still_stops_on_sigint(tmp_path):
    """`cmd &` in a non-interactive shell starts cmd with SIGINT ignored; conform installs its own handler."""
    seen = subprocess.run(["sh", "-c", "grep SigIgn: /proc/self/status & wait"], capture_output=True, text=True)
    assert int(seen.stdout.split()[1], 16) & (1 << (signal.SIGINT - 1)), "this sh starts `&` jobs as they are"
    out = tmp_path / "out.txt"
    script = '"$@" > "$OUT" 2> "$OUT.err" & echo $!; wait $!'
    shell = subprocess.Popen(["sh", "-c", script, "sh", *_conform(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "OUT": str(out)})
    try:
        pid = int(shell.stdout.readline())
        _wait_lines(out, 5, shell)
        announced = _check_lines(out.read_text())
        os.kill(pid, signal.SIGINT)
        shell.communicate(timeout=60)
    finally:
        shell.kill()
    assert shell.returncode == 130, Path(f"{out}.err").read_text()
    assert _kept(tmp_path, announced)["interrupted"] == "interrupted by SIGINT"


# ---- a failing console stops only the console ----

def _scenarios(tmp_path: Path, n: int) -> Path:
    return scenario_file(tmp_path, *((f"win {i}", 500_000, 1) for i in range(n)))


def _run(tmp_path: Path, n: int, device: str) -> list[str]:
    return CLI + ["run", str(_scenarios(tmp_path, n)), "--device", device, "--format", "lines",
                  "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")]


def _all_kept(tmp_path: Path, n: int) -> None:
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [s["name"] for s in doc["scenarios"]] == [f"win {i}" for i in range(n)]
    assert doc["summary"]["passed"] == n
    assert ET.parse(tmp_path / "r.xml").getroot().get("tests") == str(n)


def test_run_piped_to_head_keeps_its_results_and_says_why_it_exits_2(tmp_path):
    """`unohil run ... | head -1`: the reader goes after one line; the real-clock run goes on to the
    end (later lines meet a closed pipe), writes r.json and r.xml, and says so on stderr."""
    proc = subprocess.Popen(_run(tmp_path, 4, REAL), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().startswith("pass      win 0")
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 2, err
    assert err.splitlines() == ["error: stdout: Broken pipe: its reader went away (`| head`) [EPIPE]; the console "
                                "output stopped there, the command went on and wrote its results files"]
    _all_kept(tmp_path, 4)


def test_run_with_stdout_on_a_full_device_keeps_its_results(tmp_path):
    with open("/dev/full", "w") as full:
        r = subprocess.run(_run(tmp_path, 3, "emu://showdown?clock=virtual"), cwd=ROOT, stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == ["error: stdout: No space left on device [ENOSPC]; the console output stopped "
                                     "there, the command went on and wrote its results files"]
    _all_kept(tmp_path, 3)


def _can_mount_tmpfs() -> bool:
    import shutil
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs a mount namespace to mount a small tmpfs")
def test_run_with_stdout_on_a_full_tmpfs_keeps_its_results(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    script = (f"mount -t tmpfs -o size=64k tmpfs {full} && (cat /dev/zero > {full}/filler 2>/dev/null; true) && "
              f'exec "$@" > {full}/console.txt')
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", *_run(tmp_path, 3, "emu://showdown?clock=virtual")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "error: stdout: No space left on device [ENOSPC]" in r.stderr
    _all_kept(tmp_path, 3)


# ---- Ctrl-C during start-up ----

def _caught(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(x for x in status.splitlines() if x.startswith("SigCgt:")).split()[1], 16)


@pytest.mark.parametrize("command", [["run"], ["conform", "--device", REAL]])
def test_ctrl_c_during_start_up_is_one_line_and_130(tmp_path, command):
    """The signal comes as soon as the command line's main has begun (it catches SIGHUP first thing),
    while the command's modules load."""
    proc = subprocess.Popen(CLI + command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _caught(proc.pid) & (1 << (signal.SIGHUP - 1)):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.001)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (130, "interrupted by SIGINT\n")


PROJECT_FILES = ("/harness/", "/protocol/", "/emulator/", "/fixtures/")


def _early_outcome(command: list[str], delay_s: float) -> str:
    """SIGINT delay_s after the command was spawned: what came of it."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(delay_s)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    if (proc.returncode, err) == (130, "interrupted by SIGINT\n"):
        return "one line"
    if (proc.returncode, err) == (-signal.SIGINT, ""):
        return "before the interpreter's handler"       # the default action: ended by the signal, silently
    # The interpreter's own start-up (site, the import machinery finding the package): before any code of
    # ours ran. A traceback through a file of the project is one the project could have prevented.
    assert "Traceback" in err and not any(part in err for part in PROJECT_FILES), err
    return "the interpreter's start-up"


@pytest.mark.parametrize("script", [True, False], ids=["unohil script", "python -m"])
def test_ctrl_c_in_the_first_milliseconds_is_one_line_or_the_interpreters_own(script):
    """SIGINT at several moments of a command's first ~40 ms (a loaded host stretches them): from the first
    line of the project's code on (harness/__init__.py, before any command module loads) the answer is one
    line and 130; before it only the interpreter's own start-up runs (its traceback or its silent default)."""
    command = [str(Path(sys.executable).parent / "unohil"), "run"] if script else CLI + ["run"]
    if script and not Path(command[0]).exists():
        pytest.skip("no unohil script beside this interpreter")
    seen = [_early_outcome(command, ms / 1000) for ms in (0, 2, 5, 10, 15, 20, 25, 30, 40, 60, 80, 120)]
    assert "one line" in seen, seen


INTERRUPTED_INSIDE_EXTENSION_CODE = """
import argparse, ctypes, os, signal, sys
from unohil.harness.cli import app

def command(_args):
    # What an extension module does at import (yaml's Cython code runs Python text with PyRun_String):
    # the signal comes while that text runs
    run = ctypes.pythonapi.PyRun_String
    run.restype, run.argtypes = ctypes.py_object, [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object]
    names = {"os": os, "signal": signal}
    run(b"os.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(10**7): pass\\n", 257, names, names)

class Parser(argparse.ArgumentParser):
    def parse_args(self, argv):
        args = real(argv).parse_args(argv)
        args.func = command
        return args

real, app.build_parser = app.build_parser, lambda argv: Parser()
sys.exit(app.main(["validate", "fixtures/scenarios"]))
"""


def test_ctrl_c_while_extension_code_runs_is_one_line_and_130(tmp_path):
    """CPython marks a KeyboardInterrupt that leaves code run by PyRun_String (yaml's extension at import)
    and, run with -m, then ends the process by SIGINT whatever main returned (a CI run saw it once in 12
    tries). The command line's SIGINT is its own exception, so the status is the one it says."""
    (tmp_path / "interrupted_inside.py").write_text(INTERRUPTED_INSIDE_EXTENSION_CODE)
    r = subprocess.run([sys.executable, "-m", "interrupted_inside"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (r.returncode, r.stderr) == (130, "interrupted by SIGINT\n")


# ---- output-path mistakes: one message each, before anything runs ----

@pytest.fixture
def mistakes(tmp_path) -> Path:
    (tmp_path / "f.xml").write_text("")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    return tmp_path


@pytest.mark.parametrize("option, path, says", [
    ("--json", "{d}/f.xml/r.json", "{d}/f.xml is not a directory"),
    ("--junit", "/dev/null/x", "/dev/null is not a directory"),
    ("--json", "{d}/" + "a" * 300, "a name too long for the file system (300 bytes; 255 at most)"),
    ("--json", "{d}/loop1", "a loop of symbolic links"),
    ("--trace", "{d}/f.xml/t", "{d}/f.xml is not a directory"),
    ("--trace", "{d}/f.xml", "is a file, give a directory"),
])
def test_an_output_path_mistake_is_one_message_and_exit_2(mistakes, capsys, option, path, says):
    from unohil.harness.cli.app import main
    path, says = path.format(d=mistakes), says.format(d=mistakes)
    assert main(["run", "-q", option, path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"error: {option} {path}: ") and err.rstrip().endswith(says)


@pytest.mark.parametrize("argv", [["run", "--json", ""], ["conform", "--device", "emu://showdown", "--junit", ""],
                                  ["report", "r.json", "--output", ""]])
def test_an_empty_output_name_is_a_usage_error(capsys, argv):
    from unohil.harness.cli.app import main
    assert main(argv) == 2
    option = argv[-2]
    assert capsys.readouterr() == ("", f"error: {option} '': an empty file name; give a name, or leave {option} out\n")


# ---- a trace cut by a full disk is kept to its last record ----

def test_a_cut_trace_keeps_every_whole_record_and_says_why_it_stopped(tmp_path):
    """A disk that fills while a trace's buffer is flushed leaves half a record at the end: it is
    cut off, the whole ones stay, and a closing record says why the trace stopped there."""
    from unohil.harness.session.trace import TraceWriter
    w = TraceWriter(tmp_path, "unit")
    for i in range(5):
        w.note(i, f"record {i}")
    w._fh.flush()
    with open(w._part, "a") as fh:
        fh.write('{"host_us":5,"dir":"no')          # what a flush cut by ENOSPC leaves
    w._fail(OSError(28, "No space left on device"))
    lines = [json.loads(x) for x in w.path.read_text().splitlines()]
    assert [x["text"] for x in lines[:5]] == [f"record {i}" for i in range(5)]
    assert lines[5] == {"host_us": 4, "dir": "note", "text": "the trace stopped here: No space left on device",
                        "stopped": "No space left on device", "records": 5}
    assert len(lines) == 6 and not w._part.exists() and w.records == 5


# ---- memory: a long run's results file costs a scenario's memory, not the run's ----

def test_a_long_runs_peak_memory_grows_little_per_race(tmp_path):
    """Peak RSS of `unohil run --json --junit` (the results files written at the end included), 5,000
    and then 10,000 virtual-clock races in scenarios of 500: the growth per race stays under a generous
    1.5 KB (56 KB when the whole JSON document was built at once, 2.7 KB while every race stayed in
    memory until the run ended; ~0.3 KB with each scenario's races written to the result store as it
    ends; tools/memory_bench.py gives the figure). The base run is long enough to fill the driver's
    bounded history of recent frames (20,000), which would otherwise count as growth."""
    from tools.memory_bench import peak_kb
    small, _, _, _ = peak_kb(sys.executable, tmp_path, 5_000, 500)
    big, _, out_json, out_xml = peak_kb(sys.executable, tmp_path, 10_000, 500)
    assert (big - small) / 5_000 < 1.5
    from unohil.harness.report.results_json import read_results
    doc = read_results(out_json)
    assert doc["summary"]["races"] == 10_000 and doc["summary"]["passed"] == 20
    assert sum(len(s["results"]) for s in doc["scenarios"]) == 10_000
    assert all(len(r["events"]) > 0 for s in doc["scenarios"] for r in s["results"])
    assert ET.parse(out_xml).getroot().get("tests") == "20"


# ---- record --from-trace keeps the unit's order ----

def test_a_recording_from_a_faulty_lines_trace_has_the_units_order(tmp_path):
    """Behind corrupt and dropped frames, events recovered by EVENT_RESEND arrive late (and some twice):
    each recorded piece holds them once, in event_seq order, and the Flash recording validates."""
    from unohil.harness.cli.app import main
    from unohil.harness.record.segments import segments_of
    from unohil.harness.scenarios.library import library_paths
    from unohil.harness.scenarios.load import load_paths
    url = "emu://flash?clock=virtual&seed=1&faults=corrupt=1e-3,dropframe=1e-3"
    main(["run", *map(str, library_paths("flash")), "--device", url, "--trace", str(tmp_path / "t"), "-q"])
    (trace,) = (tmp_path / "t").iterdir()
    records = [json.loads(x) for x in trace.read_text().splitlines()]
    arrived = [r["fields"]["event_seq"] for r in records if r.get("dir") == "rx" and "event_seq" in r.get("fields", {})]
    assert arrived != sorted(arrived), "this seed's faults recover no event out of order: pick another"
    for seg in segments_of(records):
        seqs = [f.msg.event_seq for f in seg.events]
        assert seqs == sorted(set(seqs))
    assert main(["record", "--from-trace", str(trace), "-o", str(tmp_path / "rec.yaml")]) == 0
    assert load_paths([str(tmp_path / "rec.yaml")])


def test_a_races_packed_frames_read_back_as_they_came(monkeypatch):
    """A finished race keeps its frames packed (run/packed.py); read back, each is the frame the
    link gave, with its host and device times, also behind a faulty line (recovered events)."""
    import unohil.harness.run.runner as runner_module
    from unohil.harness.run.packed import PackedFrames, pack
    from unohil.harness.scenarios.library import library_paths
    from unohil.harness.scenarios.load import load_paths
    from unohil.harness.session.driver import Driver
    given = []

    def keeping(frames):
        packed = pack(frames)
        given.append((list(frames), packed))
        return packed
    monkeypatch.setattr(runner_module, "pack", keeping)
    with Driver.open("emu://launcher?clock=virtual&seed=2&faults=corrupt=1e-3,dropframe=1e-3") as d:
        runner = runner_module.Runner(d)
        for sc in load_paths(library_paths("launcher"))[:12]:
            runner.run(sc)
    assert sum(isinstance(p, PackedFrames) for _, p in given) >= 10
    for frames, packed in given:
        assert [(f.msg, f.seq, f.time_us, f.host_us, f.dev_us) for f in packed] == \
               [(f.msg, f.seq, f.time_us, f.host_us, f.dev_us) for f in frames]
