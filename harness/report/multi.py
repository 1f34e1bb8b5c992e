"""The page of several runs (`unohil report a.json b.json ...`, or runs from a results store): each run's
counts and units, each figure's trend from run to run, and what compare finds between each run and the next
(harness/store/compare.py), regressions first."""
from __future__ import annotations

from datetime import datetime, timezone

from unohil.harness.report.html import CATCH_ERRORS, CSS, _pct, e
from unohil.harness.text import duration_rounded
from unohil.harness.store.compare import DEVICE_FIGURES, compare

MULTI_CSS = """
.regression{color:#c62828;font-weight:bold} .trend polyline{fill:none;stroke-width:2}
section.change{border-left:3px solid #ddd;padding-left:10px;margin:8px 0}
section.change[data-regressions]:not([data-regressions="0"]){border-left-color:#c62828}
"""
LINES = (("p50", "#1565c0"), ("p99", "#c62828"))


def _started(doc: dict) -> str:
    return datetime.fromtimestamp(doc.get("started_unix") or 0, timezone.utc).strftime("%Y-%m-%d %H:%M")


def _units(doc: dict) -> str:
    return ", ".join(f"{d.get('kind')} {d.get('firmware') or '?'} (serial {d.get('serial')})"
                     for d in doc.get("devices", []))


def _figures(doc: dict, kind: str, figure: str) -> list[int]:
    return sorted(r["latency"][figure] for s in doc.get("scenarios", []) if s.get("unit") == kind
                  for r in s.get("results", []) if (r.get("latency") or {}).get(figure) is not None)


def _trend_svg(points: list[dict], title: str) -> str:
    """p50 and p99 per run as two lines over the runs, in order."""
    left, w, h = 60, 420, 120
    top = max(max(p["p99"], p["p50"]) for p in points) or 1
    step = w / max(len(points) - 1, 1)
    out = [f'<svg class="trend" width="{left + w + 30}" height="{h + 40}" role="img" aria-label="{e(title)}">',
           f'<text x="{left}" y="12">{e(title)}</text>', f'<text x="2" y="24">{e(duration_rounded(top))}</text>',
           f'<line x1="{left}" x2="{left + w}" y1="{h}" y2="{h}" stroke="#999"/>']
    for key, colour in LINES:
        xy = " ".join(f"{left + i * step:.1f},{h - p[key] / top * (h - 24):.1f}" for i, p in enumerate(points))
        out.append(f'<polyline data-line="{key}" points="{xy}" stroke="{colour}"><title>{key}</title></polyline>')
    out += [f'<text x="{left + i * step:.1f}" y="{h + 14}" text-anchor="middle">run {i + 1}</text>'
            for i in range(len(points))]
    out.append(f'<text x="{left + w}" y="{h + 30}" text-anchor="end" fill="#1565c0">p50</text>'
               f'<text x="{left + w - 40}" y="{h + 30}" text-anchor="end" fill="#c62828">p99</text></svg>')
    return "".join(out)


def _trends(runs: list[tuple[str, dict]]) -> list[str]:
    out = ['<section id="trends"><h2>Figures from run to run</h2>']
    kinds = sorted({s.get("unit") for _, doc in runs for s in doc.get("scenarios", [])})
    for kind in kinds:
        for figure in DEVICE_FIGURES:
            points = []
            for _, doc in runs:
                vals = _figures(doc, kind, figure)
                points.append({"n": len(vals), "p50": _pct(vals, 50) if vals else 0, "p99": _pct(vals, 99) if vals else 0,
                               "max": vals[-1] if vals else 0})
            if not any(p["n"] for p in points):
                continue
            rows = "".join(f'<tr><td>run {i + 1}</td><td class="n">{p["n"]}</td><td class="n">{e(duration_rounded(p["p50"]))}'
                           f'</td><td class="n">{e(duration_rounded(p["p99"]))}</td><td class="n">{e(duration_rounded(p["max"]))}</td></tr>'
                           for i, p in enumerate(points))
            out.append(f'<figure data-trend="{e(figure)}" data-kind="{e(kind)}">'
                       + _trend_svg(points, f"{kind} {figure}")
                       + f'<table><tr><th></th><th>races</th><th>p50</th><th>p99</th><th>max</th></tr>{rows}</table>'
                       + '</figure>')
    out.append("</section>")
    return out


