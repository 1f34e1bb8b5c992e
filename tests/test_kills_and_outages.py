"""Real processes on a real clock: a run killed mid-race, and a server that goes away mid-run.

`unohil emulate --tcp` serves one unit; a relay in this process stands between a run and the
unit where a test needs to act at a known point of the run (it reads the commands going by), as
ser2net stands between a rack's units and its hosts; the last test puts the real ser2net there and
restarts it. Every assertion is on outcomes, never on how long anything took.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from unohil.protocol import Frame, StreamDecoder, catalogue as cat

ROOT = Path(__file__).resolve().parent.parent
PADDLE_A = cat.ENUM_VALUES["showdown_input"]["paddle_a"]

# A race whose last stimulus is scheduled (INJECT) 8 s ahead, at its start: a run killed after it
# leaves that stimulus pending on the unit, where the next run's race would meet it.
LATE_PRESS = """
- name: a late first press
  unit: showdown
  timing: exact
  config: {countdown_min_us: 1000000, countdown_max_us: 1000000, go_timeout_us: 10000000}
  steps:
    - load: 2
    - press: timer
      at: start + 1000
    - press: paddle_a
      at: start + 8000000
  expect:
    # green at start + 1001000 on a real clock (its timer a few us late at most)
    verdict: {loser: b, reason: first_press, reaction_a_us: {min: 6990000, max: 6999000}}
"""

QUICK_RACE = """
- name: quick race {n}
  unit: showdown
  config: {{countdown_min_us: 500000, countdown_max_us: 500000}}
  steps:
    - load: 2
    - press: timer
      at: start + 1000
    - press: paddle_a
      at: green + 100000
  expect:
    verdict: {{loser: b, reason: first_press}}
