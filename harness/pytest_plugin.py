"""pytest plugin: scenario files as test items, device fixtures, device pools.

Registered through the `pytest11` entry point, so it is loaded wherever uno-hil is installed, but
it takes only what it is asked to: YAML files become scenario items only where the `hil_scenarios`
ini option or `--hil-scenarios` names them (paths, or glob patterns matched against the path from
the rootdir); elsewhere it collects nothing. Each scenario is an item; each race of a sweep is an
item of its own. Everything the plugin adds is in the `hil` namespace: its options are `--hil-X`
where the CLI says `--X` (`--hil-device`, `--hil-trace`, `--hil-host-timed`), its markers are
`hil_<tag>` (`false-start` -> `-m hil_false_start`), `hil_<kind>`, `hil_scenario` and
`hil_unit(kind)`, all registered, so `--strict-markers` works and no other plugin's marker (say
pytest-timeout's `timeout`) is ever put on an item by a scenario tag.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from _pytest._code.code import ExceptionChainRepr, ReprFileLocation, ReprTracebackNative

from unohil.harness.errors import HarnessError, ScenarioError
from unohil.harness.outcome import Outcome
from unohil.harness.run.pool import DevicePool
from unohil.harness.run.prompts import Answer, Prompt, answer_line, prompt_line
from unohil.harness.run.results import ScenarioResult, failure_lines
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_file, loads
from unohil.harness.scenarios.units import TAGS, UNITS
from unohil.harness.session.outage import DEFAULT_BUDGET_US, Outage, parse_budget
from unohil.harness.session.prepare import prepare
from unohil.harness.text import printable

MARK_PREFIX = "hil_"


def marker_name(word: str) -> str:
    """The marker of a scenario tag or unit kind: hil_ and the word with '-' as '_'."""
    return MARK_PREFIX + word.replace("-", "_")


def pytest_addoption(parser):
    group = parser.getgroup("unohil", "uno-hil hardware-in-the-loop")
    group.addoption("--hil-scenarios", action="append", default=[], metavar="PATH|GLOB",
                    help="collect the YAML files under this path (or matching this glob, from the rootdir) as uno-hil "
                         "scenarios; repeatable, added to the ini option hil_scenarios. Without either, no YAML "
                         "file is collected")
    group.addoption("--hil-device", action="append", default=[], metavar="URL",
                    help="device URL (repeatable: a pool; `unohil run --device`). Default: an in-process emulator "
                         "per unit kind")
    group.addoption("--hil-device-kind", default="showdown", choices=sorted(UNITS),
                    help="unit kind of the `device` fixture when a test has no hil_unit marker (default showdown)")
    group.addoption("--hil-trace", metavar="DIR", default=None,
                    help="write a JSON Lines trace per device (`unohil run --trace`)")
    group.addoption("--hil-host-timed", action="store_true",
                    help="press with host timing (INPUT) even if the device has test mode (`unohil run --host-timed`)")
    group.addoption("--hil-wait", type=float, default=0.0, metavar="SECONDS",
                    help="how long a worker waits for a free device of the pool (default 0: with fewer devices "
                         "than xdist workers the session stops at start)")
    group.addoption("--hil-outage-budget", type=parse_budget, default=DEFAULT_BUDGET_US, metavar="TIME",
                    help="how long a lost link is waited for before the races after it become link errors "
                         "(30s, 500ms, 2min; default 30s)")
    group.addoption("--hil-attended", action="store_true",
                    help="a person is at the unit: run the scenarios that wait for one, their prompts shown on "
                         "the terminal (`unohil run --attended`); without it they are skipped")
    group.addoption("--hil-rig", metavar="URL", default=None,
                    help="rig mode (`unohil run --rig`): the presses go through this rig wired to the one "
                         "--hil-device, at rig times; emurig://?OPTIONS wires an emulated rig to an emulated unit "
                         "(docs/rig.md). Default: the ini option hil_rig, else none")
    group.addoption("--hil-pattern", action="append", dest="hil_scenarios", help=argparse.SUPPRESS)  # deprecated
    parser.addini("hil_scenarios", "paths or globs (from the rootdir) of uno-hil scenario files; none by default",
                  type="linelist", default=[])
    parser.addini("hil_pattern", "deprecated: a glob of scenario files; use hil_scenarios", default=None)
    parser.addini("hil_rig", "rig mode: the URL of the rig wired to the one device (--hil-rig)", default=None)


def pytest_configure(config):
    config.addinivalue_line("markers", "hil_scenario: a uno-hil scenario item")
    config.addinivalue_line("markers", "hil_unit(kind): the unit kind the `device` fixture connects to")
    for kind in UNITS:
        config.addinivalue_line("markers", f"{marker_name(kind)}: a uno-hil {kind} scenario")
    for tag in TAGS:
        config.addinivalue_line("markers", f"{marker_name(tag)}: uno-hil scenario tag {tag}")
    config._unohil_scenarios = _scenario_globs(config)
    config._unohil_rig = _rig_url(config)
    if config.getoption("--hil-attended") and _workers(config):
        # a worker's output is captured until its test ends: a prompt would be seen only once it ran out
        raise pytest.UsageError("--hil-attended shows each prompt on this terminal as its wait starts, which xdist "
                                "workers cannot: run it without -n (one person, one unit at a time)")
    _check_pool_size(config)


def _rig_url(config) -> str | None:
    """The rig of rig mode (--hil-rig, else the ini's hil_rig), which is wired to exactly one --hil-device."""
    rig = config.getoption("--hil-rig") or config.getini("hil_rig") or None
    if rig is not None and len(config.getoption("--hil-device")) != 1:
        raise pytest.UsageError("--hil-rig (hil_rig) needs one --hil-device: the unit the rig is wired to")
    if rig is not None and config.getoption("--hil-host-timed"):
        raise pytest.UsageError("--hil-rig and --hil-host-timed: in rig mode the rig presses the unit's buttons at "
                                "rig times, the host sends no INPUT; give one of them")
    return rig


def _scenario_globs(config) -> list[str]:
    """Where scenario files are, as globs. A path (no glob characters) becomes the absolute glob of
    the file or of everything under the directory: from the rootdir in the ini, from the invocation
    directory on the command line. A glob is matched as written against the path from the rootdir
    (or the absolute path, when it is absolute)."""
    entries = [(config.rootpath, e) for e in config.getini("hil_scenarios")]
    old = config.getini("hil_pattern")
    if old:
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(
            "ini option hil_pattern is deprecated: use hil_scenarios"), stacklevel=2)
        entries.append((config.rootpath, old))
    if "--hil-pattern" in config.invocation_params.args:
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(
            "--hil-pattern is deprecated: use --hil-scenarios"), stacklevel=2)
    entries += [(config.invocation_params.dir, e) for e in config.getoption("hil_scenarios") or []]
    out = []
    for base, entry in entries:
        if any(c in entry for c in "*?["):
            out.append(entry)           # matched against the path from the rootdir, or the absolute path
            continue
        path = (Path(base) / entry).resolve()
        out += [str(path)] if path.suffix in (".yaml", ".yml") else [str(path / "*")]
    return out


