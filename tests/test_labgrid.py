"""A lab shared through labgrid: a real coordinator and exporter on loopback publishing three
emulated Showdown units (`unohil emulate --tcp --labgrid-exporter`) as places tagged
unit=showdown, driven through labgrid:// URLs by runners that never share a unit.

.ci/run installs the labgrid extra and sets UNOHIL_REQUIRE_LABGRID=1, so in CI a missing labgrid fails."""
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

try:
    import labgrid  # noqa: F401
except ImportError:
    if os.environ.get("UNOHIL_REQUIRE_LABGRID"):
        raise RuntimeError("labgrid is required (UNOHIL_REQUIRE_LABGRID=1) but not installed") from None
    pytest.skip("labgrid is not installed (pip install 'uno-hil[labgrid]')", allow_module_level=True)

from unohil.harness.errors import DeviceBusy, DeviceURLError
from unohil.harness.links.labgrid import Coordinator
from unohil.harness.session.driver import Driver

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SHOWDOWN = ROOT / "fixtures" / "scenarios" / "showdown"
PLACES = ("sd1", "sd2", "sd3")


def _tool(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until(what: str, check, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.2)


def _waiting(address: str) -> int:
    """How many reservations wait for a place."""
    with Coordinator("labgrid://state") as co:
        return sum(1 for r in co.call("GetReservations").reservations if r.state == 0)


def _state(address: str) -> tuple[dict, int]:
    """{place: acquired by} and the number of reservations, as the coordinator has them."""
    with Coordinator("labgrid://state") as co:
        reservations = co.call("GetReservations").reservations
        return {name: p.acquired for name, p in co.session.places.items()}, len(reservations)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lab")
    procs = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    def start(*cmd, **kw):
        p = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=kw.get("stdout", subprocess.DEVNULL),
                             stderr=subprocess.DEVNULL, text=True)
        procs.append(p)
        return p

    try:
        emu = start(sys.executable, "-m", "unohil.emulator", "showdown", "--tcp", "127.0.0.1:0", "--count", "3",
                    "--clock", "virtual", "--serial", "11", "--labgrid-exporter", str(tmp / "exporter.yaml"),
                    "--connection-log", str(tmp / "connections.log"), stdout=subprocess.PIPE)
        units = [emu.stdout.readline().strip() for _ in PLACES]
        address = f"127.0.0.1:{_free_port()}"
        env["LG_COORDINATOR"] = address
        start(_tool("labgrid-coordinator"), "-l", address)
        _wait_until("the coordinator listens", lambda: _connects(address))
        start(_tool("labgrid-exporter"), "-c", address, "--name", "rig", str(tmp / "exporter.yaml"))
        client = _tool("labgrid-client")
        for i, place in enumerate(PLACES):
            for args in (("create",), ("add-match", f"rig/showdown-{11 + i}/NetworkSerialPort"),
                         ("set-tags", "unit=showdown")):
                subprocess.run([client, "-p", place, *args], env=env, cwd=tmp, check=True, capture_output=True)
        _wait_until("the exporter publishes the units",
                    lambda: subprocess.run([client, "resources"], env=env, capture_output=True,
                                           text=True).stdout.count("NetworkSerialPort") == 3)
        yield {"address": address, "units": units, "log": tmp / "connections.log", "tmp": tmp}
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def _connects(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture
def lg(lab, monkeypatch):
    monkeypatch.setenv("LG_COORDINATOR", lab["address"])
    yield lab
    assert _state(lab["address"]) == ({p: None for p in PLACES}, 0), "every place released, every reservation gone"


def _connections(log: Path) -> dict[str, list[tuple[int, str, str]]]:
    """Per unit: (time us, connect|disconnect, the rest of the line)."""
    out: dict[str, list] = {}
    for line in log.read_text().splitlines():
        t, unit, what, rest = line.split(" ", 3)
        out.setdefault(unit, []).append((int(t), what, rest))
    return out


def _never_two_clients(log: Path) -> None:
    for unit, events in _connections(log).items():
        connected = False
        for _t, what, rest in events:
            assert "replacing" not in rest, f"{unit}: a client was kicked off: {rest}"
            assert what == ("disconnect" if connected else "connect"), f"{unit}: two clients at once: {events}"
            connected = what == "connect"


def test_reserving_by_tags_acquires_a_place_and_gives_it_back(lg):
    with Driver.open("labgrid://?unit=showdown") as d:
        assert d.kind == "showdown" and d.identity.serial in (11, 12, 13)
        acquired, reservations = _state(lg["address"])
        held = [p for p, who in acquired.items() if who]
        assert len(held) == 1 and reservations == 1
        assert d.link.holding.place == held[0]
        d.status()


def test_a_place_by_name_and_the_errors_that_name_what_is_there(lg):
    with Driver.open("labgrid://sd2") as d:
        assert d.identity.serial == 12
    with pytest.raises(DeviceURLError, match=r"place pattern nope matches nothing .*has sd1, sd2, sd3"):
        Driver.open("labgrid://nope")
    with pytest.raises(DeviceURLError, match=r"no place .* has the tags unit=flash \(places: sd1 unit=showdown"):
        Driver.open("labgrid://?unit=flash")
    with pytest.raises(DeviceURLError, match="LG_TOKEN is not set"):
        os.environ.pop("LG_TOKEN", None)
        Driver.open("labgrid://+")


def test_the_coordinators_lock_holds_across_users_and_the_local_one_on_this_host(lg, monkeypatch):
    with Driver.open("labgrid://sd1"):
        monkeypatch.setenv("LG_USERNAME", "someone-else")          # another user: the coordinator refuses
        with pytest.raises(DeviceBusy, match=r"place sd1 is acquired by [^/]+/\w+; wait for it with --wait"):
            Driver.open("labgrid://sd1")
        monkeypatch.delenv("LG_USERNAME")
        # the same user on this host reaches the place (labgrid allows it): the unit's claim refuses
        with pytest.raises(DeviceBusy, match=rf"is in use by pid {os.getpid()}"):
            Driver.open("labgrid://sd1")
        with pytest.raises(DeviceBusy, match=rf"in use by pid {os.getpid()}"):
            Driver.open(lg["units"][0])
    _never_two_clients(lg["log"])


def test_two_runners_share_three_places_waiting_their_turn_and_never_a_unit_at_once(lg, tmp_path):
    """This test holds one place; pytest -n 2 (two workers) and unohil run want the other two: one
    of the three waits, a runner that will not wait is refused, and once the test lets its place go
    the waiting one proceeds."""
    env = dict(os.environ)
    unohil = [sys.executable, "-m", "unohil.harness.cli"]
    before = {u: len(ev) for u, ev in _connections(lg["log"]).items()}
    held = Driver.open("labgrid://?unit=showdown")
    held_place, held_serial = held.link.holding.place, held.link.serial_url
    scenarios = [str(SHOWDOWN / "false_start.yaml"), str(SHOWDOWN / "releases.yaml")]
    pytest_run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "-p", "no:labgrid",
         "--hil-device", "labgrid://?unit=showdown", "--hil-wait", "300", *scenarios],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = subprocess.Popen(unohil + ["run", "-q", "--device", "labgrid://?unit=showdown", "--wait", "300", *scenarios],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        try:
            _wait_until("the runners hold the two other places",
                        lambda: all(_state(lg["address"])[0].values()), timeout_s=180)
            # one that will not wait fails at start, saying who holds the places (the waiting runner's
            # reservation is older than its own: a place that comes free goes to the waiting runner first)
            refused = subprocess.run(unohil + ["hello", "--device", "labgrid://?unit=showdown"], cwd=ROOT, env=env,
                                     capture_output=True, text=True, timeout=60)
            _wait_until("the third runner waits", lambda: _waiting(lg["address"]), timeout_s=180)
        finally:
            held.close()        # the waiting runner gets this place (or the first a runner lets go)
        out_pytest, _ = pytest_run.communicate(timeout=400)
        out_run, _ = run.communicate(timeout=400)
    finally:
        for p in (pytest_run, run):
            if p.poll() is None:
                p.kill()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert re.search(r"no place with unit=showdown is free: sd1 \(acquired by .*\).*--wait SECONDS",
                     refused.stderr), refused.stderr
    assert pytest_run.returncode == 0, out_pytest
    # every item of the two files passed, or skipped as another form's (SD-3's unit that throws nothing)
    assert re.search(r"^[1-9]\d* passed(, \d+ skipped)? in", out_pytest, re.M) and "failed" not in out_pytest, out_pytest
    assert run.returncode == 0, out_run
    assert re.search(r"^[1-9]\d* passed, 0 failed", out_run, re.M), out_run
    _never_two_clients(lg["log"])
    events = {u: ev[before.get(u, 0):] for u, ev in _connections(lg["log"]).items()}
    connects = sum(1 for ev in events.values() for _t, w, _r in ev if w == "connect")
    assert connects == 4, events        # this test, two workers, the run: the refused one never connected
    # the hand-off: the test's disconnect to the waiting runner's connect on that unit
    ev = events[held_serial]
    assert [w for _t, w, _r in ev] == ["connect", "disconnect", "connect", "disconnect"], ev
    print(f"\nhand-off from this test to the waiting runner on {held_place}: {(ev[2][0] - ev[1][0]) / 1000:.0f} ms")