def _change(i: int, a: tuple[str, dict], b: tuple[str, dict]) -> list[str]:
    c = compare(a[1], b[1])
    out = [f'<section class="change" data-from="{i + 1}" data-to="{i + 2}" data-regressions="{len(c.regressions)}">'
           f'<h3>run {i + 1} &rarr; run {i + 2}: {c.compared} scenarios in both, '
           f'<span class="{"regression" if c.regressions else "pass"}">{len(c.regressions)} regression(s)</span></h3>']
    if c.changed:
        out.append('<table class="changed"><tr><th>verdict changed</th><th>before</th><th>after</th></tr>'
                   + "".join(f'<tr><td>{e(n)}</td><td class="{e(x)}">{e(x)}</td><td class="{e(y)}">{e(y)}</td></tr>'
                             for n, x, y in c.changed) + "</table>")
    for what, names in (("gone", c.gone), ("added", c.added)):
        if names:
            out.append(f'<p class="{what}"><b>{what}</b> ({len(names)}): ' + "; ".join(e(n) for n in names) + "</p>")
    if c.moved:
        out.append('<table class="moved"><tr><th>figure that moved</th><th>median before</th><th>after</th><th>races</th>'
                   '<th>P(A&lt;B)</th><th>p</th></tr>'
                   + "".join(f'<tr class="{"regression" if m.slower else ""}"><td>{e(m.scope)}: {e(m.figure)} '
                             f'({"slower" if m.slower else "faster"})</td><td class="n">{e(duration_rounded(m.median[0]))}</td>'
                             f'<td class="n">{e(duration_rounded(m.median[1]))}</td><td class="n">{m.n[0]}/{m.n[1]}</td>'
                             f'<td class="n">{m.p_hat:.2f}</td><td class="n">{m.p_value:.2g}</td></tr>' for m in c.moved)
                   + "</table>")
    if not c.any:
        out.append('<p class="muted">no changes</p>')
    out.append("</section>")
    return out


def multi_html(runs: list[tuple[str, dict]]) -> str:
    """runs: (name, results document), oldest first."""
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<meta name="viewport" content="width=device-width"><title>unohil: {len(runs)} runs</title>',
           f'<style>{CSS}{MULTI_CSS}</style></head><body data-runs="{len(runs)}">', f'<script>{CATCH_ERRORS}</script>',
           f'<h1>unohil: {len(runs)} runs</h1>', '<section id="changes"><h2>What changed</h2>']
    for i in range(len(runs) - 1):
        out += _change(i, runs[i], runs[i + 1])
    out.append('</section><section id="runs"><h2>Runs</h2><table><tr><th></th><th>results</th><th>started</th>'
               '<th>units</th><th>passed</th><th>failed</th><th>flaky</th><th>skipped</th><th>races</th></tr>')
    for i, (name, doc) in enumerate(runs):
        sm = doc.get("summary") or {}
        out.append(f'<tr data-run="{i + 1}"><td>run {i + 1}</td><td>{e(name)}</td><td>{e(_started(doc))}</td>'
                   f'<td>{e(_units(doc))}</td>' + "".join(f'<td class="n">{e(sm.get(k, 0))}</td>' for k in
                                                           ("passed", "failed", "flaky", "skipped", "races")) + "</tr>")
    out.append("</table></section>")
    out += _trends(runs)
    out.append('<script>document.body.dataset.ready = document.querySelectorAll("section.change").length;</script>')
    out.append("</body></html>\n")
    return "\n".join(out)