def _is_scenario_file(config, file_path: Path) -> bool:
    rel = os.path.relpath(file_path, config.rootpath)
    full = str(file_path.resolve())
    return any(fnmatch.fnmatch(full, g) if os.path.isabs(g) else fnmatch.fnmatch(rel, g)
               for g in config._unohil_scenarios)


def _workers(config) -> int:
    """How many xdist workers this (controller) process starts: 0 without xdist or in a worker."""
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no":
        return 0
    n = 0
    for tx in getattr(config.option, "tx", None) or []:
        count, star, _ = tx.partition("*")
        n += int(count) if star and count.isdigit() else 1
    return n


def _check_pool_size(config) -> None:
    """Each worker claims its own device of each kind it uses for the whole session: with fewer
    devices than workers, some would fail every test they get. Stop before any starts (unless
    --hil-wait lets the extra workers wait for a device to come free)."""
    urls, workers = config.getoption("--hil-device"), _workers(config)
    if not urls or not workers or config.getoption("--hil-wait") > 0:
        return
    short = _short_kinds(urls, workers)
    if workers <= len(urls) and not short:
        return
    what = (f"{len(urls)} device(s)" if workers > len(urls) else
            ", ".join(f"{n} {kind} unit(s)" for kind, n in short.items()))
    raise pytest.UsageError(f"{workers} xdist workers but --hil-device gives {what}: each worker claims a unit of "
                            f"its own for the session; give as many --hil-device URLs as workers (-n), fewer "
                            f"workers, or --hil-wait SECONDS to let the extra workers wait for one")


def _short_kinds(urls: list[str], workers: int) -> dict[str, int]:
    """The kinds of emu:// units (their kind is in the URL) of which there are fewer than workers,
    counting every other URL (a serial port, a socket: any kind) as possibly one of them."""
    known: dict[str, int] = {}
    other = 0
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme == "emu" and parts.netloc in UNITS:
            known[parts.netloc] = known.get(parts.netloc, 0) + 1
        else:
            other += 1
    return {kind: n for kind, n in known.items() if n + other < workers}


