import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _spawn_emulator(*args: str):
    """Start `python -m unohil.emulator ...` in its own process; yield (process, first output lines)."""
    proc = subprocess.Popen([sys.executable, "-m", "unohil.emulator", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc


@pytest.fixture
def emulator_process():
    """Factory: start an emulator process and return the lines it printed (paths or host:port)."""
    procs = []

    def start(*args: str, count: int = 1):
        proc = _spawn_emulator(*args)
        procs.append(proc)
        lines = []
        deadline = time.monotonic() + 20
        while len(lines) < count:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"emulator exited: {proc.stderr.read()}")
            lines.append(line.strip())
            if time.monotonic() > deadline:
                raise RuntimeError("emulator did not start")
        return proc, lines

    yield start
    for p in procs:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def private_unit_locks(tmp_path_factory, monkeypatch):
    """Each test claims units in a lock folder of its own: tests claim made-up endpoints and
    serials (tcp 10.0.0.1:7000, showdown serial 42) that two workers would otherwise share.
    test_claims_processes.py leaves it on purpose, to run in the system's default folder."""
    monkeypatch.setenv("UNOHIL_LOCK_DIR", str(tmp_path_factory.mktemp("locks")))


@pytest.fixture(autouse=True)
def without_labgrids_pytest_plugin(monkeypatch):
    """labgrid (the optional extra) brings a pytest plugin that can start only once per process:
    the pytest runs of the plugin's tests (pytester, in this process) go without it, as the
    suite does (pyproject addopts)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", (os.environ.get("PYTEST_ADDOPTS", "") + " -p no:labgrid").strip())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The tests tests/lanes.py names are `slow`: `pytest -m "not slow"` is the fast lane without them."""
    from lanes import SLOW_TESTS
    for item in items:
        if getattr(item, "originalname", None) in SLOW_TESTS.get(item.path.name, ()):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)        # xdist's hook: a run with -p no:xdist has no such hook
def pytest_xdist_make_scheduler(config, log):
    """Under -n, tests go out one at a time as with --dist load, except the soaks: test_soak.py goes
    whole to one worker, so its totals reuse the soaks run there instead of running them again."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling
    if not hasattr(LoadScopeScheduling, "_split_scope"):
        return None     # another xdist: plain load scheduling, the soaks then run twice (slower, still right)

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.endswith("test_soak.py") else nodeid

    return Scheduling(config, log)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server for this test process (tests/postgres_server.py), or a skip saying why there is none."""
    from tests.postgres_server import Server
    server = Server()
    why = server.why_not()
    if why is not None:
        if os.environ.get("UNOHIL_REQUIRE_POSTGRES"):
            pytest.fail(f"UNOHIL_REQUIRE_POSTGRES is set: {why}")
        pytest.skip(why)
    server.start()
    yield server
    server.stop()


_STORE_NUMBER = iter(range(1, 10**6))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A new, empty store on each backend: a SQLite file, a database of its own on the suite's PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite")
    server = request.getfixturevalue("postgres_server")
    return server.create_database(f"store_{os.getpid()}_{next(_STORE_NUMBER)}")
