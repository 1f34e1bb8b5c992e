"""The pytest plugin, tested with pytester: collection, selection, failure reports, fixtures, pools."""
import os
import textwrap

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


def make(pytester, text=SCENARIOS, name="scenarios/race.yaml"):
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_scenarios_are_items_and_sweeps_expand(pytester):
    make(pytester)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*race.yaml::A wins PASSED*", "*small sweep[[]r=200000#1[]] PASSED*"])


def test_k_and_markers_select(pytester):
    make(pytester)
    pytester.runpytest("-k", "false").assert_outcomes(passed=1)
    pytester.runpytest("-m", "first_press").assert_outcomes(passed=1)
    pytester.runpytest("-m", "showdown and not sweep").assert_outcomes(passed=2)


def test_yaml_outside_the_pattern_is_not_collected_and_the_pattern_is_an_option(pytester):
    make(pytester, name="other/race.yaml")
    pytester.runpytest("other").assert_outcomes()
    pytester.runpytest("other", "--hil-pattern", "*other/*.yaml").assert_outcomes(passed=5)


def test_a_failure_shows_the_diff_and_trace_not_a_traceback(pytester):
    make(pytester, SCENARIOS.replace("verdict: {loser: b, reason: first_press}", "verdict: {loser: a}"))
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
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

        @pytest.mark.unit("showdown")
        def test_device_fixture_is_reset_between_tests(device):
            assert device.status().cards == 0

        def test_pool(device_pool):
            assert device_pool.get("showdown").kind == "showdown"
        """))
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=4)


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
    urls = ["--device", "emu://showdown?serial=101", "--device", "emu://showdown?serial=202"]
    result = pytester.runpytest_subprocess("-n", "2", *urls, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    base = pytester.path
    serials = set()
    for p in base.parent.rglob("serial-gw*"):
        serials.add(p.read_text())
    assert serials <= {"101", "202"}


def test_xdist_workers_find_no_free_device_and_fail_clearly(pytester, emulator_process):
    """The pool's only device is claimed elsewhere (here by this process, for as long as the run
    lasts), so every worker that needs it fails with the reason, whatever the scheduling."""
    from harness.run.pool import DevicePool
    _proc, (url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0")
    holder = DevicePool([url], owner="the test itself")
    holder.get("showdown")
    try:
        pytester.makepyfile(textwrap.dedent("""\
            def test_a(showdown):
                pass
            def test_b(showdown):
                pass
            """))
        result = pytester.runpytest_subprocess("-n", "2", "--device", url)
    finally:
        holder.close()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"*every showdown device in the pool is claimed by another process: {url}: "
                                  f"the unit at 127.0.0.1:* is in use by pid {os.getpid()}*"])
