"""unohil compare between two runs of the library: a changed verdict, a dropped scenario and a latency shift
found when the second unit is slower at its verdicts; nothing between two runs of the same unit; the exit
status follows --fail-on. And the Brunner-Munzel test it uses, against known values."""
from __future__ import annotations

import json
import random

import pytest

from unohil.harness.cli import main
from unohil.harness.store.stats import brunner_munzel, t_sf

LIB = "fixtures/scenarios/showdown"


def _run(tmp_path, name: str, url: str, *extra: str) -> str:
    path = str(tmp_path / f"{name}.json")
    main(["run", LIB, "--device", url, "--json", path, "--store", "off", "-q", *extra])
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    return {
        "a": _run(tmp, "a", "emu://showdown"),
        "again": _run(tmp, "again", "emu://showdown"),
        # another unit: 1 ms slower at every verdict, a magazine of 4 cards (the library's 5-card scenarios
        # fail on it), and the exact ties left out of its run
        "other": _run(tmp, "other", "emu://showdown?verdict_delay_us=1000&card_capacity=4", "-k", "not exact"),
        "slow": _run(tmp, "slow", "emu://showdown?verdict_delay_us=1000"),
    }


def test_two_runs_of_the_same_unit_compare_equal(runs, capsys):
    assert main(["compare", runs["a"], runs["again"], "--fail-on", "change"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "no changes"


def test_a_changed_verdict_a_dropped_scenario_and_a_unit_slower_by_1_ms_at_the_verdict(runs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare", runs["a"], runs["other"], "--json", str(out)]) == 0       # --fail-on never
    found = json.loads(out.read_text())
    a = json.loads(open(runs["a"]).read())["scenarios"]
    b = {s["name"]: s["status"] for s in json.loads(open(runs["other"]).read())["scenarios"]}
    failing = [s["name"] for s in a if b.get(s["name"]) == "fail"]
    assert failing
    assert found["changed"] == [{"scenario": f"showdown: {n}", "a": "pass", "b": "fail"} for n in failing]
    dropped = [s["name"] for s in a if "exact" in s["name"]]
    assert found["gone"] == [f"showdown: {n}" for n in dropped] and dropped
    assert found["added"] == []
    pooled = {m["figure"]: m for m in found["moved"] if m["scope"] == "showdown"}
    assert pooled["processing_us"]["median"] == [0, 1000] and pooled["processing_us"]["direction"] == "slower"
    assert set(found["regressions"]) >= {f"showdown: {n}: pass -> fail" for n in failing} | \
        {f"showdown: {n}: gone" for n in dropped} | {"showdown processing_us: slower"}
    capsys.readouterr()
    assert main(["compare", runs["a"], runs["other"], "--fail-on", "regression"]) == 1
    assert f"{len(found['regressions'])} regression(s): --fail-on regression" in capsys.readouterr().err


def test_only_the_latency_shift(runs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare", runs["a"], runs["slow"], "--json", str(out), "--fail-on", "regression"]) == 1
    found = json.loads(out.read_text())
    assert (found["changed"], found["gone"], found["added"]) == ([], [], [])
    assert {m["figure"] for m in found["moved"]} == {"processing_us", "device_us"}     # inherent_us did not move
    assert all(m["direction"] == "slower" for m in found["moved"])
    capsys.readouterr()
    # the other way round it is faster: a change, not a regression
    assert main(["compare", runs["slow"], runs["a"], "--fail-on", "regression"]) == 0
    assert "(faster;" in capsys.readouterr().out
    assert main(["compare", runs["slow"], runs["a"], "--fail-on", "change"]) == 1


def test_compare_says_what_it_cannot_read(tmp_path, capsys):
    (tmp_path / "x.json").write_text("{}")
    assert main(["compare", str(tmp_path / "x.json"), str(tmp_path / "x.json")]) == 2
    assert "not a results file" in capsys.readouterr().err
    assert main(["compare", "run:1", "run:1", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "no run 1" in capsys.readouterr().err
    assert main(["compare", "run:1", "latest", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "latest: no such run in the store" in capsys.readouterr().err


def test_brunner_munzel_against_published_values():
    # scipy.stats.brunner_munzel's documented example: statistic 3.1375, p-value 0.0057862
    p_hat, p = brunner_munzel([1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 1, 1], [3, 3, 4, 3, 1, 2, 3, 1, 1, 5, 4])
    assert p == pytest.approx(0.0057862086661515, rel=1e-9) and p_hat > 0.5
    assert t_sf(2.0, 10) == pytest.approx(0.036694017385370, rel=1e-9)
    assert t_sf(0.0, 3) == pytest.approx(0.5)


def test_the_same_samples_never_flag_and_a_shift_does():
    rng = random.Random(5)
    x = [int(rng.lognormvariate(6, 0.5)) for _ in range(200)]
    assert brunner_munzel(x, list(x)) == (0.5, 1.0)
    assert brunner_munzel([7] * 10, [7] * 10) == (0.5, 1.0)
    p_hat, p = brunner_munzel(x, [v + 300 for v in x])
    assert p < 1e-6 and p_hat > 0.64
    assert brunner_munzel([0] * 10, [1000] * 10) == (1.0, 0.0)
    # a change of spread alone, the centre kept: not "one tends larger"
    wide = [500 + (v - 500) * 3 for v in range(400, 601)]
    assert brunner_munzel(list(range(400, 601)), wide)[1] > 0.5
