"""The JSON results file of a run: every scenario, race, verdict and figure, for machines."""
from __future__ import annotations

import json
import time

from harness.outcome import tally
from harness.report.files import write_results
from harness.run.results import ScenarioResult
from harness.session.health import LinkHealth

# 2: "skip" (was "skipped") is the status of a scenario that did not run
# 3: "interrupted", the status of a scenario a signal cut short; summary.interrupted; "interrupted" says
#    which signal stopped the run and how many scenarios it kept from running
SCHEMA_VERSION = 3


def results_json(results: list[ScenarioResult], health: LinkHealth, devices: list[dict], started: float,
                 interrupted: dict | None = None) -> dict:
    doc = {
        "schema": SCHEMA_VERSION,
        "tool": "unohil",
        "started_unix": round(started, 3),
        "duration_s": round(time.time() - started, 3),
        "devices": devices,
        "summary": {
            "scenarios": len(results),
            **tally(r.status for r in results),
            "races": sum(len(r.races) for r in results),
        },
        "health": health.as_dict(),
        "scenarios": [r.as_dict() for r in results],
    }
    if interrupted is not None:
        doc["interrupted"] = interrupted
    return doc


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=1, default=str) + "\n"


def write_json(path, doc: dict) -> None:
    write_results(path, json_text(doc), "--json")
