"""The HTML report of a run, from its results file: one self-contained page (inline CSS, SVG and a little
script; nothing fetched, so it opens offline and as a CI artifact): the summary and the units, latency
histograms, each scenario's outcome and diff, and a timeline of its races on the device-time axis
(harness/report/timeline.py)."""
from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone

from unohil.harness.report.junit import xml_text
from unohil.harness.report.timeline import CONSOLE, EVENTS, INPUTS, LANES, LIGHTS, RIG, STATE, TIMES, Timeline, race_timeline
from unohil.harness.text import duration_rounded
from unohil.harness.report.verdicts import outcome_text

#: The latency figures drawn as histograms (results file `latency` keys), with what each measures
LATENCIES = {"device_us": "verdict - decisive input, device clock",
             "processing_us": "verdict - earliest possible verdict, device clock",
             "host_us": "verdict's arrival - decisive input, host clock"}
TIMELINES_PER_SCENARIO = 6      # every race that did not pass is drawn; passing ones up to this many
BINS = 24
# A histogram of fewer samples than this says nothing a short table does not say better (and a page of
# one-sample histograms pushes the failures below the fold): below it, the figures are a table
HISTOGRAM_MIN = 20
# the order of the scenarios on the page: what went wrong first, then what passed, then what did not run
_ORDER = {"fail": 0, "error": 0, "link-error": 0, "reset": 0, "interrupted": 1, "pass": 2, "skip": 3}

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 3em;color:#222}
h1{margin:.6em 0 .2em} h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse} td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#17803d}.fail,.error,.link-error,.reset{color:#c62828}.skip{color:#a36b00}.flaky{color:#8e24aa}
details.scenario{border:1px solid #ddd;border-radius:4px;margin:4px 0;padding:2px 8px}
details.scenario>summary{cursor:pointer} details.scenario[data-status=pass]{border-color:#e4efe6}
pre.diff{background:#fafafa;padding:6px;overflow-x:auto} .del{color:#c62828}.ins{color:#17803d}
svg text{font:11px system-ui,sans-serif} .muted{color:#777}
#latency figure{display:inline-block;margin:4px 16px 4px 0;vertical-align:top}
.controls button{margin-right:6px} body.failures-only details.scenario[data-status=pass]{display:none}
"""

# The page's script: errors are caught first (a check of the page reads data-errors), the filter last
CATCH_ERRORS = """
document.body.dataset.errors = "";
window.addEventListener("error", function (e) { document.body.dataset.errors += e.message + ";"; });
"""
SCRIPT = """
document.querySelectorAll("[data-filter]").forEach(function (b) {
  b.addEventListener("click", function () {
    document.body.classList.toggle("failures-only", b.dataset.filter === "failures");
  });
});
document.body.dataset.ready = document.querySelectorAll("details.scenario").length;
"""

COLOURS = {"event": "#1565c0", "verdict": "#c62828", "press": "#2e7d32", "release": "#9e9e9e",
           "refused": "#ef6c00", "time": "#6a1b9a", "expected": "#ef6c00", "rig": "#00838f",
           "console": "#546e7a"}
PALETTE = ("#90caf9", "#a5d6a7", "#ffe082", "#ef9a9a", "#ce93d8", "#80cbc4", "#ffcc80", "#b0bec5")


def e(text) -> str:
    return html.escape(xml_text(text), quote=True)


def _nice_step(span: float, ticks: int = 8) -> float:
    raw = max(span, 1) / ticks
    mag = 10 ** (len(str(int(raw))) - 1)
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def _axis(x, lo: float, hi: float, y: int, height: int) -> list[str]:
    step = _nice_step(hi - lo)
    out = []
    t = (lo // step) * step
    while t <= hi:
        if t >= lo:
            out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{y}" y2="{y + height}" stroke="#eee"/>'
                       f'<text x="{x(t):.1f}" y="{y + height + 12}" text-anchor="middle">{e(duration_rounded(t))}</text>')
        t += step
    return out


GAP_PX = 46             # the width a compressed quiet stretch of a timeline is drawn at
GAP_SHARE = 0.2         # a stretch with nothing happening longer than this share of the race is compressed
GAP_MIN_US = 50_000     # ... and longer than this


def time_scale(times: list[int], end: float, left: float, width: float, window_us: int | None = None):
    """x(t) over [0, end] with long stretches drawn GAP_PX wide, so the decisive window (the presses, the
    verdict, its times) gets the width a countdown would take: every quiet stretch (no mark, span edge or
    event in it) longer than GAP_SHARE of the race and GAP_MIN_US, and, given window_us (where the decisive
    window starts: the verdict's earliest device time), what lies before it from the first thing after the
    race start (a countdown, beeps and all). Returns x and the compressed stretches [(start, end)]."""
    points = sorted({0, *(t for t in times if 0 <= t <= end), int(end)})
    longer = max(GAP_SHARE * end, GAP_MIN_US)
    gaps = [(a, b) for a, b in zip(points, points[1:]) if b - a > longer]
    if window_us is not None:
        start = next((t for t in points if t > 0), 0)
        stop = window_us - max(0.1 * (end - window_us), 1000)
        if stop - start > longer:
            gaps.append((start, int(stop)))
    merged: list[tuple[int, int]] = []
    for a, b in sorted(gaps):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    gaps = merged
    kept = end - sum(b - a for a, b in gaps)
    per_us = (width - GAP_PX * len(gaps)) / max(kept, 1)

    def x(t: float) -> float:
        pos, done = left, 0.0
        for a, b in gaps:
            if t <= a:
                break
            if t < b:
                return pos + (a - done) * per_us + (t - a) / (b - a) * GAP_PX
            pos += (a - done) * per_us + GAP_PX
            done = b
        return pos + (t - done) * per_us
    return x, gaps


def _gap_marks(x, gaps: list[tuple[int, int]], y: int, height: int) -> list[str]:
    out = []
    for a, b in gaps:
        out.append(f'<g class="gap" data-gap-us="{b - a}"><rect x="{x(a):.1f}" y="{y}" width="{x(b) - x(a):.1f}" '
                   f'height="{height}" fill="#f0f0f0"/><text x="{(x(a) + x(b)) / 2:.1f}" '
                   f'y="{y - 2}" text-anchor="middle">{e(duration_rounded(b - a))} drawn short</text>'
                   f'<title>{e(duration_rounded(b - a))} drawn short (each mark in it says its time)</title></g>')
    return out


def _scaled_axis(x, gaps, end: float, y: int, height: int) -> list[str]:
    """Ticks over the stretches drawn to scale (none inside a compressed one)."""
    out, lo = [], 0.0
    for a, b in gaps + [(end, end)]:
        if x(a) - x(lo) >= 80:     # a stretch too narrow for its own ticks is read off its neighbours
            out += _axis(x, lo, a, y, height)
        lo = b
    return out


LABEL_STEP = 9          # px between the lines of labels a lane stacks
LABEL_CHAR_PX = 6.6     # an 11 px sans-serif character's width, rounded up (digits and lower case)


def label_levels(labels: list[tuple[object, float, str]]) -> dict[int, tuple[object, int]]:
    """Each label (its lane, its mark's x, its text; in order of x) on the first line (1, 2, ...) of its lane
    where it clears the labels already there, so marks a few pixels apart (verdict times 1 ms apart) stack
    their labels rather than print them over each other: {index: (lane, line)}."""
    ends: dict[object, list[float]] = {}         # per lane, where each line's last label ends
    out = {}
    for i, (lane, x, text) in enumerate(labels):
        lines = ends.setdefault(lane, [])
        line = next((n for n, stop in enumerate(lines) if stop <= x), len(lines))
        if line == len(lines):
            lines.append(0.0)
        lines[line] = x + 3 + LABEL_CHAR_PX * len(text) + 4
        out[i] = (lane, line + 1)
    return out


def timeline_svg(tl: Timeline, title: str) -> str:
    left, width, row_h = 130, 820, 22
    lanes: list[tuple[str, str]] = [(STATE, "state")]
    lanes += [(INPUTS, "inputs")] + [(LIGHTS, r) for r in tl.rows(LIGHTS)]
    lanes += [(EVENTS, "events")] + [(EVENTS, r) for r in tl.rows(EVENTS)] + [(TIMES, "verdict times")]
    if any(m.lane == RIG for m in tl.marks):
        lanes.append((RIG, "rig"))
    if any(m.lane == CONSOLE for m in tl.marks):
        lanes.append((CONSOLE, "console"))
    end = max(tl.end_us * 1.05, 1)     # room for the labels of the last marks
    times = [m.t_us for m in tl.marks] + [t for s in tl.spans for t in (s.start_us, s.end_us)]
    window = min((m.t_us for m in tl.marks if m.lane == TIMES), default=None)
    x, gaps = time_scale(times, end, left, width, window)

    def squeezed(t: int) -> bool:
        return any(a < t < b for a, b in gaps)
    lane_row = {INPUTS: (INPUTS, "inputs"), EVENTS: (EVENTS, "events"), TIMES: (TIMES, "verdict times"),
                RIG: (RIG, "rig"), CONSOLE: (CONSOLE, "console")}
    marks = sorted(tl.marks, key=lambda m: m.t_us)
    level = label_levels([(lane_row[m.lane], x(m.t_us), m.label) for m in marks if not squeezed(m.t_us)])
    lane_h = {lane: row_h + LABEL_STEP * max(0, max((lv for (ln, lv) in level.values() if ln == lane), default=0) - 2)
              for lane in lanes}
    row_y, y = {}, 18
    for lane in lanes:
        row_y[lane], y = y, y + lane_h[lane]
    height = y
    parts = [f'<svg class="timeline" data-kind="{e(tl.kind)}" width="{left + width + 20}" height="{height + 20}" '
             f'role="img" aria-label="{e(title)}">']
    parts += _scaled_axis(x, gaps, end, 14, height - 14)
    parts += _gap_marks(x, gaps, 14, height - 14)
    for (lane, row), y in row_y.items():
        label = row if lane != LIGHTS else f"light {row}"
        parts.append(f'<text x="4" y="{y + 14}" class="lane">{e(label)}</text>')
    values = list(dict.fromkeys(s.value for s in tl.spans if s.value))
    for s in tl.spans:
        y = row_y[(s.lane, s.row if s.lane != STATE else "state")]
        colour = PALETTE[values.index(s.value) % len(PALETTE)] if s.value else "none"
        w = max(x(s.end_us) - x(s.start_us), 1.5)
        stroke = ' stroke="#5c6bc0"' if not s.value else ""
        parts.append(f'<rect class="span" x="{x(s.start_us):.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
                     f'fill="{colour}"{stroke}><title>{e(s.label)}: {e(duration_rounded(s.start_us))} to '
                     f'{e(duration_rounded(s.end_us))}</title></rect>')
        if s.value and w > 8 * len(s.value):
            parts.append(f'<text x="{x(s.start_us) + 3:.1f}" y="{y + 15}">{e(s.value)}</text>')
    placed = iter(level.values())
    for m in marks:
        lane = lane_row[m.lane]
        y, c = row_y[lane], COLOURS[m.kind]
        at = None if squeezed(m.t_us) else next(placed)[1]      # a label in a compressed stretch is left out
        parts.append(f'<g class="mark {e(m.kind)}"><line x1="{x(m.t_us):.1f}" x2="{x(m.t_us):.1f}" y1="{y + 2}" '
                     f'y2="{y + lane_h[lane] - 2}" stroke="{c}" stroke-width="{3 if m.kind == "verdict" else 2}"'
                     + (' stroke-dasharray="3 2"/>' if m.kind == "expected" else "/>")
                     + ("" if at is None else
                        f'<text class="label" x="{x(m.t_us) + 3:.1f}" y="{y + 8 + (at - 1) * LABEL_STEP}" '
                        f'fill="{c}">{e(m.label)}</text>')
                     + f'<title>{e(duration_rounded(m.t_us))} ({m.t_us} us): {e(m.detail or m.label)}</title></g>')
    parts.append("</svg>")
    return "".join(parts)


def histogram_svg(values: list[int], title: str) -> str:
    lo, hi = min(values), max(values)
    bins = [0] * BINS
    width_us = max((hi - lo) / BINS, 1e-9)
    for v in values:
        bins[min(BINS - 1, int((v - lo) / width_us))] += 1
    left, w, h = 40, 480, 120
    bar = w / BINS
    top = max(bins)
    parts = [f'<svg class="histogram" width="{left + w + 20}" height="{h + 40}" role="img" aria-label="{e(title)}">',
             f'<text x="{left}" y="12">{e(title)}</text>',
             f'<text x="2" y="{h + 18}">{top if top else 0}</text>']
    for i, n in enumerate(bins):
        bh = (n / top) * (h - 20) if top else 0
        a, b = lo + i * width_us, lo + (i + 1) * width_us
        parts.append(f'<rect x="{left + i * bar:.1f}" y="{h - bh + 0:.1f}" width="{bar - 1:.1f}" height="{bh:.1f}" '
                     f'fill="#5c6bc0"><title>{e(duration_rounded(round(a)))} to {e(duration_rounded(round(b)))}: {n}</title></rect>')
    parts.append(f'<line x1="{left}" x2="{left + w}" y1="{h}" y2="{h}" stroke="#999"/>'
                 f'<text x="{left}" y="{h + 14}">{e(duration_rounded(lo))}</text>'
                 f'<text x="{left + w}" y="{h + 14}" text-anchor="end">{e(duration_rounded(hi))}</text></svg>')
    return "".join(parts)


def _pct(vals: list, p: float):
    return vals[min(len(vals) - 1, max(0, int(round(p / 100 * (len(vals) - 1)))))]


def _latency_section(doc: dict) -> list[str]:
    """A histogram per figure and unit kind backed by HISTOGRAM_MIN races or more; the others in one table."""
    out = ['<section id="latency"><h2>Latency</h2>']
    few = []
    kinds = sorted({s["unit"] for s in doc["scenarios"]})
    for key, what in LATENCIES.items():
        for kind in kinds:
            vals = sorted(r["latency"][key] for s in doc["scenarios"] if s["unit"] == kind
                          for r in s["results"] if (r.get("latency") or {}).get(key) is not None)
            if not vals:
                continue
            if len(vals) < HISTOGRAM_MIN:
                few.append(f'<tr data-latency="{e(key)}" data-kind="{e(kind)}"><td>{e(kind)}</td><td>{e(key)}</td>'
                           f'<td class="n">{len(vals)}</td><td class="n">{e(duration_rounded(vals[0]))}</td>'
                           f'<td class="n">{e(duration_rounded(_pct(vals, 50)))}</td><td class="n">{e(duration_rounded(vals[-1]))}</td>'
                           f'<td class="muted">{e(what)}</td></tr>')
                continue
            out.append(f'<figure data-latency="{e(key)}" data-kind="{e(kind)}">'
                       + histogram_svg(vals, f"{kind} {key}: {what}")
                       + f'<figcaption>{len(vals)} races; median {e(duration_rounded(_pct(vals, 50)))}, '
                       + (f'p99 {e(duration_rounded(_pct(vals, 99)))}' if len(vals) >= 100 else
                          f'max {e(duration_rounded(vals[-1]))} (too few races for a p99)')
                       + '</figcaption></figure>')
    if few:
        out.append(f'<table class="few-samples"><tr><th>kind</th><th>figure</th><th>races</th><th>min</th>'
                   f'<th>median</th><th>max</th><th>(fewer than {HISTOGRAM_MIN} races: no histogram)</th></tr>'
                   + "".join(few) + "</table>")
    if len(out) == 1:
        out.append('<p class="muted">no race measured a latency</p>')
    out.append("</section>")
    return out


def failures_first(scenarios: list[dict]) -> list[tuple[int, dict]]:
    """The scenarios in the page's order, with their place in the file: failures first, then passes, then skips
    (each group in file order)."""
    return sorted(enumerate(scenarios), key=lambda item: _ORDER.get(str(item[1]["status"]), 0))


_EXPECTED = re.compile(r"^(?P<what>.*?): expected (?P<want>.*), got (?P<got>.*)$")


def diff_html(failures: list[str]) -> str:
    """Failures as a diff: what was expected (-) against what came (+)."""
    lines = []
    for f in failures:
        m = _EXPECTED.match(f)
        if m:
            lines.append(f'{e(m["what"])}\n<span class="del">- {e(m["want"])}</span>\n'
                         f'<span class="ins">+ {e(m["got"])}</span>')
        else:
            lines.append(e(f))
    return f'<pre class="diff">{chr(10).join(lines)}</pre>'


def _verdict_line(race: dict, kind: str) -> str:
    if not race.get("verdicts"):
        return "no verdict"
    return outcome_text(kind, race["verdicts"][-1]) or "a verdict"


def _scenario(i: int, s: dict) -> list[str]:
    races = s["results"]
    passed = sum(1 for r in races if r["status"] == "pass")
    shown = "flaky" if s.get("flaky") else s["status"]
    out = [f'<details class="scenario" id="scenario-{i}" data-status="{e(s["status"])}"'
           f'{" data-flaky" if s.get("flaky") else ""}{" open" if s["status"] not in ("pass", "skip") else ""}>'
           f'<summary><b class="{e(shown)}">{e(shown)}</b> {e(s["name"])} '
           f'<span class="muted">{e(s["unit"])}, {passed}/{len(races)} races, {e(s["file"])}:{s["line"]}</span>'
           f'</summary>']
    if s.get("error"):
        out.append(f'<p class="error">{e(s["error"])}</p>')
    bad = [r for r in races if r["status"] != "pass"]
    good = [r for r in races if r["status"] == "pass"]
    drawn = bad + good[:max(0, TIMELINES_PER_SCENARIO - len(bad))]
    for r in drawn:
        env = ", ".join(f"{k}={v}" for k, v in r.get("env", {}).items())
        out.append(f'<div class="race" data-status="{e(r["status"])}"><h4>race {r["index"]}'
                   f'{" (" + e(env) + ")" if env else ""}: <span class="{e(r["status"])}">{e(r["status"])}</span>, '
                   f'{e(_verdict_line(r, s["unit"]))}</h4>')
        if r.get("error"):
            out.append(f'<p class="error">{e(r["error"])}</p>')
        if r.get("failures"):
            out.append(diff_html(r["failures"]))
        if (r.get("rig") or {}).get("worst"):
            out.append('<p class="rig-view">the rig saw: ' + e(", ".join(
                f"{k} {v} us" for k, v in r["rig"]["worst"].items() if v is not None)) + " (worst of the race)</p>")
        if r.get("events"):
            out.append(timeline_svg(race_timeline(r, s["unit"]), f'{s["name"]} race {r["index"]}'))
        else:
            out.append('<p class="muted">no events recorded for this race (a results file before schema 3 '
                       'keeps them for failed races only)</p>')
        out.append("</div>")
    if len(races) > len(drawn):
        out.append(f'<p class="muted">{len(races) - len(drawn)} more passing race(s) not drawn</p>')
    out.append("</details>")
    return out


def report_html(run, source: str = "") -> str:
    """The page of a run (report/run_record.py RunRecord), drawn from its results document."""
    from unohil.harness.report.results_json import plain, results_json
    doc = plain(results_json(run))
    summary = doc.get("summary", {})
    started = datetime.fromtimestamp(doc.get("started_unix", 0), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<meta name="viewport" content="width=device-width"><title>unohil report {e(started)}</title>',
           f'<style>{CSS}</style></head><body data-schema="{e(doc.get("schema"))}">',
           f'<script>{CATCH_ERRORS}</script>',
           f'<h1>unohil report</h1><p class="muted">{e(source)} &middot; started {e(started)}, took '
           f'{e(duration_rounded(round(doc.get("duration_s", 0) * 1e6)))}</p>',
           '<section id="summary"><h2>Summary</h2><table>']
    for key in ("scenarios", "passed", "failed", "flaky", "link_error", "error", "skipped", "races"):
        out.append(f'<tr><th>{key}</th><td class="n {key[:4] if key != "passed" else "pass"}" data-count="{key}">'
                   f'{e(summary.get(key, 0))}</td></tr>')
    out.append('</table><h3>Units</h3><table><tr><th>url</th><th>kind</th><th>firmware</th><th>serial</th>'
               '<th>boot id</th><th>catalogue CRC</th><th>trace</th></tr>')
    for d in doc.get("devices", []):
        out.append("<tr>" + "".join(f"<td>{e(d.get(k) if d.get(k) is not None else '-')}</td>" for k in
                                    ("url", "kind", "firmware", "serial", "boot_id", "catalog_crc", "trace")) + "</tr>")
    health = doc.get("health", {})
    out.append('</table><p>link health: ' + e(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in health.items()))
               + '</p></section>')
    out += _latency_section(doc)
    out.append('<section id="scenarios"><h2>Scenarios</h2><p class="controls">'
               '<button data-filter="all">all</button><button data-filter="failures">failures only</button></p>')
    lanes = ", ".join(LANES)
    out.append(f'<p class="muted">Timelines: device time from each race start; lanes {e(lanes)}; '
               'marks are the unit kind\'s anchors and verdict (catalogue), its inputs, and the device times '
               'the verdict carries; spans are the unit\'s states, lights and timers.</p>')
    for i, s in failures_first(doc.get("scenarios", [])):
        out += _scenario(i, s)
    out.append("</section>")
    out.append(f'<script type="application/json" id="results-summary">'
               f'{json.dumps(summary).replace("<", chr(92) + "u003c")}</script>')
    out.append(f'<script>{SCRIPT}</script>')
    out.append("</body></html>\n")
    return "\n".join(out)


def bench_html(doc: dict, source: str = "") -> str:
    """A `unohil bench --json` file as one page: per unit kind, a histogram of each verdict figure,
    then the link's own figures and floors, each with its sample count (labels as the console's)."""
    from unohil.harness.measure.latency import LINK_LABELS, UNIT_LABELS
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width"><title>unohil bench</title>',
           f'<style>{CSS}</style></head><body data-bench="1">', f'<script>{CATCH_ERRORS}</script>',
           f'<h1>unohil bench</h1><p class="muted">{e(source)} &middot; {e(doc.get("races"))} races per unit on '
           f'{e(doc.get("device"))} (emission time: {e(doc.get("emission_time"))})</p>']

    def figure(vals: list, title: str, key: str, kind: str) -> str:
        vals = sorted(vals)
        return (f'<figure data-latency="{e(key)}" data-kind="{e(kind)}">' + histogram_svg(vals, title)
                + f'<figcaption>{len(vals)} samples; median {e(duration_rounded(_pct(vals, 50)))}, '
                + (f'p99 {e(duration_rounded(_pct(vals, 99)))}' if len(vals) >= 100 else
                   f'max {e(duration_rounded(vals[-1]))} (too few samples for a p99)') + '</figcaption></figure>')

    for kind, unit in doc.get("units", {}).items():
        spread = ", ".join(f"{k} {v}" for k, v in unit.get("outcomes", {}).items())
        out.append(f'<section class="bench-unit" data-kind="{e(kind)}"><h2>{e(kind)}</h2>'
                   f'<p class="muted">verdicts: {e(spread)}</p>')
        for key, label in UNIT_LABELS.items():
            vals = unit.get("samples", {}).get(key)
            if vals:
                out.append(figure(vals, f"{kind}: {label}", key, kind))
        out.append("</section>")
    out.append('<section id="link"><h2>The link and its floors</h2>')
    for key, label in LINK_LABELS.items():
        vals = doc.get("samples", {}).get(key)
        if vals:
            out.append(figure(vals, label, key, "link"))
    out.append("</section></body></html>\n")
    return "\n".join(out)
