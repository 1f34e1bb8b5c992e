"""pytest plugin: scenario files as test items, device fixtures, device pools.

Registered through the `pytest11` entry point, so it is loaded in every pytest session of a venv where
uno-hil is installed; it costs such a session nothing it does not use. This module registers the options,
the ini keys, two markers and the fixtures, and imports no more of uno-hil than that: the rest
(pytest_hil.py: the runner, the scenario loader, the catalogue, the pool) is imported once the session asks
for uno-hil: a `--hil-*` option or `hil_*` ini key is set (then the markers of every unit kind and tag are
registered too, and the options checked), or a test requests one of the fixtures.

YAML files become scenario items only where the `hil_scenarios` ini option or `--hil-scenarios` names them
(paths, or glob patterns matched against the path from the rootdir); elsewhere it collects nothing.
Everything the plugin adds is in the `hil` namespace: its options are `--hil-X` where the CLI says `--X`
(`--hil-device`, `--hil-trace`, `--hil-host-timed`), its markers are `hil_<tag>` (`false-start` ->
`-m hil_false_start`), `hil_<kind>`, `hil_scenario` and `hil_unit(kind)`, all registered, so
`--strict-markers` works and no other plugin's marker (say pytest-timeout's `timeout`) is ever put on an
item by a scenario tag.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from unohil.harness.session.outage import DEFAULT_BUDGET_US, parse_budget

MARK_PREFIX = "hil_"
INI_KEYS = ("hil_scenarios", "hil_pattern", "hil_rig")
RACES_RUN = pytest.StashKey[list]()


def marker_name(word: str) -> str:
    """The marker of a scenario tag or unit kind: hil_ and the word with '-' as '_'."""
    return MARK_PREFIX + word.replace("-", "_")


# option dest -> its default: a session that changes one asks for uno-hil
_DEFAULTS: dict[str, object] = {}


def pytest_addoption(parser):
    group = parser.getgroup("unohil", "uno-hil hardware-in-the-loop")

    def add(name: str, **kw) -> None:
        kw.setdefault("default", False if kw.get("action") == "store_true" else None)
        group.addoption(name, **kw)
        _DEFAULTS.setdefault(kw.get("dest", name[2:].replace("-", "_")), kw["default"])

    add("--hil-scenarios", action="append", default=[], metavar="PATH|GLOB",
        help="collect the YAML files under this path (or matching this glob, from the rootdir) as uno-hil "
             "scenarios; repeatable, added to the ini option hil_scenarios. Without either, no YAML "
             "file is collected")
    add("--hil-device", action="append", default=[], metavar="URL",
        help="device URL (repeatable: a pool; `unohil run --device`). Default: an in-process emulator "
             "per unit kind")
    add("--hil-device-kind", default="showdown", metavar="KIND",
        help="unit kind (showdown, flash, launcher: the kinds of emu://KIND) of the `device` fixture "
             "when a test has no hil_unit marker (default showdown)")
    add("--hil-trace", metavar="DIR", default=None,
        help="write a JSON Lines trace per device (`unohil run --trace`)")
    add("--hil-host-timed", action="store_true",
        help="press with host timing (INPUT) even if the device has test mode (`unohil run --host-timed`)")
    add("--hil-wait", type=float, default=0.0, metavar="SECONDS",
        help="how long a worker waits for a free device of the pool (default 0: with fewer devices "
             "than xdist workers the session stops at start)")
    add("--hil-outage-budget", type=parse_budget, default=DEFAULT_BUDGET_US, metavar="TIME",
        help="how long a lost link is waited for before the races after it become link errors "
             "(30s, 500ms, 2min; default 30s)")
    add("--hil-attended", action="store_true",
        help="a person is at the unit: run the scenarios that wait for one, their prompts shown on "
             "the terminal (`unohil run --attended`); without it they are skipped")
    add("--hil-rig", metavar="URL", default=None,
        help="rig mode (`unohil run --rig`): the presses go through this rig wired to the one "
             "--hil-device, at rig times; emurig://?OPTIONS wires an emulated rig to an emulated unit "
             "(docs/rig.md). Default: the ini option hil_rig, else none")
    add("--hil-json", metavar="FILE", default=None,
        help="write the scenarios' results as the JSON of `unohil run --json` (for unohil report, export, "
             "compare and the results store); with xdist, every worker's in one file")
    add("--hil-store", metavar="WHERE", default=None,
        help="record the scenarios' results in a results store (`unohil run --store`: a SQLite file, `default`, "
             "postgresql://...; `off`: none). Default: $UNOHIL_STORE, else [tool.unohil] store in pyproject.toml")
    add("--hil-pattern", action="append", dest="hil_scenarios", help=argparse.SUPPRESS)  # deprecated
    parser.addini("hil_scenarios", "paths or globs (from the rootdir) of uno-hil scenario files; none by default",
                  type="linelist", default=[])
    parser.addini("hil_pattern", "deprecated: a glob of scenario files; use hil_scenarios", default=None)
    parser.addini("hil_rig", "rig mode: the URL of the rig wired to the one device (--hil-rig)", default=None)


def asked_for(config) -> bool:
    """Whether the session asks for uno-hil by its options: a --hil-* option other than its default, or a
    hil_* ini key set."""
    if any(config.getoption(dest) != default for dest, default in _DEFAULTS.items()):
        return True
    return any(config.getini(key) for key in INI_KEYS)


def pytest_configure(config):
    config.addinivalue_line("markers", "hil_scenario: a uno-hil scenario item")
    config.addinivalue_line("markers", "hil_unit(kind): the unit kind the `device` fixture connects to")
    if asked_for(config):
        _hil().activate(config)


def _hil():
    from unohil.harness import pytest_hil
    return pytest_hil


def pytest_collect_file(parent, file_path: Path):
    # only a session that names scenario files has globs (and so was activated at configure)
    if file_path.suffix in (".yaml", ".yml") and getattr(parent.config, "_unohil_scenarios", None):
        return _hil().collect_file(parent, file_path)
    return None


def pytest_sessionfinish(session):
    if getattr(session.config, "_unohil_keep", False):
        _hil().finish_json(session.config)
    pool = getattr(session.config, "_unohil_pool", None)
    if pool is not None:
        pool.close()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist: a worker's part of --hil-json, kept for the one file the controller writes."""
    part = getattr(node, "workeroutput", {}).get("unohil_json")
    if part is not None:
        node.config.__dict__.setdefault("_unohil_json_parts", []).append(part)


