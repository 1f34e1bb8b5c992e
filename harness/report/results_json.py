"""The JSON results file of a run: every scenario, race, verdict and figure, for machines."""
from __future__ import annotations

import json
import time

from harness.outcome import tally
from harness.report.files import write_atomic
from harness.run.results import ScenarioResult
from harness.session.health import LinkHealth

SCHEMA_VERSION = 2          # 2: "skip" (was "skipped") is the status of a scenario that did not run


def results_json(results: list[ScenarioResult], health: LinkHealth, devices: list[dict], started: float) -> dict:
    return {
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


def write_json(path, doc: dict) -> None:
    write_atomic(path, json.dumps(doc, indent=1, default=str) + "\n")
