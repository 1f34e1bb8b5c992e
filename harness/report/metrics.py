"""A run's figures as an OpenMetrics text file (`unohil run --metrics PATH`), for node_exporter's textfile
collector or a Pushgateway: base units in the names (seconds, `_seconds`), one family per figure with the
unit kind as a label, summaries with quantile labels, the units as an _info gauge, `# EOF` at the end: text
both an OpenMetrics parser and Prometheus's own text format read.
Read from the same results document the JSON file holds."""
from __future__ import annotations

# figure in the results -> metric family, its help
FAMILIES = {
    "processing_us": ("unohil_verdict_processing_seconds",
                      "From the moment the verdict was knowable to its header time (the unit's processing)."),
    "device_us": ("unohil_verdict_device_latency_seconds", "From the decisive input to the verdict's header time."),
    "inherent_us": ("unohil_verdict_inherent_seconds",
                    "From the decisive input to the moment the rules let the verdict be known."),
    "host_us": ("unohil_verdict_host_latency_seconds", "From the decisive input to the verdict's arrival at the host."),
    "host_processing_us": ("unohil_verdict_host_processing_seconds",
                           "From the moment the verdict was knowable to its arrival at the host."),
}
QUANTILES = (0.5, 0.9, 0.99)
STATUSES = ("passed", "failed", "skipped", "link_error", "reset", "error", "interrupted", "flaky")


def _label(value) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items() if v is not None) + "}"


def _seconds(us: float) -> str:
    return repr(us / 1e6)


def _quantile(sorted_us: list[int], q: float) -> int:
    """Nearest rank, as the results file's p50 and p99 are taken (run/results.py)."""
    return sorted_us[min(len(sorted_us) - 1, max(0, int(round(q * (len(sorted_us) - 1)))))]


def metrics_text(run) -> str:
    """The run's figures (report/run_record.py RunRecord) as OpenMetrics text: every race's, those its result
    store holds too."""
    from unohil.harness.report.results_json import stored_document
    doc = stored_document(run)
    out: list[str] = []

    def family(name: str, kind: str, help_text: str, unit: str | None = None) -> None:
        out.append(f"# TYPE {name} {kind}")
        if unit:
            out.append(f"# UNIT {name} {unit}")
        out.append(f"# HELP {name} {help_text}")

    summary = doc.get("summary", {})
    family("unohil_scenarios", "gauge", "Scenarios of the run by result (flaky: failed, then passed when run again).")
    out += [f"unohil_scenarios{_labels(status=s)} {summary.get(s, 0)}" for s in STATUSES]
    family("unohil_races", "gauge", "Races run.")
    out.append(f"unohil_races {summary.get('races', 0)}")
    family("unohil_run_duration_seconds", "gauge", "How long the run took (host time).", "seconds")
    out.append(f"unohil_run_duration_seconds {float(doc.get('duration_s') or 0)!r}")
    family("unohil_run_start_time_seconds", "gauge", "When the run started (Unix time).", "seconds")
    out.append(f"unohil_run_start_time_seconds {float(doc.get('started_unix') or 0)!r}")
    devices = doc.get("devices", [])
    if devices:
        # the info pattern as a gauge of 1: Prometheus's text format (the textfile collector's) has no info type
        family("unohil_unit_info", "gauge", "The units the run used (always 1).")
        out += [f"unohil_unit_info{_labels(url=d.get('url'), kind=d.get('kind'), serial=d.get('serial'), firmware=d.get('firmware'), catalog_crc=d.get('catalog_crc'))} 1"
                for d in devices]
    samples: dict[tuple[str, str], list[int]] = {}
    for sc in doc.get("scenarios", []):
        for race in sc.get("results", []):
            for figure, value in (race.get("latency") or {}).items():
                if figure in FAMILIES and value is not None:
                    samples.setdefault((figure, sc.get("unit", "")), []).append(int(value))
    for figure, (name, help_text) in FAMILIES.items():
        kinds = sorted(kind for f, kind in samples if f == figure)
        if not kinds:
            continue
        family(name, "summary", help_text, "seconds")
        for kind in kinds:
            values = sorted(samples[figure, kind])
            out += [f"{name}{_labels(kind=kind, quantile=q)} {_seconds(_quantile(values, q))}" for q in QUANTILES]
            out.append(f"{name}_sum{_labels(kind=kind)} {_seconds(sum(values))}")
            out.append(f"{name}_count{_labels(kind=kind)} {len(values)}")
    out.append("# EOF")
    return "\n".join(out) + "\n"
