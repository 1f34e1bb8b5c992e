"""Claims between real processes: units that are free are never refused (emulators started by two
processes, a unit on a reused pty path, bench's own emulators), and a unit that a run holds is
refused under every spelling of its address without disturbing the run."""
import json
import os
import subprocess
import sys
import time

import pytest

from unohil.harness.errors import DeviceBusy
from unohil.harness.links import claim
from unohil.harness.links.endpoint import endpoint_of
from unohil.harness.session.driver import Driver

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# four short races (about 4 s each on a real-clock pty): the library's, as a user runs it
SUBSET = ["fixtures/scenarios/showdown", "-k", "clean and win or false and start and by", "--format", "lines"]
SUBSET_PASSED = "4 passed, 0 failed, 0 skipped"


def _env(lock_dir: str | None) -> dict:
    """The environment of a CLI process: this test's lock folder, or none (the system's default),
    and no xdist worker name (it would name the holder 'pytest worker gwN')."""
    env = {k: v for k, v in os.environ.items() if k not in ("UNOHIL_LOCK_DIR", "PYTEST_XDIST_WORKER")}
    if lock_dir is not None:
        env["UNOHIL_LOCK_DIR"] = lock_dir
    return env


def _cli(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_held(url: str, pid: int, run: subprocess.Popen) -> None:
    """Until the run (pid) holds the endpoint of url: its name in the lock file, read as a refused
    opener reads it (taking the lock here would refuse the run instead)."""
    path = claim._Lock(endpoint_of(url)).path
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.poll() is None:
        try:
            if json.loads(path.read_text() or "{}").get("pid") == pid:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"the run never held {url}: {_finish(run)}")


def _freed(path: str) -> None:
    """Until the kernel has let go of a closed pty (it releases the number a moment after the last
    close, and removes its /dev/pts entry then)."""
    deadline = time.monotonic() + 10
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


def _pty_reused(emulator_process, path: str):
    """A new emulator process whose pty is path, freed a moment ago (the kernel gives the lowest free
    pty number; another process may take it first: then try again)."""
    _freed(path)
    for _ in range(8):
        proc, (got,) = emulator_process("showdown", "--pty")
        if got == path:
            return proc
        _stop(proc)
        _freed(got)
    pytest.skip(f"{path} was taken by another process each time it was freed: no reused pty to test with")


def test_three_emulated_units_two_processes_and_a_reused_pty_each_run_the_library_at_once(emulator_process):
    """With no lock folder set: the system's default, shared by every run on this host, as a user's
    CI job has it (the suite's other tests each lock in a folder of their own, conftest.py, so none of
    them holds anything here). Before: every emulated unit was serial 1, so the three refused each
    other, and the reused path remembered the unit that had been on it."""
    env = _env(None)
    first, (reused_path,) = emulator_process("showdown", "--pty")
    hello = _cli(["hello", "--device", reused_path], env)
    assert _finish(hello, 60)[0] == 0
    _stop(first)
    third = _pty_reused(emulator_process, reused_path)
    _a, (path_a,) = emulator_process("showdown", "--pty")
    _b, (path_b,) = emulator_process("showdown", "--pty")
    runs = {path: _cli(["run", *SUBSET, "--device", path], env) for path in (path_a, path_b, reused_path)}
    results = {path: _finish(run) for path, run in runs.items()}
    for path, (rc, out, err) in results.items():
        assert rc == 0 and SUBSET_PASSED in out, (path, out, err)
        assert "locked by its endpoint only" not in err, err     # each unit has a serial of its own
    assert third.poll() is None


def test_bench_runs_while_another_process_holds_an_emulated_showdown(emulator_process, tmp_path):
    """bench's own emulators have serials of their own: the held one's is not theirs."""
    _proc, (path,) = emulator_process("showdown", "--pty")
    with Driver.open(path) as held:
        bench = _cli(["bench", "--kind", "showdown", "--races", "3", "--json", str(tmp_path / "bench.json")],
                     _env(os.environ["UNOHIL_LOCK_DIR"]))
        rc, out, err = _finish(bench, 180)
        assert rc == 0, err
        held.status()
    assert json.loads((tmp_path / "bench.json").read_text())


def test_every_spelling_of_a_held_unit_is_refused_and_the_holding_run_goes_on(emulator_process, tmp_path):
    env = _env(os.environ["UNOHIL_LOCK_DIR"])
    log = tmp_path / "connections.log"
    _t, (tcp_url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0", "--connection-log", str(log))
    _p, (pty_path,) = emulator_process("showdown", "--pty")
    link = tmp_path / "ttyUNIT"
    link.symlink_to(pty_path)
    port = int(tcp_url.rsplit(":", 1)[1])
    runs = {url: _cli(["run", *SUBSET, "--device", url], env) for url in (tcp_url, pty_path)}
    try:
        for url, run in runs.items():
            _wait_held(url, run.pid, run)
        spellings = {tcp_url: [f"socket://0.0.0.0:{port}", f"socket://localhost:{port}",
                               f"socket://[::ffff:127.0.0.1]:{port}", f"rfc2217://127.0.0.1:{port}?ign_set_control"],
                     pty_path: [str(link)]}
        for url, others in spellings.items():
            for other in others:
                with pytest.raises(DeviceBusy) as err:
                    Driver.open(other)
                assert err.value.holder["pid"] == runs[url].pid and err.value.holder["url"] == url, other
        # what a user reads: the holder, the endpoint it holds, the ways out
        rc, _out, err = _finish(_cli(["hello", "--device", f"socket://0.0.0.0:{port}"], env), 60)
        assert rc == 2
        assert f"the unit at localhost:{port} is in use by pid {runs[tcp_url].pid}" in err
        assert "run fixtures/scenarios/showdown -k" in err and f"as {tcp_url}" in err
        assert "--wait SECONDS" in err and "UNOHIL_LOCK_DIR=FOLDER" in err
        rc, _out, err = _finish(_cli(["hello", "--device", str(link)], env), 60)
        assert rc == 2 and f"the unit at {pty_path} is in use by pid {runs[pty_path].pid}" in err
    finally:
        results = {url: _finish(run) for url, run in runs.items()}
    for url, (rc, out, err) in results.items():
        assert rc == 0 and SUBSET_PASSED in out, (url, out, err)
    connections = log.read_text()
    assert connections.count(" connect ") == 1 and "replacing" not in connections, connections


def test_a_run_says_once_on_stderr_that_a_unit_sharing_a_serial_is_locked_by_endpoint_only(emulator_process):
    _a, (path_a,) = emulator_process("showdown", "--pty", "--serial", "5")
    _b, (path_b,) = emulator_process("showdown", "--pty", "--serial", "5")
    with Driver.open(path_a):
        rc, out, err = _finish(_cli(["hello", "--device", path_b], _env(os.environ["UNOHIL_LOCK_DIR"])), 60)
    assert rc == 0 and "showdown unit, serial 5" in out
    assert err.count(f"{path_b}: another showdown unit reports serial 5 at once, held by pid {os.getpid()}") == 1, err
    assert "locked by its endpoint only" in err
