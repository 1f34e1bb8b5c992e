"""Results files that never destroy what their path names, and are never lost: a FIFO, a device or
a symlink stays what it is; a full disk or a failing trace costs that output alone; conflicting
outputs are refused before the run; SIGINT and SIGTERM still leave JSON and JUnit for what finished."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from unohil.protocol import FrameError, StreamDecoder

from unohil.harness.cli.app import main
from unohil.harness.report.files import file_mode
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.harness.session.driver import Driver, input_id
from unohil.harness.session.trace import TraceWriter
from test_harness_scenarios import GOOD

ROOT = Path(__file__).resolve().parent.parent

# A false start by A late in a long countdown: its stimulus waits in the unit for seconds.
LATE_FALSE_START = """
- name: {name}
  unit: showdown
  seed: 5
  config: {{countdown_min_us: 10000000, countdown_max_us: 10000000}}
  steps:
    - load: 2
    - press: timer
      at: start + 1000
    - press: paddle_a
      at: start + 9000000
  expect:
    verdict: {{loser: a, reason: false_start}}
"""


def scenario_file(tmp_path: Path, *scenarios: tuple[str, int, int], tail: str = "") -> Path:
    """A file of scenarios (name, countdown in us, races): each race a clean win for A."""
    path = tmp_path / "s.yaml"
    path.write_text("".join(clean_win(*sc) for sc in scenarios) + tail)
    return path


def clean_win(name: str, countdown_us: int, races: int) -> str:
    """GOOD (one clean win for A) as an item of a list of scenarios, with its countdown, run races times."""
    text = GOOD.replace("name: clean win", f"name: {name}").replace("2000000", str(countdown_us))
    if races > 1:
        text += f"sweep: {{n: {list(range(races))}}}\n"
    first, *rest = text.strip("\n").splitlines()
    return f"- {first}\n" + "".join(f"  {line}\n" for line in rest)


@pytest.fixture
def good(tmp_path) -> Path:
    return scenario_file(tmp_path, ("first", 2_000_000, 1), ("second", 2_000_000, 3))


def _read_fifo(path: Path, into: list) -> threading.Thread:
    def read():
        with open(path, encoding="utf-8") as fh:
            into.append(fh.read())
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


# ---- outputs that destroy files ----

def test_a_fifo_is_written_through_not_replaced(tmp_path, good):
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = _read_fifo(fifo, got)
    assert main(["run", str(good), "-q", "--json", str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [s["status"] for s in json.loads(got[0])["scenarios"]] == ["pass", "pass"]


def test_a_fifo_nothing_reads_is_one_clear_error_not_a_hang(tmp_path, good, capsys):
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    assert main(["run", str(good), "-q", "--junit", str(fifo)]) == 2
    assert f"--junit {fifo}: a FIFO that nothing reads" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node takes root")
def test_a_device_node_is_written_through_not_replaced(tmp_path, good):
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))      # a /dev/null of the test's own
    assert main(["run", str(good), "-q", "--json", str(node), "--junit", str(tmp_path / "r.xml")]) == 0
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert ET.parse(tmp_path / "r.xml").getroot().get("tests") == "2"


def test_a_symlink_stays_a_link_and_its_target_gets_the_results(tmp_path, good):
    (tmp_path / "store").mkdir()
    target = tmp_path / "store" / "results.json"
    target.write_text("old results\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    dangling = tmp_path / "latest.xml"
    dangling.symlink_to(tmp_path / "store" / "results.xml")     # its target does not exist yet
    assert main(["run", str(good), "-q", "--json", str(link), "--junit", str(dangling)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert dangling.is_symlink()
    assert json.loads(target.read_text())["summary"]["passed"] == 2
    assert ET.parse(tmp_path / "store" / "results.xml").getroot().get("tests") == "2"
    assert sorted(os.listdir(tmp_path / "store")) == ["results.json", "results.xml"]     # no temp files left


def test_stdout_redirected_to_a_file_gets_the_results_after_the_console_text(tmp_path, good):
    """/dev/stdout names the shell's open file: a rename would take its name from what the command
    printed; it is appended to instead."""
    log = tmp_path / "log.txt"
    with open(log, "w") as out:
        inode = os.fstat(out.fileno()).st_ino
        r = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "run", str(good), "-q", "--junit", "/dev/stdout"],
                           cwd=ROOT, stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    assert os.stat(log).st_ino == inode
    console, xml = text.split("<?xml", 1)
    assert "2 passed, 0 failed" in console
    assert ET.fromstring("<?xml" + xml).get("tests") == "2"


def test_results_files_have_normal_permissions_like_traces(tmp_path, good):
    out_json, out_xml = tmp_path / "r.json", tmp_path / "r.xml"
    out_json.write_text("{}")
    os.chmod(out_json, 0o600)           # as earlier versions left it
    old = os.umask(0o022)
    try:
        assert main(["run", str(good), "-q", "--json", str(out_json), "--junit", str(out_xml),
                     "--trace", str(tmp_path / "t")]) == 0
    finally:
        os.umask(old)
    (trace,) = (tmp_path / "t").glob("*.jsonl")
    modes = {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in (out_json, out_xml, trace)}
    assert set(modes.values()) == {0o644}, modes


def test_the_mode_follows_the_umask():
    old = os.umask(0o027)
    try:
        assert file_mode() == 0o640
    finally:
        os.umask(old)


# ---- results lost when an output fails ----

@pytest.fixture
def full_device(tmp_path) -> Path:
    """A device that fails every write with ENOSPC, as a full disk does: a /dev/full of the test's own
    where it can make one (as root, a harness that renamed over its outputs would replace the
    system's /dev/full), else /dev/full itself."""
    if os.geteuid() != 0:
        return Path("/dev/full")
    node = tmp_path / "full"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    return node


def test_a_full_device_costs_the_json_alone(tmp_path, good, capsys, full_device):
    out_xml = tmp_path / "r.xml"
    assert main(["run", str(good), "-q", "--json", str(full_device), "--junit", str(out_xml)]) == 2
    err = capsys.readouterr().err
    assert f"error: --json {full_device}: No space left on device" in err
    assert ET.parse(out_xml).getroot().get("tests") == "2"
    assert os.stat(full_device).st_rdev == os.makedev(1, 7)


def test_conform_too_writes_each_output_on_its_own(tmp_path, capsys, full_device):
    out_xml = tmp_path / "c.xml"
    assert main(["conform", "--device", "emu://showdown?clock=virtual", "--no-scenarios", "-q",
                 "--json", str(full_device), "--junit", str(out_xml)]) == 2
    assert f"error: --json {full_device}: No space left on device" in capsys.readouterr().err
    assert int(ET.parse(out_xml).getroot().get("tests")) > 40


def _can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs a mount namespace to mount a small tmpfs "
                                                   "(test_a_full_device_costs_the_json_alone covers ENOSPC)")
