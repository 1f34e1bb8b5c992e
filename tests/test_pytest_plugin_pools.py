"""The pytest plugin in a session that does not use it (it imports nothing heavy), with a pool that lacks
unit kinds (what the pool cannot serve is skipped with `unohil run`'s reason), and under pytest's own log
options (the harness's records reach them)."""
import json
import re
import textwrap
from pathlib import Path

from unohil.harness.run.pool import unserved_reason

from test_pytest_plugin import SCENARIOS, make

LIBRARY = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
HEAVY = ("unohil.harness.pytest_hil", "unohil.harness.run.runner", "unohil.protocol.catalogue",
         "unohil.harness.scenarios.load", "yaml", "rich")

UNRELATED = textwrap.dedent(f"""\
    import json
    import sys

    def test_plugin_loaded_and_light(pytestconfig):
        loaded = pytestconfig.pluginmanager.has_plugin("unohil")
        with open(f"heavy-{{loaded}}.json", "w") as f:
            json.dump([m for m in {HEAVY!r} if m in sys.modules], f)
    """)


def test_an_unrelated_session_loads_the_plugin_and_imports_nothing_heavy(pytester):
    """What the session holds with the plugin is what it holds without it: other plugins of the venv
    may bring yaml (labgrid's does), ours brings nothing of its own."""
    pytester.makepyfile(UNRELATED)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:unohil").assert_outcomes(passed=1)
    with_plugin = json.loads((pytester.path / "heavy-True.json").read_text())
    without = json.loads((pytester.path / "heavy-False.json").read_text())
    assert not [m for m in with_plugin if m.startswith("unohil.")]
    assert set(with_plugin) == set(without), (with_plugin, without)


def test_a_hil_option_or_ini_key_makes_the_session_ask_for_uno_hil(pytester):
    pytester.makepyfile(UNRELATED)
    heavy = pytester.path / "heavy-True.json"
    pytester.runpytest_subprocess("--hil-device-kind", "flash").assert_outcomes(passed=1)
    assert "unohil.harness.pytest_hil" in json.loads(heavy.read_text())
    heavy.unlink()
    pytester.makeini("[pytest]\nhil_rig = emurig://\n")
    pytester.runpytest_subprocess("--hil-device", "emu://showdown").assert_outcomes(passed=1)
    assert "unohil.harness.pytest_hil" in json.loads(heavy.read_text())


def test_the_kind_markers_come_with_the_first_hil_option(pytester):
    assert "hil_flash" not in pytester.runpytest_subprocess("--markers").stdout.str()
    markers = pytester.runpytest_subprocess("--markers", "--hil-device-kind", "flash").stdout.str()
    assert "@pytest.mark.hil_flash: a uno-hil flash scenario" in markers
    bad = pytester.runpytest_subprocess("--hil-device-kind", "toaster")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["ERROR: --hil-device-kind toaster: not a unit kind (one of showdown, flash, launcher)"])


def test_a_fixture_alone_brings_uno_hil_in(pytester):
    pytester.makepyfile(textwrap.dedent("""\
        import sys

        def test_showdown(showdown):
            assert showdown.kind == "showdown" and "unohil.harness.pytest_hil" in sys.modules
        """))
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=1)


FLASH = SCENARIOS.replace("name: A wins", "name: on a flash", 1)


def test_fixtures_of_a_kind_the_pool_lacks_are_skipped_with_the_cli_reason(pytester):
    pytester.makepyfile(textwrap.dedent("""\
        import pytest

        def test_flash(flash):
            pass

        @pytest.mark.hil_unit("launcher")
        def test_launcher(device):
            pass

        def test_race(race):
            race("flash", steps=[{"press": "player_0", "at": "start + 1000"}])

        def test_showdown(showdown):
            assert showdown.kind == "showdown"
        """))
    result = pytester.runpytest("--hil-device", "emu://showdown", "-rs")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([f"SKIPPED * {unserved_reason('flash')}", f"SKIPPED * {unserved_reason('launcher')}",
                                 f"SKIPPED * {unserved_reason('flash')}"], consecutive=False)


def _count(pytester, kind: str, *args) -> int:
    """How many items of this unit kind the session collects."""
    items, _ = pytester.inline_genitems(*args)
    return sum(1 for item in items if item.get_closest_marker(f"hil_{kind}"))


def test_the_shipped_library_against_one_showdown_ends_with_nothing_failed(pytester):
    """Every item of a kind the pool lacks is skipped with the CLI's reason; the showdown items run."""
    lib = ["--hil-scenarios", str(LIBRARY), str(LIBRARY)]
    lacking = {kind: _count(pytester, kind, *lib) for kind in ("flash", "launcher")}
    assert all(lacking.values())
    result = pytester.runpytest(*lib, "--hil-device", "emu://showdown", "-rs", "-p", "no:randomly")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0 and outcomes["passed"] > 0
    text = result.stdout.str()
    for kind, n in lacking.items():
        assert re.search(rf"SKIPPED \[{n}\] .*: {re.escape(unserved_reason(kind))}$", text, re.M), kind


def test_a_pool_device_of_the_kind_that_is_busy_elsewhere_is_not_a_lacking_kind():
    """lacks() is true only once every device given is open here: one that could not be opened may be the kind."""
    from unohil.harness.run.pool import DevicePool
    pool = DevicePool(["emu://showdown", "emu://flash"])
    try:
        assert not pool.lacks("flash")              # nothing opened yet
        pool.get("showdown")
        assert not pool.lacks("flash")              # the flash URL not yet opened
        assert pool.get("flash").kind == "flash" and not pool.lacks("flash")
        assert pool.lacks("launcher")
    finally:
        pool.close()


def test_the_harness_records_follow_pytests_log_options(pytester):
    make(pytester, SCENARIOS)
    log_file = pytester.path / "run.log"
    result = pytester.runpytest("-k", "false", "-o", "log_cli=true", "--log-cli-level", "INFO",
                                "--log-file", str(log_file), "--log-file-level", "DEBUG")
    result.assert_outcomes(passed=1, deselected=4)
    result.stdout.fnmatch_lines(["*INFO*unohil.run*'false start by B' race 0: pass*"])
    assert "DEBUG" not in result.stdout.str()
    logged = log_file.read_text()
    assert re.search(r"DEBUG .*tx #\d+ .*HELLO", logged) and "'false start by B' race 0: pass" in logged
    quiet = pytester.runpytest("-k", "false", "--log-level", "INFO", "-rA")
    quiet.stdout.fnmatch_lines(["*- Captured log call -*", "INFO *unohil.run*race 0: pass*"])
