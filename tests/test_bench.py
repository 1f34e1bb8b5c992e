"""Benchmarks (pytest-benchmark). Under the default --benchmark-disable each runs once, as a
test of the measuring code; `pytest --benchmark-enable tests/test_bench.py` reports the figures.
Nothing here asserts a wall-clock time except the targets, checked only when benchmarking."""
import json

import pytest

from unohil.harness import Driver
from unohil.harness.measure.latency import distribution, spawn_emulator
from unohil.harness.measure.latency_races import verdict_latencies
from unohil.harness.errors import Nak
from unohil.harness.cli import main
from tools.race_instructions import FAST, one_race


def test_virtual_clock_races_per_second_in_process(benchmark):
    """A full Showdown race through codec, driver and emulator on the virtual clock."""
    d = Driver.open("emu://showdown?clock=virtual")
    d.apply_config(FAST)
    if benchmark.disabled:
        benchmark(one_race, d)          # once, as a test of the race itself
    else:
        benchmark.pedantic(one_race, args=(d,), rounds=3000, iterations=1, warmup_rounds=100)
        # the median: on a shared machine the mean carries other tenants' pauses
        races_per_s = 1 / benchmark.stats.stats.median
        benchmark.extra_info["races_per_s"] = round(races_per_s)
        print(f"\nvirtual-clock races per second (median race): {races_per_s:.0f}")
    d.close()


def test_verdict_latency_over_a_pty_to_another_process(benchmark):
    proc, path, origin = spawn_emulator()
    try:
        with Driver.open(path) as d:
            d.sync_clock(16)
            n = 1 if benchmark.disabled else 100
            result = {}

            def run():
                result.update(verdict_latencies(d, n, origin))
            benchmark.pedantic(run, rounds=1, iterations=1)
            for key in ("processing_us", "read_us", "delivered_us"):
                dist = distribution(result[key])
                benchmark.extra_info[key] = dist
                assert dist["min"] >= 0 or key == "processing_us"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_bench_command_reports_every_figure_for_every_unit(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "--races", "4", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["units"]) == {"showdown", "flash", "launcher"}
    for unit in doc["units"].values():
        for key in ("processing_us", "read_us", "delivered_us", "command_rtt_us"):
            assert set(unit["distributions"][key]) >= {"min", "p50", "p90", "p99", "p99.9", "max", "n"}
        assert sum(unit["outcomes"].values()) == 4
    d = doc["distributions"]
    for key in ("floor_one_way_us", "floor_round_trip_us", "event_read_us", "event_delivered_us", "floor_timer_us"):
        assert set(d[key]) >= {"min", "p50", "p90", "p99", "p99.9", "max", "n"}
    assert doc["emission_time"] == "exact"
    assert "event_delivered_us/floor_one_way_us" in doc["ratios"]
    assert d["floor_one_way_us"]["min"] > 0
    assert d["floor_timer_us"]["min"] >= 0 and d["floor_timer_us"]["n"] == d["floor_one_way_us"]["n"]


@pytest.mark.parametrize("kind, outcomes", [
    ("showdown", {"false_start", "first_press", "line_tiebreak"}),
    ("flash", {"slowest"}),
    ("launcher", {"fired 1", "fired 2", "fired 3"}),
])
def test_each_unit_is_raced_with_a_spread_of_verdicts(kind, outcomes):
    """On the virtual clock: every kind of verdict the bench means to measure comes up in 80 races."""
    with Driver.open(f"emu://{kind}?clock=virtual") as d:
        out = verdict_latencies(d, 80, None)
    assert set(out["outcomes"]) >= outcomes and sum(out["outcomes"].values()) == 80
    assert len(out["processing_us"]) == 80 and min(out["processing_us"]) >= 0


def test_distribution_percentiles():
    d = distribution(list(range(1, 1001)))
    assert (d["min"], d["p50"], d["p99"], d["max"], d["n"]) == (1, 501, 990, 1000, 1000)
    assert distribution([]) == {}


def test_a_race_whose_press_the_device_refused_as_too_late_is_run_again(monkeypatch):
    d = Driver.open("emu://showdown?clock=virtual")
    real, calls = d.inject, []

    def inject(*args, **kw):
        calls.append(args)
        if len(calls) == 1:
            raise Nak("INJECT", "too_late", 0)     # as after a host stall longer than the margin
        return real(*args, **kw)
    monkeypatch.setattr(d, "inject", inject)
    out = verdict_latencies(d, 3, None)
    assert out["late_stimuli"] == 1
    assert len(out["processing_us"]) == 3
    d.close()


def _report(n: int) -> str:
    import io
    from rich.console import Console
    from unohil.harness.measure.latency import print_report
    dist = distribution([1000 + i for i in range(n)])
    result = {"races": n, "device": "emu", "emission_time": "exact",
              "units": {"showdown": {"late_stimuli": 0, "outcomes": {"first_press": n},
                                     "distributions": {"processing_us": dist},
                                     "ratios": {"processing_us/floor_timer_us": {"p50": 1.0, "p99": 1.0}}}},
              "distributions": {"floor_timer_us": dist}, "ratios": {}}
    out = io.StringIO()
    print_report(result, Console(file=out, width=200))
    return out.getvalue()