def test_a_full_disk_costs_its_outputs_alone_and_never_the_run(tmp_path):
    """A 64 KiB tmpfs, filled: the JSON and the trace written there fail, each reported on one line;
    the run completes and the JUnit elsewhere is whole."""
    good = scenario_file(tmp_path, ("first", 2_000_000, 1), ("second", 2_000_000, 20))
    full = tmp_path / "full"
    full.mkdir()
    out_xml = tmp_path / "r.xml"
    script = (f"mount -t tmpfs -o size=64k tmpfs {full} && mkdir {full}/t && "
              f"(cat /dev/zero > {full}/filler 2>/dev/null; true) && "
              f'exec "$0" -m unohil.harness.cli run {good} --json {full}/r.json --junit {out_xml} --trace {full}/t')
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script, sys.executable], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    errors = [x for x in r.stderr.splitlines() if x.startswith("error: ")]
    assert errors[0] == f"error: --json {full}/r.json: No space left on device", r.stderr
    assert re.fullmatch(f"error: --trace {full}/t/emu_showdown_clock_virtual.jsonl: No space left on device "
                        r"\(the trace stopped; kept to its last whole record, \d+ records(, and a closing record "
                        r"says why\)|; no room left to say why in it\))", errors[1]), r.stderr
    assert len(errors) == 2
    assert "2 passed, 0 failed, 0 skipped; 21 races" in r.stdout
    suite = ET.parse(out_xml).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")


