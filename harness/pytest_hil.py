"""The pytest plugin's work, once a session asks for uno-hil (pytest_plugin.py decides when): scenario
files as items, the device pool, what the fixtures give, the checks of the hil options.

Scenario items: each scenario is an item; each race of a sweep is an item of its own. A scenario or a
fixture for a unit kind the pool lacks is skipped, with `unohil run`'s reason.
"""
from __future__ import annotations

import fnmatch
import os
import time
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from _pytest._code.code import ExceptionChainRepr, ReprFileLocation, ReprTracebackNative

from unohil.harness.errors import HarnessError, PoolExhausted, ScenarioError
from unohil.harness.outcome import Outcome
from unohil.harness.pytest_plugin import RACES_RUN, marker_name
from unohil.harness.run.pool import DevicePool, unserved_reason
from unohil.harness.run.prompts import Answer, Prompt, answer_line, prompt_line
from unohil.harness.run.results import ScenarioResult, failure_lines
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_file, loads
from unohil.harness.scenarios.units import TAGS, UNITS
from unohil.harness.session.outage import Outage
from unohil.harness.session.prepare import prepare
from unohil.harness.text import printable


def activate(config) -> None:
    """What the session's hil options ask for, checked, and the markers of the unit kinds and tags: once,
    from pytest_configure when an option or ini key asks for uno-hil, else when a fixture first does."""
    if getattr(config, "_unohil_scenarios", None) is not None:
        return
    for kind in UNITS:
        config.addinivalue_line("markers", f"{marker_name(kind)}: a uno-hil {kind} scenario")
    for tag in TAGS:
        config.addinivalue_line("markers", f"{marker_name(tag)}: uno-hil scenario tag {tag}")
    kind = config.getoption("--hil-device-kind")
    if kind not in UNITS:
        raise pytest.UsageError(f"--hil-device-kind {kind}: not a unit kind (one of {', '.join(UNITS)})")
    config._unohil_rig = _rig_url(config)
    if config.getoption("--hil-attended") and _workers(config):
        # a worker's output is captured until its test ends: a prompt would be seen only once it ran out
        raise pytest.UsageError("--hil-attended shows each prompt on this terminal as its wait starts, which xdist "
                                "workers cannot: run it without -n (one person, one unit at a time)")
    _check_pool_size(config)
    config._unohil_started = time.time()
    from unohil.harness.store.config import configured
    config._unohil_store = configured(config.getoption("--hil-store"))
    config._unohil_keep = bool(config.getoption("--hil-json") or config._unohil_store)    # results kept for them
    config._unohil_scenarios = _scenario_globs(config)


def pool(config) -> DevicePool:
    """The session's device pool, made when first needed (it opens a device only when asked for one)."""
    if getattr(config, "_unohil_pool", None) is None:
        activate(config)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        config._unohil_pool = DevicePool(config.getoption("--hil-device"), trace_dir=config.getoption("--hil-trace"),
                                         wait_s=config.getoption("--hil-wait"), owner=f"pytest worker {worker}",
                                         open_unit=_rig_opener(config._unohil_rig))
    return config._unohil_pool


def _rig_opener(rig: str | None):
    """Rig mode (--hil-rig): a device opened through the rig wired to it; None: devices driven directly."""
    if rig is None:
        return None
    from unohil.harness.rig.links import open_rig_unit
    return lambda url: open_rig_unit(url, rig)


def driver_of(config, kind: str):
    """This worker's device of this kind; a pool without one skips the test, as `unohil run` skips a
    scenario (a device of the kind that another process holds is still a failure: it exists)."""
    devices = pool(config)
    try:
        return devices.get(kind)
    except PoolExhausted:
        if devices.lacks(kind):
            pytest.skip(unserved_reason(kind))
        raise


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


def collect_file(parent, file_path: Path):
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
        driver = driver_of(self.config, self.scenario.unit)
        runner = Runner(driver, host_timed=self.config.getoption("--hil-host-timed"),
                        outage=Outage(self.config.getoption("--hil-outage-budget")),
                        attended=self.config.getoption("--hil-attended"), prompts=_TerminalPrompts(self.config))
        res = runner.run(self.scenario)
        if self.config._unohil_keep:
            self.config.__dict__.setdefault("_unohil_results", []).append(res)
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


def finish_json(config) -> None:
    """--hil-json and the results store: a worker hands its part to the controller (pytest_testnodedown); the
    controller, or a session without xdist, writes the file from every part and records it (an output or a
    store that fails: an error said, the tests' results unchanged)."""
    import json
    import time
    from unohil.harness.report.files import write_outputs
    from unohil.harness.report.results_json import json_text, merged_run, plain, results_json, results_part
    from unohil.harness.run.parallel import Rack
    pool = getattr(config, "_unohil_pool", None)
    drivers = list(pool.held.values()) + list(pool._private.values()) if pool is not None else []
    rack = Rack(drivers)
    part = results_part(config.__dict__.get("_unohil_results", []), rack.health(), rack.describe())
    if hasattr(config, "workerinput"):
        config.workeroutput["unohil_json"] = json.dumps(part)
        return
    parts = [part] + [json.loads(p) for p in config.__dict__.get("_unohil_json_parts", [])]
    started = getattr(config, "_unohil_started", time.time())
    doc = plain(results_json(merged_run(parts, started)))
    failures = write_outputs([("--hil-json", config.getoption("--hil-json"), lambda: json_text(doc))])
    for line in failures:
        config.get_terminal_writer().line(f"error: {line}", red=True)
    from unohil.harness.store.config import record_into
    record_into(config._unohil_store, lambda: doc, "pytest", config.getoption("--hil-json"))


# ---- what the fixtures of hand-written tests give (pytest_plugin.py defines them) ----

def driver(request, kind: str):
    """This worker's device of the kind, reset to a new game, its switches where a booted unit has them."""
    d = driver_of(request.config, kind)
    prepare(d)
    return d


def device(request):
    marker = request.node.get_closest_marker("hil_unit")
    if marker is None and request.node.get_closest_marker("unit") is not None:
        marker = request.node.get_closest_marker("unit")
        warnings.warn(pytest.PytestDeprecationWarning('@pytest.mark.unit(kind) is deprecated: use '
                                                      '@pytest.mark.hil_unit(kind)'))
    kind = marker.args[0] if marker else request.config.getoption("--hil-device-kind")
    return driver(request, kind)


def race(request):
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
        d = driver(request, kind)
        res = Runner(d).run(sc)
        request.node.stash.setdefault(RACES_RUN, []).append(res)
        return res.races[0]
    return run