# ---- fixtures for hand-written tests ----

@pytest.fixture(scope="session")
def device_pool(request):
    """The session's device pool; pool.get(kind) gives this worker's device of that kind."""
    return _hil().pool(request.config)


@pytest.fixture
def device(request):
    """A connected driver for the test's unit kind (@pytest.mark.hil_unit("flash"), else --hil-device-kind),
    reset to a new game, its switches where a booted unit has them. Skipped when the pool has no unit of
    that kind."""
    return _hil().device(request)


@pytest.fixture
def showdown(request):
    return _hil().driver(request, "showdown")


@pytest.fixture
def flash(request):
    return _hil().driver(request, "flash")


@pytest.fixture
def launcher(request):
    return _hil().driver(request, "launcher")


@pytest.fixture
def race(request):
    """Run one race from Python: race("showdown", steps=[...], config={...}, seed=7).

    Steps are written as in a scenario file. Returns the RaceResult: verdicts, events,
    latency, timing errors; assert on it as you like.
    """
    return _hil().race(request)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A hand-written test that failed after race(): its races' verdicts, failures and trace excerpt
    in the report, as a scenario item shows them."""
    outcome = yield
    report = outcome.get_result()
    runs = item.stash.get(RACES_RUN, None)
    if report.when == "call" and report.failed and runs:
        from unohil.harness.run.results import failure_lines
        from unohil.harness.text import printable
        text = "\n".join(printable(line) for res in runs
                         for line in failure_lines(res, max_races=len(res.races), trace_tail=20, passed_too=True))
        report.sections.append(("uno-hil races", text))
