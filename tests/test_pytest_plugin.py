"""The pytest plugin, tested with pytester: collection, selection, failure reports, fixtures, pools."""
import os
import textwrap
from pathlib import Path

SCENARIOS = textwrap.dedent("""\
    - name: A wins
      unit: showdown
      tags: [first-press]
      seed: 3
      config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
      steps:
        - load: 1
        - press: timer
          at: start + 1000
        - press: paddle_a
          at: green + 150000
      expect:
        verdict: {loser: b, reason: first_press}

    - name: false start by B
      unit: showdown
      tags: [false-start]
      seed: 4
      config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
      steps:
        - load: 1
        - press: timer
          at: start + 1000
        - press: paddle_b
          at: countdown_start + 100000
      expect:
        verdict: {loser: b, reason: false_start}

    - name: small sweep
      unit: showdown
      tags: [sweep]
      seed: 5
      config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
      sweep:
        r: [100000, 200000, 300000]
      steps:
        - load: 1
        - press: timer
          at: start + 1000
        - press: paddle_a
          at: green + r
      expect:
        verdict: {loser: b}
    """)


def make(pytester, text=SCENARIOS, name="scenarios/race.yaml", ini=True):
    """A scenario file, and (ini=True) a pytest.ini that names its directory in hil_scenarios."""
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if ini:
        pytester.makeini(f"[pytest]\nhil_scenarios = {path.parent.relative_to(pytester.path)}\n")
    return path


def test_scenarios_are_items_and_sweeps_expand(pytester):
    make(pytester)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*race.yaml::A wins PASSED*", "*small sweep[[]r=200000#1[]] PASSED*"])


def test_k_and_markers_select(pytester):
    make(pytester)
    pytester.runpytest("-k", "false").assert_outcomes(passed=1)
    pytester.runpytest("-m", "hil_first_press").assert_outcomes(passed=1)
    pytester.runpytest("-m", "hil_showdown and not hil_sweep").assert_outcomes(passed=2)
    pytester.runpytest("-m", "not hil_scenario").assert_outcomes(deselected=5)


def collected(pytester, *args) -> list[str]:
    items, _ = pytester.inline_genitems(*args)
    return sorted({item.nodeid.split("::")[0] for item in items})


def test_yaml_is_collected_only_where_the_user_asks(pytester):
    """An unrelated project's scenarios/*.yaml is not ours: nothing is collected without the ini option
    or --hil-scenarios, which take paths (from the rootdir or the invocation directory) and globs."""
    make(pytester, name="scenarios/race.yaml", ini=False)
    make(pytester, name="other/race.yaml", ini=False)
    both = ["other/race.yaml", "scenarios/race.yaml"]
    assert collected(pytester) == []
    assert collected(pytester, "--hil-scenarios", "other") == ["other/race.yaml"]
    assert collected(pytester, "--hil-scenarios", "*/race.yaml") == both
    assert collected(pytester, "--hil-scenarios", "scenarios/race.yaml") == ["scenarios/race.yaml"]
    assert collected(pytester, "--hil-scenarios", "scenarios/race.yaml", "other") == []   # other/ is not named
    pytester.makeini("[pytest]\nhil_scenarios =\n    scenarios\n    other/*.yaml\n")
    assert collected(pytester) == both
    result = pytester.runpytest_subprocess("--hil-scenarios", ".", "-p", "no:cacheprovider",
                                           str(pytester.path / "other"), "--co", "-q")
    result.stdout.fnmatch_lines(["other/race.yaml::A wins"])      # a command-line path is from the invocation dir


def test_the_old_pattern_spelling_still_works_deprecated(pytester):
    make(pytester, name="other/race.yaml", ini=False)
    result = pytester.runpytest("other", "--hil-pattern", "*other/*.yaml", "--co")
    result.stdout.fnmatch_lines(["*5 tests collected*"])
    result.stdout.fnmatch_lines(["*--hil-pattern is deprecated: use --hil-scenarios*"])


def test_markers_are_registered_and_strict_markers_works_with_free_tags(pytester):
    make(pytester, SCENARIOS.replace("tags: [first-press]", "tags: [first-press, JIRA-123, timeout]"))
    result = pytester.runpytest("--strict-markers", "-m", "hil_JIRA_123")
    result.assert_outcomes(passed=1, deselected=4)
    markers = pytester.runpytest("--markers").stdout.str()
    assert "@pytest.mark.hil_false_start: uno-hil scenario tag false-start" in markers
    assert "@pytest.mark.hil_unit(kind)" in markers


def test_a_tag_named_like_another_plugins_marker_is_not_that_marker(pytester):
    """pytest-timeout's marker is `timeout(seconds)`; a scenario tagged timeout must not become it
    (today's INTERNALERROR). A stand-in plugin defines the marker the way pytest-timeout does."""
    make(pytester, SCENARIOS.replace("tags: [first-press]", "tags: [timeout]"))
    pytester.makeconftest('''
        import pytest
        def pytest_configure(config):
            config.addinivalue_line("markers", "timeout(seconds): a test's time limit")
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_setup(item):
            m = item.get_closest_marker("timeout")
            if m is not None:
                float(m.args[0])            # what a timeout plugin does with it: no argument, IndexError
        ''')
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=5)
    assert "INTERNALERROR" not in result.stdout.str()
    pytester.runpytest("-m", "hil_timeout").assert_outcomes(passed=1, deselected=4)


def test_a_badly_formed_tag_is_refused_with_its_position(pytester):
    make(pytester, SCENARIOS.replace("tags: [first-press]", "tags: [\"two words\"]"))
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*race.yaml:3:*tags: tag 'two words': a tag is letters, digits, '-' and '_'*"])