"""


class Relay:
    """A TCP relay to one upstream port: accepts a host, connects it through, and calls
    on_command(frame) for every command frame the host sends, after forwarding it. stop() closes
    the listener and both connections (a host then gets connection refused); start() listens on
    the same port again."""

    def __init__(self, upstream: tuple[str, int], on_command):
        self.upstream = upstream
        self.on_command = on_command
        self.port = 0
        self._listener = None
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self.start()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(4)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            socks, self._socks = self._socks, []
            listener, self._listener = self._listener, None
        for s in socks + ([listener] if listener is not None else []):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, listener) -> None:
        while True:
            try:
                host, _ = listener.accept()
            except OSError:
                return
            unit = socket.create_connection(self.upstream)
            with self._lock:
                self._socks += [host, unit]
            threading.Thread(target=self._pump, args=(host, unit, StreamDecoder()), daemon=True).start()
            threading.Thread(target=self._pump, args=(unit, host, None), daemon=True).start()

    def _pump(self, src, dst, decoder) -> None:
        try:
            while data := src.recv(4096):
                dst.sendall(data)
                if decoder is not None:
                    for f in decoder.feed(data):
                        if isinstance(f, Frame):
                            self.on_command(f)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def unohil(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "COLUMNS": "200"}, **kw)


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("socket://").rsplit(":", 1)
    return host, int(port)


def statuses(path: Path) -> dict[str, str]:
    doc = json.loads(path.read_text())
    return {s["name"]: s["status"] for s in doc["scenarios"]}


class OutageInRaceTwo:
    """Called with each command a run sends: at the second race's paddle press, stop() the server,
    and start() it again a second later."""

    def __init__(self, stop, start):
        self.stop, self.start = stop, start
        self.presses = 0
        self.restarted = threading.Event()

    def __call__(self, frame) -> None:
        m = frame.msg
        if m.NAME == "INJECT" and m.input == PADDLE_A:
            self.presses += 1
            if self.presses == 2:
                self.stop()
                threading.Timer(1.0, self._restart).start()

    def _restart(self) -> None:
        self.start()
        self.restarted.set()


def quick_races(tmp_path: Path) -> Path:
    path = tmp_path / "scenarios" / "quick.yaml"
    path.parent.mkdir()
    path.write_text("".join(QUICK_RACE.format(n=n) for n in range(1, 5)))
    return path


RACE_TWO_CUT = {"quick race 1": "pass", "quick race 2": "link-error", "quick race 3": "pass", "quick race 4": "pass"}


def test_a_run_killed_mid_race_leaves_the_unit_clean_for_the_next_run(emulator_process, tmp_path):
    """SIGKILL gives the run no chance to tidy up: the unit keeps the race's stimulus 8 s ahead,
    and RESET new_game keeps it too (SPEC 4.9). The next run brings the unit clean at its start."""
    _proc, (unit_url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0")
    scenario = tmp_path / "scenarios" / "late.yaml"
    scenario.parent.mkdir()
    scenario.write_text(LATE_PRESS)
    runs: list[subprocess.Popen] = []
    killed = threading.Event()

    def kill_after_the_late_press(frame) -> None:
        m = frame.msg
        if m.NAME == "INJECT" and m.input == PADDLE_A and not killed.is_set():
            killed.set()
            os.kill(runs[0].pid, signal.SIGKILL)

    relay = Relay(address(unit_url), kill_after_the_late_press)
    try:
        runs.append(unohil("run", str(scenario), "--device", relay.url, "-q"))
        out, _ = runs[0].communicate(timeout=60)
        assert killed.is_set() and runs[0].returncode == -signal.SIGKILL, out
    finally:
        relay.stop()
    result = tmp_path / "r.json"
    second = unohil("run", str(scenario), "--device", unit_url, "-q", "--json", str(result))
    out, _ = second.communicate(timeout=60)
    assert second.returncode == 0, out
    assert statuses(result) == {"a late first press": "pass"}


def test_a_server_restarted_mid_run_costs_the_race_it_cut_and_the_run_goes_on(emulator_process, tmp_path):
    """The server in front of the unit goes away in the middle of the second scenario's race and
    comes back on the same port a second later: that race is a link error naming the cause, the
    run waits out the outage (saying so) and the later scenarios pass."""
    _proc, (unit_url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0")
    path = quick_races(tmp_path)
    outage = OutageInRaceTwo(lambda: relay.stop(), lambda: relay.start())
    relay = Relay(address(unit_url), outage)
    result = tmp_path / "r.json"
    try:
        run = unohil("run", str(path), "--device", relay.url, "--json", str(result), "--outage-budget", "20s")
        out, _ = run.communicate(timeout=120)
    finally:
        relay.stop()
    assert statuses(result) == RACE_TWO_CUT, out
    doc = json.loads(result.read_text())
    error = next(s for s in doc["scenarios"] if s["name"] == "quick race 2")["results"][0]["error"]
    assert "connection refused" in error.lower(), error
    assert "connection refused" in out.lower() and "outage budget" in out, out
    assert outage.restarted.is_set() and run.returncode == 1, out


class Watched:
    """A link that calls on_command(frame) for each command it writes, after writing it."""

    def __init__(self, inner, on_command):
        self._inner = inner
        self._on_command = on_command
        self.url, self.virtual = inner.url, inner.virtual

    def write(self, data: bytes) -> None:
        self._inner.write(data)
        for f in StreamDecoder().feed(data):
            self._on_command(f)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_ser2net_restarted_mid_run_costs_the_race_it_cut_and_the_run_goes_on(tmp_path, monkeypatch):
    """The same through Debian's ser2net in front of an emulator on a pty: ser2net is stopped in
    the second scenario's race and started again on its port a second later. The run is in this
    process, its link watched where the driver opens it, to know when the race is under way."""
    test_ser2net = pytest.importorskip("test_ser2net")      # skips itself when ser2net is not installed
    from unohil.harness import Driver
    from unohil.harness.cli import main
    from unohil.harness.links import open_link

    emu = subprocess.Popen([sys.executable, "-m", "unohil.emulator", "showdown", "--pty", "--clock", "virtual"],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pty = emu.stdout.readline().strip()
    (port,) = test_ser2net._free_ports(1)
    cfg = tmp_path / "ser2net.yaml"
    cfg.write_text(test_ser2net.ser2net_config([pty], test_ser2net._free_ports(1), [port]))
    servers: list[subprocess.Popen] = []

    def start_ser2net() -> None:
        servers.append(subprocess.Popen([test_ser2net.SER2NET, "-n", "-d", "-c", str(cfg), "-P",
                                         str(tmp_path / f"ser2net{len(servers)}.pid")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def stop_ser2net() -> None:
        servers[-1].kill()
        servers[-1].wait()
    outage = OutageInRaceTwo(stop_ser2net, start_ser2net)
    url = f"socket://127.0.0.1:{port}"
    real_open = Driver.open
    # only the run's own link: run also opens an emulator of its own (the dry run of its estimate, cli/plan.py)
    monkeypatch.setattr(Driver, "open", lambda u, **kw: real_open(
        u, opener=(lambda v: Watched(open_link(v), outage)) if u == url else open_link, **kw))
    path = quick_races(tmp_path)
    result = tmp_path / "r.json"
    try:
        start_ser2net()
        test_ser2net.wait_listening([port])
        rc = main(["run", str(path), "--device", url, "-q", "--json", str(result), "--outage-budget", "20s"])
        outage.restarted.wait(10)
    finally:
        for p in servers + [emu]:
            p.terminate()
            p.wait(10)
    assert outage.restarted.is_set() and statuses(result) == RACE_TWO_CUT and rc == 1