def test_a_trace_write_error_stops_that_trace_never_the_run(tmp_path, full_device):
    """The trace's file fails every write (it is a full device): the races still run and pass, the
    writer says why its trace stopped, and the trace is kept with a closing record saying why."""
    (sc,) = loads(clean_win("many", 2_000_000, 30), "t.yaml")
    with Driver.open("emu://showdown?clock=virtual", trace_dir=tmp_path) as d:
        d.trace._fh.close()
        d.trace._fh = open(full_device, "w", encoding="utf-8", buffering=1 << 16)
        res = Runner(d).run(sc)
        trace = d.trace
    assert res.status == "pass" and len(res.races) == 30
    assert trace.failure == (f"{trace.path}: No space left on device (the trace stopped; kept to its last whole "
                             f"record, {trace.records} records, and a closing record says why)")
    *kept, closing = [json.loads(x) for x in trace.path.read_text().splitlines()]
    assert kept[0]["type"] == "HELLO"       # what the test flushed before the device failed every write
    assert closing["stopped"] == "No space left on device" and closing["records"] == len(kept) == trace.records


def test_two_devices_with_one_url_get_a_trace_each(tmp_path, good, capsys):
    url = "emu://showdown?clock=virtual"
    traces = tmp_path / "t"
    assert main(["run", str(good), "-q", "--device", url, "--device", url, "--trace", str(traces),
                 "--json", str(tmp_path / "r.json")]) == 0
    assert "2 passed" in capsys.readouterr().out
    files = sorted(p.name for p in traces.iterdir())
    assert files == ["emu_showdown_clock_virtual-2.jsonl", "emu_showdown_clock_virtual.jsonl"]
    for name in files:
        recs = [json.loads(x) for x in (traces / name).read_text().splitlines()]
        hellos = [r for r in recs if r.get("type") == "HELLO"]
        assert len(hellos) == 1                 # one connection's handshake: not two interleaved
        seqs = [r["seq"] for r in recs if r.get("dir") == "tx"]
        assert seqs == sorted(seqs)             # one driver's commands, in the order it sent them


def test_traces_in_one_directory_never_share_a_file(tmp_path):
    a, b = TraceWriter(tmp_path, "unit"), TraceWriter(tmp_path, "unit")
    stale = tmp_path / "other.jsonl.part"       # left by a killed run: not written into
    stale.write_text("old\n")
    c = TraceWriter(tmp_path, "other")
    for w in (a, b, c):
        w.note(1, w.path.name)
        w.close()
    assert [a.path.name, b.path.name, c.path.name] == ["unit.jsonl", "unit-2.jsonl", "other-2.jsonl"]
    assert stale.read_text() == "old\n"
    assert json.loads(b.path.read_text())["text"] == "unit-2.jsonl"


@pytest.mark.parametrize("flags, words", [
    (["--json", "{d}/r", "--junit", "{d}/r"], "--json {d}/r and --junit {d}/r are the same place"),
    (["--json", "{d}/out", "--trace", "{d}/out"], "--json {d}/out and --trace {d}/out are the same place"),
    (["--junit", "{d}/link", "--json", "{d}/r.json"], "--json {d}/r.json and --junit {d}/link are the same place"),
    (["--junit", "{d}/sub"], "--junit {d}/sub: is a directory"),
])
def test_conflicting_outputs_are_usage_errors_before_the_run(tmp_path, good, capsys, flags, words):
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "r.json")
    before = sorted(os.listdir(tmp_path))
    assert main(["run", str(good), "-q", *(f.format(d=tmp_path) for f in flags)]) == 2
    captured = capsys.readouterr()
    assert words.format(d=tmp_path) in captured.err
    assert "races in" not in captured.out           # nothing ran
    assert sorted(os.listdir(tmp_path)) == before   # nothing written, no directory made


# ---- interrupt-safe results ----

class Tap:
    """A TCP relay between the harness and an emulator process that tells the test what the harness
    sends, so a signal comes at a known point of the run (not after a sleep)."""

    def __init__(self, target: str):
        host, port = target.removeprefix("socket://").rsplit(":", 1)
        self.target = (host, int(port))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"socket://127.0.0.1:{self.server.getsockname()[1]}"
        self.decoder = StreamDecoder()
        self.sent: list = []            # the harness's commands so far
        self.changed = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        client, _ = self.server.accept()
        unit = socket.create_connection(self.target)
        threading.Thread(target=self._pipe, args=(unit, client, False), daemon=True).start()
        self._pipe(client, unit, True)

    def _pipe(self, src: socket.socket, dst: socket.socket, from_harness: bool) -> None:
        try:
            while data := src.recv(4096):
                dst.sendall(data)
                if from_harness:
                    with self.changed:
                        self.sent += [f.msg for f in self.decoder.feed(data, 0) if not isinstance(f, FrameError)]
                        self.changed.notify_all()
        except OSError:
            pass                # the other direction closed both
        for sock in (src, dst):
            sock.close()

    def wait_for(self, pred, timeout: float = 20) -> None:
        """Until pred is true of the commands the harness has sent."""
        with self.changed:
            assert self.changed.wait_for(lambda: pred(self.sent), timeout), "the harness did not send it"


