"""unohil report: one self-contained HTML page from a results file, checked in a real headless browser
(Debian's chromium, installed by .ci/run): it loads with no script errors and shows what it promises."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from unohil.harness.cli import main
from unohil.harness.report.html import report_html
from unohil.harness.report.run_record import RunRecord
from unohil.harness.report.timeline import EVENTS, INPUTS, LIGHTS, STATE, TIMES, race_timeline
from unohil.protocol import catalogue as cat

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "fixtures" / "scenarios"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


# b loses, as the scenario says; the copy that says a loses fails with a diff
LOSER = """
name: {name}
unit: showdown
config: {{countdown_min_us: 2000000, countdown_max_us: 2000000}}
steps: [{{load: 2}}, {{press: timer, at: start + 1000}}, {{press: paddle_a, at: green + 180000}}]
expect: {{verdict: {{loser: {loser}}}}}
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    (d / "mine.yaml").write_text(LOSER.format(name="b loses", loser="b") + "---\n"
                                 + LOSER.format(name="wrongly expects a", loser="a"))
    rc = main(["run", str(d / "mine.yaml"), str(LIBRARY / "flash" / "buzzer.yaml"),
               str(LIBRARY / "launcher" / "bursts.yaml"), "-q", "--json", str(d / "r.json")])
    assert rc == 1
    return d / "r.json"


def test_every_race_keeps_its_events_in_the_results_file(results):
    doc = json.loads(results.read_text())
    assert doc["schema"] == 7
    races = [r for s in doc["scenarios"] for r in s["results"]]
    assert races and all(r["events"] for r in races)
    assert all(d["boot_id"] and d["catalog_crc"] for d in doc["devices"])


def _race(doc, name):
    s = next(s for s in doc["scenarios"] if s["name"] == name)
    return s["results"][0], s["unit"]


def test_a_showdown_timeline_has_countdown_green_presses_launch_and_verdict(results):
    doc = json.loads(results.read_text())
    tl = race_timeline(*_race(doc, "b loses"))
    marks = {(m.lane, m.label): m.t_us for m in tl.marks}
    assert marks[(EVENTS, "countdown_start")] == 1000 and marks[(EVENTS, "green")] == 2001000
    assert marks[(INPUTS, "press paddle_a")] == 2181000 and marks[(EVENTS, "launch")] == 2181000
    assert (EVENTS, "verdict") in marks and marks[(TIMES, "green_us")] == 2001000
    assert [s.value for s in tl.spans if s.lane == STATE][-3:-1] == ["go", "racing"]
    countdown = next(s for s in tl.spans if s.label.startswith("SD_GREEN"))
    assert (countdown.start_us, countdown.end_us) == (1000, 2001000)       # the catalogue's timer: countdown
    assert "green" in tl.rows(LIGHTS) and "red" in tl.rows(LIGHTS)


def test_flash_and_launcher_timelines_come_from_the_catalogue(results):
    doc = json.loads(results.read_text())
    flash = race_timeline(*_race(doc, "buzzer race with 2 opponents"))
    states = [s.value for s in flash.spans if s.lane == STATE]
    assert "turn" in states and "buzzer" in states                  # the turn and the buzzer window
    buzzer = next(s for s in flash.spans if s.value == "buzzer")
    assert buzzer.start_us == next(m.t_us for m in flash.marks if m.label == "buzzer")
    assert buzzer.end_us == next(m.t_us for m in flash.marks if m.kind == "verdict")
    launcher_scenario = next(s for s in doc["scenarios"] if s["unit"] == "launcher")
    la = race_timeline(launcher_scenario["results"][0], "launcher")
    assert any(m.label == "press button" for m in la.marks) and "firing" in {s.value for s in la.spans}
    cards = [m for m in la.marks if m.label == "card"]
    assert cards and all(any(s.end_us == c.t_us and s.label.startswith("LA_CARD") for s in la.spans) for c in cards)
    # every anchor mark is one the catalogue names for the kind, the verdict its verdict event
    for tl in (flash, la):
        anchors = set(cat.UNITS[tl.kind].anchors)
        assert {m.label for m in tl.marks if m.lane == EVENTS} <= anchors
        assert {m.detail.split()[0] for m in tl.marks if m.kind == "verdict"} == {cat.UNITS[tl.kind].verdict}


def test_the_page_is_self_contained_with_summary_diff_histograms_and_timelines(results, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(results), "-o", str(out)]) == 0
    page = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)     # nothing fetched
    assert "<link" not in page and "@import" not in page
    assert 'id="summary"' in page and 'class="histogram"' in page and 'class="timeline"' in page
    assert '<span class="del">- a</span>' in page and '<span class="ins">+ b</span>' in page