def test_a_failure_shows_the_diff_and_trace_not_a_traceback(pytester):
    make(pytester, SCENARIOS.replace("verdict: {loser: b, reason: first_press}", "verdict: {loser: a}"))
    result = pytester.runpytest("-rf")
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED scenarios/race.yaml::A wins - verdict[0].loser: expected a, got b"])
    assert "verdict[0].loser: expected a, got b" in out
    assert "SD_VERDICT" in out and "trace (device us from race start)" in out
    assert "Traceback" not in out and "runner.py" not in out


def test_an_invalid_file_is_a_collection_error_with_positions(pytester):
    make(pytester, "name: x\nunit: showdown\nsteps: [{press: paddle_z}]\nexpect: {count: {SD_GREEN: 1}}\n")
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*race.yaml:3:17: steps[[]0[]].press: the showdown unit has no input 'paddle_z'*"])
    assert "pytest_plugin.py" not in result.stdout.str()


def test_junit_has_one_case_per_item_with_latency_properties(pytester):
    make(pytester)
    result = pytester.runpytest("--junitxml=out.xml")
    result.assert_outcomes(passed=5)
    xml = (pytester.path / "out.xml").read_text()
    assert xml.count("<testcase") == 5
    assert 'name="processing_us_p50"' in xml


def test_fixtures_for_hand_written_tests(pytester):
    pytester.makepyfile(textwrap.dedent("""\
        import pytest

        def test_race_helper(race):
            r = race("showdown", seed=1, config={"countdown_min_us": 2000000, "countdown_max_us": 2000000},
                     steps=[{"load": 2}, {"press": "timer", "at": "start + 1000"},
                            {"press": "paddle_b", "at": "green + 123456"}])
            assert r.verdicts[0]["loser"] == "a"
            assert r.verdicts[0]["reaction_b_us"] == 123456
            assert r.latency["processing_us"] == 0

        def test_showdown_fixture(showdown):
            assert showdown.kind == "showdown"
            showdown.input("load_cards", value=1)

        @pytest.mark.hil_unit("showdown")
        def test_device_fixture_is_reset_between_tests(device):
            assert device.status().cards == 0

        def test_pool(device_pool):
            assert device_pool.get("showdown").kind == "showdown"
        """))
    pytester.runpytest("-p", "no:randomly", "--strict-markers").assert_outcomes(passed=4)


def test_a_hand_written_race_that_fails_its_assertion_shows_the_race_and_its_trace(pytester):
    """The race of test_fixtures_for_hand_written_tests (B presses 123456 us after green), claimed the
    other way round."""
    here = Path(__file__).read_text()
    passing = here[here.index("        def test_race_helper(race):"):here.index("        def test_showdown_fixture")]
    claim = passing.replace('== "a"', '== "b"').replace("test_race_helper", "test_race_claim")
    pytester.makepyfile(textwrap.dedent(claim))
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- uno-hil races -*", "*scenario 'race' on emu://showdown*",
                                 "*race 0: pass*", "*trace (device us from race start):*", "*SD_VERDICT*loser=a*"])


def test_xdist_workers_each_own_a_device(pytester):
    make(pytester)
    pytester.makepyfile(textwrap.dedent("""\
        import os
        def test_who(showdown, tmp_path_factory):
            out = tmp_path_factory.getbasetemp().parent / f"serial-{os.environ.get('PYTEST_XDIST_WORKER')}"
            out.write_text(str(showdown.identity.serial))
        def test_who2(showdown, tmp_path_factory):
            test_who(showdown, tmp_path_factory)
        """))
    urls = ["--hil-device", "emu://showdown?serial=101", "--hil-device", "emu://showdown?serial=202"]
    result = pytester.runpytest_subprocess("-n", "2", *urls, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    base = pytester.path
    serials = set()
    for p in base.parent.rglob("serial-gw*"):
        serials.add(p.read_text())
    assert serials <= {"101", "202"}


def test_xdist_workers_find_no_free_device_and_fail_clearly(pytester, emulator_process):
    """The pool's devices are claimed elsewhere (here by this process, for as long as the run lasts),
    so every worker that needs one fails with the reason, whatever the scheduling."""
    from unohil.harness.run.pool import DevicePool
    _proc, urls = emulator_process("showdown", "--tcp", "127.0.0.1:0", "--count", "2", count=2)
    holders = [DevicePool([u], owner="the test itself") for u in urls]
    for h in holders:
        h.get("showdown")
    try:
        pytester.makepyfile(textwrap.dedent("""\
            def test_a(showdown):
                pass
            def test_b(showdown):
                pass
            """))
        result = pytester.runpytest_subprocess("-n", "2", *(a for u in urls for a in ("--hil-device", u)))
    finally:
        for h in holders:
            h.close()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*every showdown device in the pool is claimed by another process: socket://"
                                 f"127.0.0.1:*: the unit at localhost:* is in use by pid {os.getpid()}*"])


def test_fewer_devices_than_workers_stops_the_session_at_start(pytester):
    pytester.makepyfile("def test_a(showdown):\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "--hil-device", "emu://showdown?serial=7")
    assert result.ret == 4            # pytest's usage error: no test ran, none FAILed
    result.stderr.fnmatch_lines(["ERROR: 2 xdist workers but --hil-device gives 1 device(s): each worker claims a "
                                 "unit of its own*"])
    assert "PoolExhausted" not in result.stdout.str() + result.stderr.str()
    mixed = pytester.runpytest_subprocess("-n", "2", "--hil-device", "emu://showdown", "--hil-device", "emu://flash")
    assert mixed.ret == 4
    mixed.stderr.fnmatch_lines(["ERROR: 2 xdist workers but --hil-device gives 1 showdown unit(s), 1 flash unit(s)*"])
