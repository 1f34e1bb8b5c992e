"""The report puts failures first and draws a histogram only where enough races back it; the page of several
runs shows what changed between them (compare) and each figure's trend. Checked in headless chromium: the
order the DOM holds, and a screenshot's size and content."""
from __future__ import annotations

import json
import re
import struct
import subprocess
import zlib

import pytest

from unohil.harness.cli import main
from unohil.harness.report.html import HISTOGRAM_MIN
from unohil.harness.text import duration_rounded
from tests.test_report_html import CHROMIUM, LIBRARY, LOSER, dump_dom

RANK = {"fail": 0, "error": 0, "link-error": 0, "reset": 0, "interrupted": 1, "pass": 2, "skip": 3}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of one set of scenarios: a unit, then one 1 ms slower at its verdicts with a 4-card magazine."""
    d = tmp_path_factory.mktemp("runs")
    (d / "mine.yaml").write_text(LOSER.format(name="b loses", loser="b") + "---\n"
                                 + LOSER.format(name="wrongly expects a", loser="a"))
    files = [str(LIBRARY / "showdown" / "sweep.yaml"), str(LIBRARY / "showdown" / "cards.yaml"),
             str(d / "mine.yaml"), str(LIBRARY / "flash" / "buzzer.yaml")]
    out = []
    for name, opts in (("a", "firmware=1.2.0"), ("b", "firmware=1.3.0&verdict_delay_us=1000&card_capacity=4")):
        path = d / f"{name}.json"
        main(["run", *files, "--device", f"emu://showdown?{opts}", "--device", "emu://flash", "-q", "--json",
              str(path), "--store", "off"])
        out.append(path)
    return out


def test_failures_come_first_and_open_in_the_browser(runs, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(runs[1]), "-o", str(page)]) == 0
    dom, _ = dump_dom(page, tmp_path)
    shown = re.findall(r'<details class="scenario" id="scenario-(\d+)" data-status="([a-z-]+)"( open)?', dom)
    doc = json.loads(runs[1].read_text())
    assert len(shown) == len(doc["scenarios"])
    statuses = [s for _, s, _ in shown]
    assert statuses == sorted(statuses, key=RANK.__getitem__) and statuses[0] == "fail"
    assert all(bool(opened) == (s not in ("pass", "skip")) for _, s, opened in shown)
    # within a group, the file's order
    fails = [int(i) for i, s, _ in shown if s == "fail"]
    assert fails == sorted(fails) and len(fails) >= 2
    assert [doc["scenarios"][int(i)]["status"] for i, _, _ in shown] == statuses


def test_a_histogram_only_where_enough_races_back_it(runs, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(runs[0]), "-o", str(page)]) == 0
    dom, _ = dump_dom(page, tmp_path)
    doc = json.loads(runs[0].read_text())
    latency = dom[dom.index('id="latency"'):dom.index('id="scenarios"')]
    drawn = set(re.findall(r'<figure data-latency="(\w+)" data-kind="(\w+)"', latency))
    tabled = set(re.findall(r'<tr data-latency="(\w+)" data-kind="(\w+)"', latency))
    for kind in ("showdown", "flash"):
        n = sum(1 for s in doc["scenarios"] if s["unit"] == kind for r in s["results"]
                if r["latency"].get("processing_us") is not None)
        assert (("processing_us", kind) in drawn) == (n >= HISTOGRAM_MIN)
        assert (("processing_us", kind) in tabled) == (0 < n < HISTOGRAM_MIN)
    assert ("processing_us", "showdown") in drawn and ("processing_us", "flash") in tabled
    assert latency.count('class="histogram"') == len(drawn)


def _png(path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, i = b"", 8
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        if kind == b"IDAT":
            idat += data[i + 8:i + 8 + n]
        i += 12 + n
    return width, height, zlib.decompress(idat)


def test_the_page_of_several_runs_shows_the_changes_and_the_trends(runs, tmp_path):
    page = tmp_path / "multi.html"
    assert main(["report", str(runs[0]), str(runs[1]), "-o", str(page)]) == 0
    dom, log = dump_dom(page, tmp_path)
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-errors=""' in body and 'data-ready="1"' in body and 'data-runs="2"' in body
    assert dom.index('id="changes"') < dom.index('id="runs"') < dom.index('id="trends"')     # the changes first
    change = dom[dom.index('<section class="change"'):dom.index('id="runs"')]
    regressions = int(re.search(r'data-regressions="(\d+)"', change).group(1))
    assert regressions > 0
    assert re.search(r"<td>showdown: [^<]+</td><td class=\"pass\">pass</td><td class=\"fail\">fail</td>", change)
    assert "showdown: processing_us (slower)" in change
    assert re.findall(r'<figure data-trend="(\w+)" data-kind="showdown"', dom)[0] == "processing_us"
    assert set(re.findall(r'data-line="(p\d+)"', dom)) == {"p50", "p99"} and dom.count("<polyline") >= 4
    if CHROMIUM is None:
        return
    shot = tmp_path / "multi.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'profile2'}", "--window-size=1100,1400", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120, check=True,
                   env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    width, height, pixels = _png(shot)
    assert (width, height) == (1100, 1400)
    # drawn, not blank: many colours (text, the red of the regressions, the lines)
    assert len(set(pixels)) > 100


def test_several_stored_runs_on_one_page(runs, tmp_path, capsys):
    where = str(tmp_path / "s.sqlite")
    from unohil.harness.store.backend import Store
    from unohil.harness.store.record import record
    with Store.open(where) as store:
        for path in runs:
            record(store, json.loads(path.read_text()), "run", str(path))
    page = tmp_path / "m.html"
    assert main(["report", "--store", where, "--since", "2000-01-01", "-o", str(page)]) == 0
    text = page.read_text()
    assert "run 1 &rarr; run 2" in text and "showdown: processing_us (slower)" in text
    assert main(["report", str(runs[0]), "--store", where, "--since", "3000-01-01", "-o", str(page)]) == 2
    assert "0 found" in capsys.readouterr().err


def test_a_timeline_is_zoomed_on_the_decisive_window(runs, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(runs[0]), "-o", str(page)]) == 0
    dom, _ = dump_dom(page, tmp_path)
    svg = re.search(r'<svg class="timeline"[^>]*aria-label="b loses race 0">(.*?)</svg>', dom, re.S).group(1)
    # the 2 s countdown is one compressed stretch, labelled with its length
    (gap_us, label), = re.findall(r'<g class="gap" data-gap-us="(\d+)">.*?<text[^>]*>([^<]+)</text>', svg)
    assert 1_900_000 <= int(gap_us) <= 2_000_000 and label == f"{duration_rounded(int(gap_us))} drawn short"

    def x_of(label: str) -> float:
        return float(re.search(rf'<line x1="([\d.]+)"[^>]*>(?:</line>)?<text[^>]*>{label}</text>', svg).group(1))
    # green to the verdict (181 ms of a 2.3 s race) takes most of the 820 px, not 8% of it
    assert x_of("verdict") - x_of("green") > 400
    assert x_of("green") < x_of("launch") <= x_of("verdict")


def test_the_expected_time_of_a_failed_check_is_drawn_beside_the_actual_one(tmp_path):
    (tmp_path / "t.yaml").write_text(
        "- name: A expected 10 ms sooner\n  unit: showdown\n  seed: 3\n"
        "  config: {countdown_min_us: 2000000, countdown_max_us: 2000000}\n"
        "  steps: [{load: 1}, {press: timer, at: start + 1000}, {press: paddle_a, at: green + 180000}]\n"
        "  expect:\n    verdict: {loser: b, press_a_us: green + 170000}\n")
    out = tmp_path / "r.json"
    assert main(["run", str(tmp_path / "t.yaml"), "--json", str(out), "-q", "--store", "off"]) == 1
    race = json.loads(out.read_text())["scenarios"][0]["results"][0]
    from unohil.harness.report.timeline import race_timeline
    marks = {(m.kind, m.label): m.t_us for m in race_timeline(race, "showdown").marks}
    green = next(e["t_us"] for e in race["events"] if e["event"] == "SD_GREEN")
    assert marks["time", "press_a_us"] == green + 180000
    assert marks["expected", "expected press_a_us"] == green + 170000
    page = tmp_path / "r.html"
    assert main(["report", str(out), "-o", str(page)]) == 0
    dom, _ = dump_dom(page, tmp_path)
    assert re.search(r'<g class="mark expected"><line [^>]*stroke-dasharray="3 2"', dom)
    assert ">expected press_a_us</text>" in dom


def test_a_rig_mode_race_shows_the_rigs_view(tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", str(LIBRARY / "showdown" / "first_press.yaml"), "-k", "clean", "--device",
                 "emu://showdown?clock=virtual", "--rig", "emurig://", "--json", str(out), "-q", "--store", "off"]) == 0
    race = json.loads(out.read_text())["scenarios"][0]["results"][0]
    page = tmp_path / "r.html"
    assert main(["report", str(out), "-o", str(page)]) == 0
    dom, _ = dump_dom(page, tmp_path)
    svg = re.search(r'<svg class="timeline".*?</svg>', dom, re.S).group(0)
    assert ">rig</text>" in svg
    rig = re.findall(r'<g class="mark rig">.*?<title>([\d.]+ \w+) \((\d+) us\)', svg)
    driven = [p["rig_us"] for p in race["rig"]["presses"]] + [o["rig_us"] for o in race["rig"]["outputs"]]
    assert sorted(int(t) for _, t in rig) == sorted(driven) and len(driven) >= 4
    assert "the rig saw: decision_to_green_us 0 us" in dom