def test_bench_shows_a_percentile_only_when_enough_samples_back_it():
    """pX needs 100 / (100 - X) samples (one beyond it): p90 10, p99 100, p99.9 1000."""
    row = next(line for line in _report(30).splitlines() if "knowable -> produced" in line)
    cells = [c.strip() for c in row.split("│")[2:-1]]
    assert cells == ["30", "1 ms", "1.01 ms", "1.03 ms", "n/a", "n/a", "1.03 ms"]     # n, min, p50, p90, p99, ...
    text = _report(30)
    assert "p99 from 100, p99.9 from 1000" in text
    assert "verdict processing p99" not in text and "p99 1.00x" not in text     # nor in the sentences below
    full = _report(1000)
    row = next(line for line in full.splitlines() if "knowable -> produced" in line)
    assert "n/a" not in row and "n/a:" not in full
    assert "showdown: verdict processing p99 1.99 ms" in full and "p99.9 2 ms" in full and "p99 1.00x" in full


def test_unohil_report_draws_a_bench_file_as_histograms(tmp_path):
    out, page = tmp_path / "bench.json", tmp_path / "bench.html"
    assert main(["bench", "--races", "4", "--kind", "launcher", "--json", str(out)]) == 0
    assert main(["report", str(out), "-o", str(page)]) == 0
    html = page.read_text()
    assert html.count('<figure data-latency="') == 4 + 5          # the launcher's four figures, the link's five
    assert 'data-kind="launcher"' in html and "verdicts: fired " in html and "http" not in html.replace(
        "http-equiv", "")


def test_the_estimate_of_a_run_against_its_real_clock_duration(benchmark):
    """`unohil run`'s estimate (harness/cli/plan.py) beside the wall time of the same scenarios on a real-clock
    unit in another process over a pty, as a bench run has it. Disabled: one short scenario, a test of the
    measuring code only; enabled: the Showdown library's scenarios of under 30 s each, in order, until their
    estimate passes 75 s (over SAY_ABOVE_S, so the estimate would be printed), where it must be within a factor
    1.5 of the measured duration. The whole library: docs/performance.md."""
    import time
    from unohil.harness.cli.plan import SAY_ABOVE_S, device_time
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.library import library_paths
    from unohil.harness.scenarios.load import load_paths
    library = [s for s in load_paths(library_paths("showdown")) if not s.needs_rig and "landing_sensor" not in s.needs]
    chosen, estimate = [], 0.0
    for sc in library:
        seconds = device_time([sc], "showdown")[0]
        if seconds > 30:        # a fifty-race sweep alone would make this a five-minute benchmark
            continue
        chosen.append(sc)
        estimate += seconds
        if benchmark.disabled or estimate > SAY_ABOVE_S + 15:
            break
    measured = {}
    proc, path, _ = spawn_emulator()
    try:
        with Driver.open(path) as d:
            def run():
                runner, t0 = Runner(d), time.monotonic()
                measured["statuses"] = [str(runner.run(sc).status) for sc in chosen]
                measured["s"] = time.monotonic() - t0
            benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert set(measured["statuses"]) == {"pass"}, measured["statuses"]
    ratio = estimate / measured["s"]
    benchmark.extra_info.update(scenarios=len(chosen), races=sum(len(s.races) for s in chosen),
                                estimate_s=round(estimate, 1), measured_s=round(measured["s"], 1), ratio=round(ratio, 3))
    print(f"\nrun estimate {estimate:.1f} s, measured {measured['s']:.1f} s ({ratio:.3f}x) for {len(chosen)} scenarios")
    if not benchmark.disabled:
        assert 1 / 1.5 < ratio < 1.5


@pytest.mark.parametrize("kind", ["showdown", "flash", "launcher"])
@pytest.mark.parametrize("delay_us", [0, 300])
def test_each_verdict_figure_reads_its_true_value_on_the_virtual_clock(kind, delay_us):
    """docs/performance.md defines each figure by the two instants it spans. On the virtual clock with the
    unit's output held back delay_us on the link (and the emulator's origin exact, as bench has it from
    an emulator in another process), each is known: the emulator adjudicates at the knowable instant
    (processing 0), its verdict is read and reaches the waiting code delay_us after it was produced, a
    STATUS comes back delay_us after it was sent. The verdict's delivery ends where the waiting code got
    it, not after the race's later press (a Showdown verdict often comes before it)."""
    faults = f"&faults=delay={delay_us}us" if delay_us else ""
    with Driver.open(f"emu://{kind}?clock=virtual{faults}") as d:
        now = d.link.now_us()
        origin = now - d.link.device_time_at(now)
        out = verdict_latencies(d, 40, origin)
    assert len(out["delivered_us"]) == 40
    assert set(out["processing_us"]) == {0}
    assert set(out["read_us"]) == set(out["delivered_us"]) == {delay_us}
    assert set(out["command_rtt_us"]) == {delay_us}