def presses_of_a(sent: list) -> int:
    return sum(1 for m in sent if m.NAME == "INJECT" and m.input == input_id("showdown", "paddle_a"))


def _start_run(tmp_path: Path, scenarios: Path, url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "unohil.harness.cli", "run", str(scenarios), "--device", url,
         "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_line(stream, start: str) -> str:
    while True:
        line = stream.readline()
        assert line, f"ended before a line starting {start!r}"
        if line.startswith(start):
            return line


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_after_the_race_in_progress_and_keeps_every_result(tmp_path, emulator_process, sig, status):
    """On a real-clock unit: the signal comes once the first scenario's line is out and the second
    has begun; the second stops after its race in progress, the third never starts; JSON and JUnit
    hold the first two."""
    _proc, (unit,) = emulator_process("showdown", "--tcp", "127.0.0.1:0")
    tap = Tap(unit)
    scenarios = scenario_file(tmp_path, ("first", 500_000, 1), ("second", 500_000, 20), ("third", 500_000, 1))
    proc = _start_run(tmp_path, scenarios, tap.url)
    try:
        assert _wait_for_line(proc.stdout, "pass ").split()[:2] == ["pass", "first"]
        tap.wait_for(lambda sent: presses_of_a(sent) == 2)      # the second scenario's first race
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    name = signal.Signals(sig).name
    assert proc.returncode == status, err
    assert f"{name}: stopping after the race in progress" in err
    assert f"interrupted by {name}: 1 scenario(s) not run" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["interrupted"] == {"signal": name, "not_run": 1}
    assert doc["summary"]["passed"] == 1 and doc["summary"]["interrupted"] == 1
    first, second = doc["scenarios"]
    assert (first["name"], first["status"], first["races"]) == ("first", "pass", 1)
    assert (second["name"], second["status"], second["error"]) == ("second", "interrupted", f"interrupted by {name}")
    assert second["races"] == 1 and second["results"][0]["status"] == "pass"    # the race the signal came in
    suite = ET.parse(tmp_path / "r.xml").getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert sorted(cases) == ["first", "second"] and suite.get("errors") == "1"
    assert cases["first"].find("error") is None
    assert cases["second"].find("error").get("message") == f"interrupted by {name}"


def test_a_second_signal_abandons_the_race_and_cancels_the_units_stimuli(tmp_path, emulator_process):
    """Two SIGTERMs while a 10 s countdown runs on a separate emulator process, with a press 9 s in
    already handed to the unit: the run stops at once, the results are written, and the unit no longer
    holds that press."""
    _proc, (url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0")
    tap = Tap(url)
    scenarios = scenario_file(tmp_path, ("first", 500_000, 1), tail=LATE_FALSE_START.format(name="second"))
    proc = _start_run(tmp_path, scenarios, tap.url)
    try:
        assert _wait_for_line(proc.stdout, "pass ").split()[:2] == ["pass", "first"]
        tap.wait_for(lambda sent: presses_of_a(sent) == 2)      # the press 9 s in, handed over
        proc.send_signal(signal.SIGTERM)
        assert _wait_for_line(proc.stderr, "SIGTERM:").startswith("SIGTERM: stopping after the race in progress")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    doc = json.loads((tmp_path / "r.json").read_text())
    first, second = doc["scenarios"]
    assert first["status"] == "pass"
    assert second["status"] == "interrupted" and "race in progress was abandoned" in second["error"]
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "r.xml").getroot().iter("testcase")}
    assert "interrupted by SIGTERM" in cases["second"].find("error").get("message")
    with Driver.open(url) as d:
        assert d.status().pending_injects == 0


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_outside_a_run_is_one_line_and_its_exit_status(sig, status):
    """A command with no results to keep (hello), waiting for a unit that never answers: the signal
    is one line on stderr and 128 + its number."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        proc = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "hello", "--device",
                                 f"socket://127.0.0.1:{server.getsockname()[1]}"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            server.settimeout(60)
            conn, _ = server.accept()           # connected: HELLO is waiting for its reply
            proc.send_signal(sig)
            _out, err = proc.communicate(timeout=20)
            conn.close()
        finally:
            proc.kill()
    assert (proc.returncode, err) == (status, f"interrupted by {signal.Signals(sig).name}\n")