def pytest_collect_file(parent, file_path: Path):
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    if _is_scenario_file(parent.config, file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ScenarioCollectError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def collect(self):
        try:
            scenarios = load_file(self.path)
        except ScenarioError as exc:
            raise ScenarioCollectError(str(exc)) from None
        for sc in scenarios:
            # one item per sweep point, unless the scenario compares its races (compare: needs them all)
            sweep = len(sc.races) > 1 and any(k != "race" for k in sc.races[0]) and not sc.compare
            if sweep:
                for env in sc.races:
                    label = ",".join(f"{k}={v}" for k, v in env.items() if k != "race")
                    yield ScenarioItem.from_parent(self, name=f"{sc.name}[{label}#{env['race']}]",
                                                   scenario=sc.with_races([env]))
            else:
                yield ScenarioItem.from_parent(self, name=sc.name, scenario=sc)


class ScenarioCollectError(Exception):
    pass


def first_problem(res: ScenarioResult) -> str:
    """The first line of what went wrong: the diff's first line, else the error (the short summary's text)."""
    for r in res.races:
        for line in r.failures or ([r.error] if r.error else []):
            return printable(line)
    return printable(res.error or str(res.status))


class ScenarioFailureRepr(ExceptionChainRepr):
    """A scenario's failure as pytest shows it: the diff and trace as plain lines (no traceback), and
    as its crash line (the `-r` short summary, the JUnit message) the diff's first line. An exception
    repr of native lines, so xdist carries it from the workers whole."""

    def __init__(self, lines: list[str], scenario, message: str):
        crash = ReprFileLocation(str(scenario.file), scenario.line, message)
        super().__init__([(ReprTracebackNative([line + "\n" for line in lines]), crash, None)])


class ScenarioFailed(Exception):
    def __init__(self, result: ScenarioResult):
        super().__init__(result.status)
        self.result = result


class ScenarioItem(pytest.Item):
    fixturenames = ()       # other plugins (labgrid's) read this of every item; a scenario uses no fixture

    def __init__(self, *, scenario, **kw):
        super().__init__(**kw)
        self.scenario = scenario
        self.add_marker("hil_scenario")
        self.add_marker(marker_name(scenario.unit))
        for tag in scenario.tags:
            name = marker_name(tag)
            if tag not in TAGS:         # a free tag: registered as it is met, so --strict-markers takes it
                self.config.addinivalue_line("markers", f"{name}: uno-hil scenario tag {tag} (a free tag)")
            self.add_marker(name)

    def runtest(self):
        pool: DevicePool = self.config._unohil_pool
        driver = pool.get(self.scenario.unit)
        runner = Runner(driver, host_timed=self.config.getoption("--hil-host-timed"),
                        outage=Outage(self.config.getoption("--hil-outage-budget")),
                        attended=self.config.getoption("--hil-attended"), prompts=_TerminalPrompts(self.config))
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
            res = excinfo.value.result
            lines = [printable(x) for x in failure_lines(res, max_races=len(res.races), trace_tail=20)]
            return ScenarioFailureRepr(lines, self.scenario, first_problem(res))
        if isinstance(excinfo.value, ScenarioCollectError):
            return str(excinfo.value)
        if isinstance(excinfo.value, HarnessError):
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.scenario.line - 1, f"scenario: {self.name}"


class _TerminalPrompts:
    """A wait for a person's prompt, on pytest's terminal (not captured): a line as the wait starts, one
    as it ends."""

    def __init__(self, config):
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")

    def shown(self, prompt: Prompt) -> None:
        self._say(prompt_line(prompt))

    def answered(self, answer: Answer) -> None:
        self._say(answer_line(answer))

    def _say(self, line: str) -> None:
        if self.reporter is not None:
            self.reporter.ensure_newline()
            self.reporter.write_line(line)
            self.reporter.flush()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    config._unohil_pool = DevicePool(config.getoption("--hil-device"), trace_dir=config.getoption("--hil-trace"),
                                     wait_s=config.getoption("--hil-wait"), owner=f"pytest worker {worker}",
                                     rig=config._unohil_rig)


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
    """A connected driver for the test's unit kind (@pytest.mark.hil_unit("flash"), else --hil-device-kind),
    reset to a new game, its switches where a booted unit has them."""
    marker = request.node.get_closest_marker("hil_unit")
    if marker is None and request.node.get_closest_marker("unit") is not None:
        marker = request.node.get_closest_marker("unit")
        warnings.warn(pytest.PytestDeprecationWarning('@pytest.mark.unit(kind) is deprecated: use '
                                                      '@pytest.mark.hil_unit(kind)'))
    kind = marker.args[0] if marker else request.config.getoption("--hil-device-kind")
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
        request.node.stash.setdefault(RACES_RUN, []).append(res)
        return res.races[0]
    return run


RACES_RUN = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A hand-written test that failed after race(): its races' verdicts, failures and trace excerpt
    in the report, as a scenario item shows them."""
    outcome = yield
    report = outcome.get_result()
    runs = item.stash.get(RACES_RUN, None)
    if report.when == "call" and report.failed and runs:
        text = "\n".join(printable(line) for res in runs
                         for line in failure_lines(res, max_races=len(res.races), trace_tail=20, passed_too=True))
        report.sections.append(("uno-hil races", text))
