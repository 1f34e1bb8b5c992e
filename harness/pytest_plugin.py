"""pytest plugin: scenario files as test items, device fixtures, device pools.

Registered through the `pytest11` entry point, so it is active wherever uno-hil
is installed. Scenario files are YAML files whose path matches --hil-pattern
(default `*scenarios/*.yaml`, i.e. anything under a directory called
`scenarios`). Each scenario is an item; each race of a sweep is an item of its
own. Tags become markers (`false-start` -> `-m false_start`), as does the unit kind.
"""
from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError, ScenarioError
from harness.outcome import Outcome
from harness.run.pool import DevicePool
from harness.run.results import ScenarioResult, failure_lines
from harness.run.runner import Runner
from harness.scenarios.load import loads
from harness.scenarios.units import TAGS, UNITS
from harness.session.prepare import prepare


def pytest_addoption(parser):
    group = parser.getgroup("unohil", "uno-hil hardware-in-the-loop")
    group.addoption("--device", action="append", default=[], metavar="URL",
                    help="device URL (repeatable: a pool). Default: an in-process emulator per unit kind")
    group.addoption("--device-kind", default="showdown", choices=sorted(UNITS),
                    help="unit kind of the `device` fixture when a test has no unit marker")
    group.addoption("--hil-trace", metavar="DIR", default=None, help="write a JSON Lines trace per device")
    group.addoption("--hil-pattern", default=None, metavar="GLOB",
                    help="which YAML files are scenario files (default: ini hil_pattern, '*scenarios/*.yaml')")
    group.addoption("--hil-wait", type=float, default=0.0, metavar="SECONDS",
                    help="how long a worker waits for a free device of the pool (default 0: fail at once)")
    group.addoption("--hil-host-timed", action="store_true", help="press with host timing even with test mode")
    parser.addini("hil_pattern", "glob of scenario files, matched against the path", default="*scenarios/*.yaml")


def pytest_configure(config):
    for tag in TAGS:
        config.addinivalue_line("markers", f"{tag.replace('-', '_')}: uno-hil scenario tag {tag}")
    for kind in UNITS:
        config.addinivalue_line("markers", f"{kind}: a uno-hil {kind} scenario or test")
    config.addinivalue_line("markers", "unit(kind): the unit kind the `device` fixture connects to")


def _pattern(config) -> str:
    return config.getoption("--hil-pattern") or config.getini("hil_pattern")


def pytest_collect_file(parent, file_path: Path):
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    rel = os.path.relpath(file_path, parent.config.rootpath)
    if fnmatch.fnmatch(rel, _pattern(parent.config)) or fnmatch.fnmatch(str(file_path), _pattern(parent.config)):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ScenarioCollectError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def collect(self):
        try:
            scenarios = loads(self.path.read_text(encoding="utf-8"), str(self.path))
        except ScenarioError as exc:
            raise ScenarioCollectError(str(exc)) from None
        for sc in scenarios:
            sweep = len(sc.races) > 1 and any(k != "race" for k in sc.races[0])
            if sweep:
                for env in sc.races:
                    label = ",".join(f"{k}={v}" for k, v in env.items() if k != "race")
                    yield ScenarioItem.from_parent(self, name=f"{sc.name}[{label}#{env['race']}]",
                                                   scenario=sc.with_races([env]))
            else:
                yield ScenarioItem.from_parent(self, name=sc.name, scenario=sc)


class ScenarioCollectError(Exception):
    pass


class ScenarioFailed(Exception):
    def __init__(self, result: ScenarioResult):
        super().__init__(result.status)
        self.result = result


class ScenarioItem(pytest.Item):
    fixturenames = ()       # other plugins (labgrid's) read this of every item; a scenario uses no fixture

    def __init__(self, *, scenario, **kw):
        super().__init__(**kw)
        self.scenario = scenario
        for tag in scenario.tags:
            self.add_marker(tag.replace("-", "_"))
        self.add_marker(scenario.unit)

    def runtest(self):
        pool: DevicePool = self.config._unohil_pool
        driver = pool.get(self.scenario.unit)
        runner = Runner(driver, host_timed=self.config.getoption("--hil-host-timed"))
        res = runner.run(self.scenario)
        self.user_properties.append(("device", res.device))
        for key, stats in res.latency_summary().items():
            self.user_properties.append((f"{key}_p50", stats["p50"]))
        if res.status is Outcome.SKIP:
            pytest.skip(res.error)
        if res.status is not Outcome.PASS:
            raise ScenarioFailed(res)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ScenarioFailed):
            return "\n".join(failure_lines(excinfo.value.result, max_races=len(excinfo.value.result.races), trace_tail=20))
        if isinstance(excinfo.value, ScenarioCollectError):
            return str(excinfo.value)
        if isinstance(excinfo.value, HarnessError):
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.scenario.line - 1, f"scenario: {self.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    config._unohil_pool = DevicePool(config.getoption("--device"), trace_dir=config.getoption("--hil-trace"),
                                     wait_s=config.getoption("--hil-wait"), owner=f"pytest worker {worker}")


def pytest_sessionfinish(session):
    pool = getattr(session.config, "_unohil_pool", None)
    if pool is not None:
        pool.close()


# ---- fixtures for hand-written tests ----

@pytest.fixture(scope="session")
def device_pool(request) -> DevicePool:
    """The session's device pool; pool.get(kind) gives this worker's device of that kind."""
    return request.config._unohil_pool


def _driver(request, kind: str):
    d = request.config._unohil_pool.get(kind)
    prepare(d)
    return d


@pytest.fixture
def device(request):
    """A connected driver for the test's unit kind (@pytest.mark.unit("flash"), else --device-kind),
    reset to a new game, its switches where a booted unit has them."""
    marker = request.node.get_closest_marker("unit")
    kind = marker.args[0] if marker else request.config.getoption("--device-kind")
    return _driver(request, kind)


@pytest.fixture
def showdown(request):
    return _driver(request, "showdown")


@pytest.fixture
def flash(request):
    return _driver(request, "flash")


@pytest.fixture
def launcher(request):
    return _driver(request, "launcher")


@pytest.fixture
def race(request):
    """Run one race from Python: race("showdown", steps=[...], config={...}, seed=7).

    Steps are written as in a scenario file. Returns the RaceResult: verdicts, events,
    latency, timing errors; assert on it as you like.
    """
    def run(kind: str, steps: list, *, config: dict | None = None, seed: int | None = None,
            verdicts: int = 1, end: str | None = None, timeout_us: int | None = None):
        doc = {"name": "race", "unit": kind, "steps": steps, "expect": {"count": {UNITS[kind].verdict: {"min": 0}}}}
        if config:
            doc["config"] = config
        if seed is not None:
            doc["seed"] = seed
        if end:
            doc["end"] = end
        if timeout_us:
            doc["timeout_us"] = timeout_us
        (sc,) = loads(yaml.safe_dump(doc, sort_keys=False), f"race() in {request.node.nodeid}")
        sc.min_verdicts = verdicts
        d = _driver(request, kind)
        res = Runner(d).run(sc)
        return res.races[0]
    return run
