"""--console URL: a unit's debug text read beside its link (harness/links/console.py), here from a
stand-in that prints a line every 50 ms on a TCP port, beside an emulated unit on the real clock."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

from unohil.harness.links.console import ConsoleReader
from test_faults import GOOD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def talker(stop: threading.Event) -> int:
    """A TCP port that sends 'tick N' lines to whoever connects, until stop."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve():
        conn, _ = server.accept()
        n = 0
        while not stop.is_set():
            try:
                conn.sendall(f"tick {n}\r\n".encode())
            except OSError:
                break                   # the run ended and closed its end
            n += 1
            time.sleep(0.05)
        conn.close()
        server.close()
    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def test_console_lines_are_stamped_when_read_and_split_at_newlines():
    a, b = socket.socketpair()
    reader = ConsoleReader(a, "pair")
    b.sendall(b"first\r\nsec")
    time.sleep(0.1)
    b.sendall(b"ond\n\nthird")
    b.close()
    deadline = time.monotonic() + 5
    while len(reader.lines()) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = reader.lines()
    assert [ln.text for ln in lines] == ["first", "second"]     # "third" never ended: no line yet
    assert lines[1].host_us - lines[0].host_us >= 90_000       # each stamped at the read that completed it
    got, cursor = reader.after(1)
    assert [ln.text for ln in got] == ["second"] and cursor == 2


def test_a_run_with_console_has_the_lines_of_each_race(tmp_path):
    stop = threading.Event()
    port = talker(stop)
    (tmp_path / "race.yaml").write_text(GOOD)
    try:
        r = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "run", str(tmp_path / "race.yaml"), "--device",
                            "emu://showdown?clock=real", "--console", f"socket://127.0.0.1:{port}", "--json",
                            str(tmp_path / "r.json")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    finally:
        stop.set()
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    race = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["results"][0]
    ticks = [c for c in race["console"] if c["text"].startswith("tick ")]
    assert len(ticks) > 10                                     # a 2 s race, a line every 50 ms
    numbers = [int(c["text"].split()[1]) for c in ticks]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert all(a["dev_us"] <= b["dev_us"] for a, b in zip(ticks, ticks[1:]))


def test_console_mistakes_are_usage_errors(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "unohil.harness.cli", "run", "--device", "emu://showdown",
                               *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    r = run("--console", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "--console" in r.stderr and "cannot open" in r.stderr, r.stderr
    r = run("--console", "rfc2217://x:1")
    assert r.returncode == 2 and "give socket://HOST:PORT or the path" in r.stderr, r.stderr
    r = run("--console", str(tmp_path), "--console", str(tmp_path))
    assert r.returncode == 2 and "2 --console for 1 device(s)" in r.stderr, r.stderr


def test_conform_puts_the_console_lines_of_each_check_in_its_json_and_junit(tmp_path):
    """conform --console: each check's record holds the lines read while it ran, stamped in host µs and, once
    the time sync check has run, in device µs through the clock sync; JUnit's system-out says them too."""
    import xml.etree.ElementTree as ET
    stop = threading.Event()
    port = talker(stop)
    try:
        r = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "conform", "--device",
                            "emu://showdown?clock=real", "--console", f"socket://127.0.0.1:{port}", "--no-scenarios",
                            "-q", "--json", str(tmp_path / "c.json"), "--junit", str(tmp_path / "c.xml"),
                            "--store", "off"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    finally:
        stop.set()
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr
    checks = json.loads((tmp_path / "c.json").read_text())["checks"]
    lines = [(i, c) for i, check in enumerate(checks) for c in check.get("console", [])]
    numbers = [int(c["text"].split()[1]) for _, c in lines]
    assert len(numbers) > 20 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))   # none lost, none twice
    assert len({i for i, _ in lines}) > 5                      # spread over the checks that ran while they came
    assert all(a["host_us"] <= b["host_us"] for (_, a), (_, b) in zip(lines, lines[1:]))
    # device time from the time sync check on (before it there is no mapping, and the line says so: None)
    first_synced = next(k for k, (_, c) in enumerate(lines) if c["dev_us"] is not None)
    synced = [c for _, c in lines[first_synced:]]
    assert len(synced) > 3 and all(c["dev_us"] is not None for c in synced)
    assert all(c["dev_us"] is None for _, c in lines[:first_synced])
    # the emulated unit's clock runs at the host's: device minus host time is the same for every line, to within
    # the sync's uncertainty and a reader thread's delay
    offsets = [c["dev_us"] - c["host_us"] for c in synced]
    assert max(offsets) - min(offsets) < 20_000, (min(offsets), max(offsets))
    first_check = checks[lines[0][0]]["name"]
    case = next(tc for tc in ET.parse(tmp_path / "c.xml").iter("testcase") if tc.get("name") == first_check)
    assert f"tick {numbers[0]}" in case.findtext("system-out")


def test_a_line_read_before_the_clock_sync_is_placed_through_it(tmp_path):
    """On the virtual clock: a unit's banner read before the handshake waits for the clock sync, then has the
    device time the unit had when it was read (to within the sync's uncertainty), not after the unit's first
    reply; console_log and the trace say the same, and the trace has it once."""
    from unohil.emulator.inprocess import VirtualLink
    from unohil.harness.session.driver import Driver
    link = VirtualLink("showdown", boot_time_us=3_000_000)
    pipe_out, pipe_in = os.pipe()
    link.console = ConsoleReader(lambda n: os.read(pipe_out, n), "pipe", now_us=link.now_us)
    try:
        os.write(pipe_in, b"banner\n")
        deadline = time.monotonic() + 10
        while not link.console.lines() and time.monotonic() < deadline:
            time.sleep(0.01)
        (banner,) = link.console.lines()
        with Driver.open(link.url, opener=lambda url: link, trace_dir=tmp_path) as d:
            (logged,) = d.console_log
            est = d.clock.estimate
        assert logged["dev_us"] is not None
        assert abs(logged["dev_us"] - link.device_time_at(banner.host_us)) <= est.uncertainty_us + 1
    finally:
        os.close(pipe_in)
    (trace,) = tmp_path.glob("*.jsonl")
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [rec for rec in records if rec["dir"] == "console"] == [logged]
    identity = next(rec for rec in records if rec.get("type") == "IDENTITY")
    assert logged["dev_us"] <= identity["dev_us"]       # the virtual unit answers in no time
