"""The record of a run: the one thing every output of `unohil run` is drawn from.

A run makes its RunRecord once, when it ends: each scenario's `ScenarioResult` (its races, their
verdicts, figures, events and console lines), the units' identities, the link health, when it
started, how long it took and what stopped it. The console summary, the JSON results file, JUnit,
the metrics, the HTML page, the VCD files and the Perfetto export all render this record, and
reading a results file back (`load_run`, `RunRecord.from_document`) gives the same record, so
`unohil report FILE` draws what the live run would have drawn.

A long run keeps only the races that did not pass in memory (`ScenarioResult.kept`); the others are
in its result store (run/result_store.py), which the record carries so the JSON file can still be
written whole, a scenario at a time.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from unohil.harness.outcome import Outcome
from unohil.harness.run.results import RaceResult, ScenarioResult
from unohil.harness.scenarios.model import Scenario
from unohil.harness.session.health import LinkHealth

# The version of the JSON results file (report/results_json.py):
# 2: "skip" (was "skipped") is the status of a scenario that did not run
# 3: "interrupted", the status of a scenario a signal cut short; summary.interrupted; "interrupted" says
#    which signal stopped the run and how many scenarios it kept from running
# 4: every race has its "events" (before: only the races that did not pass), so a report can draw
#    each race's timeline; a device has boot_id, catalog_crc, trace
# 5: summary counts link_error, reset and error apart (before: in failed, which now counts fails only)
# 6: every race names the unit it ran on (serial, boot_id); a device not opened or replaced by another
#    unit after an outage has "error"
# 7: --rerun-failed: a race run again has "retries" (each try's status) and "flaky"; a scenario whose failed
#    races all passed when run again has "flaky": true (its status stays "fail"); summary.flaky counts them
SCHEMA_VERSION = 7


@dataclass
class RunRecord:
    scenarios: list[ScenarioResult]
    devices: list[dict] = field(default_factory=list)   # each unit's identity: url, kind, firmware, serial, ...
    health: LinkHealth = field(default_factory=LinkHealth)
    started: float = 0.0                # unix seconds
    duration_s: float | None = None     # None: the run is still going (measured when asked for)
    interrupted: dict | None = None     # a signal stopped it: which, and how many scenarios it kept from running
    store: object = field(default=None, repr=False)     # the run's ResultStore, holding its passing races
    schema: int = SCHEMA_VERSION        # a record read from a file: the file's schema

    def seconds(self) -> float:
        """How long the run took (so far, for a run still going), to the millisecond."""
        return self.duration_s if self.duration_s is not None else round(time.time() - self.started, 3)

    def ended(self) -> "RunRecord":
        """The record with its duration fixed now: every output written from it says the same."""
        if self.duration_s is None:
            self.duration_s = round(time.time() - self.started, 3)
        return self

    def whole(self, res: ScenarioResult) -> ScenarioResult:
        """res with every race: a scenario whose passing races went to the run's store (a kept result
        holds only its failures) read back from it, with its events, as the results file has it."""
        if self.store is not None and self.store.holds(res):
            return scenario_from_dict(json.loads("".join(self.store.text(res))))
        return res

    @classmethod
    def from_document(cls, doc: dict) -> "RunRecord":
        """The record a results document (results_json, or its file as json read it) was written from."""
        return cls(scenarios=[scenario_from_dict(s) for s in doc["scenarios"]], devices=list(doc.get("devices", [])),
                   health=LinkHealth(**{k: v for k, v in doc.get("health", {}).items()
                                        if k in LinkHealth.__dataclass_fields__}),
                   started=doc.get("started_unix", 0.0), duration_s=doc.get("duration_s", 0.0),
                   interrupted=doc.get("interrupted"), schema=doc.get("schema", SCHEMA_VERSION))


def load_run(path) -> RunRecord:
    """The record of a results file written by `unohil run --json`; one clear error if it is not one."""
    from unohil.harness.report.results_json import read_results
    return RunRecord.from_document(read_results(path))


def scenario_from_dict(d: dict) -> ScenarioResult:
    """A scenario's result as its part of a results file tells it. Of its scenario the file keeps what
    the reports name (name, file, line, unit kind, tags), not its steps or expectations."""
    races = [race_from_dict(r) for r in d.get("results", [])]
    scenario = Scenario(name=d["name"], file=d.get("file", ""), line=d.get("line", 0), unit=d.get("unit", ""),
                        tags=tuple(d.get("tags", ())), seed=None, config={}, races=[r.env for r in races], steps=[],
                        expectations=[], end=None, timeout_us=None)
    return ScenarioResult(scenario, d.get("device", "-"), races=races, status=Outcome(d.get("status", "pass")),
                          health=LinkHealth(**{k: v for k, v in d.get("health", {}).items()
                                               if k in LinkHealth.__dataclass_fields__}),
                          mode=d.get("mode", "test-mode"), wall_s=d.get("wall_s", 0.0), error=d.get("error", ""),
                          applicable=d.get("applicable", True))


def race_from_dict(d: dict) -> RaceResult:
    """A race as the results file tells it; its events are the file's (device us from the race start)."""
    return RaceResult(index=d["index"], env=dict(d.get("env", {})), status=Outcome(d.get("status", "pass")),
                      failures=list(d.get("failures", [])), verdicts=list(d.get("verdicts", [])),
                      latency=dict(d.get("latency", {})), timing_errors_us=list(d.get("timing_errors_us", [])),
                      budgets=dict(d.get("budgets", {})), error=d.get("error", ""), reruns=list(d.get("reruns", [])),
                      retries=list(d.get("retries", [])), rig=d.get("rig"), serial=d.get("serial"),
                      boot_id=d.get("boot_id"), console=list(d.get("console", [])),
                      told_events=d.get("events"))