def test_bad_results_files_are_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"tool": "unohil",\n "scenarios": [}')
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{bad}:2:16: not a results file" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text('{"tool": "unohil", "schema": 99, "scenarios": []}')
    assert main(["report", str(other), "-o", str(tmp_path / "r.html")]) == 2
    assert "schema 99" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def dump_dom(page: Path, tmp_path: Path) -> tuple[str, str]:
    """The page as chromium leaves it after its scripts ran, and chromium's log (console messages).
    Skipped where there is no chromium, except in CI: .ci/run installs Debian's and sets
    UNOHIL_REQUIRE_CHROMIUM=1, so there a missing browser fails rather than skipping the check."""
    if CHROMIUM is None:
        if os.environ.get("UNOHIL_REQUIRE_CHROMIUM"):
            pytest.fail("chromium is required (UNOHIL_REQUIRE_CHROMIUM=1) but not installed")
        pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium with apt-get)")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr",
           "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def _console(log: str) -> list[str]:
    """What the page wrote to the console (the report writes nothing there: any line is a fault)."""
    return [line for line in log.splitlines() if ":CONSOLE" in line]


def test_the_page_loads_in_chromium_with_no_errors_and_its_elements(results, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(results), "-o", str(out)]) == 0
    dom, log = dump_dom(out, tmp_path)
    doc = json.loads(results.read_text())
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-errors=""' in body and _console(log) == []
    assert f'data-ready="{len(doc["scenarios"])}"' in body               # the script ran to its end
    assert dom.count('class="timeline"') >= len(doc["scenarios"])
    assert dom.count('class="histogram"') >= 3 and 'id="summary"' in dom
    assert 'data-status="fail"' in dom and "wrongly expects a" in dom


def test_the_browser_check_catches_a_script_error(results, tmp_path):
    doc = json.loads(results.read_text())
    broken = tmp_path / "broken.html"
    broken.write_text(report_html(RunRecord.from_document(doc)).replace("document.body.dataset.ready =", "undefinedThing();\n$&", 1)
                      .replace("$&", "document.body.dataset.ready ="))
    dom, log = dump_dom(broken, tmp_path)
    assert "undefinedThing is not defined" in re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-ready' not in re.search(r"<body([^>]*)>", dom).group(1)
    assert any("Uncaught ReferenceError: undefinedThing" in line for line in _console(log))


CLOSE_PRESSES = """
name: presses 1 ms apart
unit: showdown
config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
steps: [{load: 2}, {press: timer, at: start + 1000}, {press: paddle_a, at: green + 180000},
        {press: paddle_b, at: green + 181000}]
expect: {verdict: {loser: b}}
"""

# Run in the page by chromium: every pair of mark labels of a timeline whose boxes, as the browser lays the
# text out, share horizontal room and stand less than a line of labels (9 px) apart.
FIND_OVERLAPS = """<script>
var found = [];
document.querySelectorAll("svg.timeline").forEach(function (svg) {
  var boxes = Array.from(svg.querySelectorAll("text.label")).map(function (t) {
    var b = t.getBBox(); return {text: t.textContent, x0: b.x, x1: b.x + b.width, y: +t.getAttribute("y")}; });
  boxes.forEach(function (a, i) { boxes.slice(i + 1).forEach(function (b) {
    if (a.x0 < b.x1 && b.x0 < a.x1 && Math.abs(a.y - b.y) < 9) found.push(a.text + "/" + b.text); }); });
});
document.body.dataset.overlaps = found.join(" ");
document.body.dataset.labels = document.querySelectorAll("text.label").length;
</script></body>"""


def test_labels_of_marks_1_ms_apart_do_not_overlap_in_chromium(tmp_path):
    """Two presses 1 ms apart put their verdict times a few pixels apart on the zoomed timeline: their labels
    stack on lines of their lane rather than print over each other, as the browser lays them out."""
    (tmp_path / "close.yaml").write_text(CLOSE_PRESSES)
    assert main(["run", str(tmp_path / "close.yaml"), "-q", "--json", str(tmp_path / "r.json"), "--store", "off"]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    race = doc["scenarios"][0]["results"][0]
    times = {m.label: m.t_us for m in race_timeline(race, "showdown").marks if m.lane == TIMES}
    assert times["press_b_us"] - times["press_a_us"] == 1000
    page = tmp_path / "report.html"
    page.write_text(report_html(RunRecord.from_document(doc)).replace("</body>", FIND_OVERLAPS, 1))
    dom, _ = dump_dom(page, tmp_path)
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-overlaps=""' in body, body
    labels = re.findall(r'<text class="label"[^>]*>([^<]*)</text>', dom)
    assert {"press_a_us", "press_b_us", "green_us", "decisive_us", "knowable_us"} <= set(labels)
    assert f'data-labels="{len(labels)}"' in body
