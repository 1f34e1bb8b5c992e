"""The JSON results file of a run: every scenario, race, verdict and figure, for machines."""
from __future__ import annotations

import json

from unohil.harness.outcome import tally
from unohil.harness.report.files import write_results
from unohil.harness.report.run_record import SCHEMA_VERSION, RunRecord, scenario_from_dict
from unohil.harness.run.results import ScenarioResult
from unohil.harness.session.health import LinkHealth


def results_json(run: RunRecord, events: bool = True) -> dict:
    """The results document, every race of it (those the run's store holds read back); events=False leaves
    out the events of the races that passed."""
    doc = {
        "schema": run.schema,
        "tool": "unohil",
        "started_unix": round(run.started, 3),
        "duration_s": run.seconds(),
        "devices": run.devices,
        "summary": _summary(run.scenarios),
        "health": run.health.as_dict(),
        "scenarios": [_with_events(r) if events else r.as_dict() for r in map(run.whole, run.scenarios)],
    }
    if run.interrupted is not None:
        doc["interrupted"] = run.interrupted
    return doc


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=1, default=str) + "\n"


def results_json_chunks(run: RunRecord):
    """The text of results_json, a scenario at a time: the whole document (every race's events as
    dicts, then as one string) never exists at once, so writing a long run's file costs the memory
    of its largest scenario, not of the run. The run's store (run/result_store.py ResultStore), when
    it has one, holds the text of the scenarios put there as they ended (read back a piece at a time)."""
    head = results_json(RunRecord([], run.devices, run.health, run.started, run.seconds(), run.interrupted,
                                  schema=run.schema))
    head["summary"] = _summary(run.scenarios)
    del head["scenarios"]
    yield json.dumps(head, indent=1, default=str)[:-2] + ',\n "scenarios": ['
    for i, r in enumerate(run.scenarios):
        yield ("," if i else "") + "\n"
        if run.store is not None and run.store.holds(r):
            yield from run.store.text(r)
        else:
            yield scenario_json(r)
    yield "\n ]\n}\n"


def stored_document(run: RunRecord) -> dict:
    """The results document as a results store records it and the metrics read it: every race, the events
    only of the failed races the run kept in memory."""
    doc = plain(results_json(run, events=False))
    for sc, res in zip(doc["scenarios"], run.scenarios):
        if run.store is not None and run.store.holds(res):
            for race in sc["results"]:
                race.pop("events", None)
    return doc


def merged_run(parts: list[dict], started: float) -> RunRecord:
    """One record of the parts of several processes (pytest's xdist workers), each a dict of scenarios (as
    results_json writes them), devices and health."""
    health = LinkHealth()
    for part in parts:
        health.add(LinkHealth(**part["health"]))
    return RunRecord([scenario_from_dict(sc) for part in parts for sc in part["scenarios"]],
                     [d for part in parts for d in part["devices"]], health, started).ended()


def results_part(results: list[ScenarioResult], health: LinkHealth, devices: list[dict]) -> dict:
    """One process's part of a merged document (plain JSON values, to cross a process boundary)."""
    return json.loads(json.dumps({"scenarios": [_with_events(r) for r in results], "health": health.as_dict(),
                                  "devices": devices}, default=str))


def _summary(results: list[ScenarioResult]) -> dict:
    return {"scenarios": len(results), **tally(r.status for r in results), "flaky": sum(r.flaky for r in results),
            "races": sum(r.race_count() for r in results)}


def scenario_json(res: ScenarioResult) -> str:
    """One scenario's part of the results file: its figures and every race, with the race's events."""
    return json.dumps(_with_events(res), indent=1, default=str)


def _with_events(res: ScenarioResult) -> dict:
    d = res.as_dict()
    for race, out in zip(res.races, d["results"]):
        out.setdefault("events", race.events)
    return d


def plain(doc: dict) -> dict:
    """The document as a reader of its file gets it (outcomes as their words, every value JSON's)."""
    return json.loads(json.dumps(doc, default=str))


def write_json(path, doc: dict) -> None:
    write_results(path, json_text(doc), "--json")


def read_results(path) -> dict:
    """A results file written by `unohil run --json`, for the reports drawn from it; one clear error if not."""
    from unohil.harness.errors import UsageError
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the results file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not a results file (not UTF-8 text at byte {exc.start})") from None
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        where = f"{exc.lineno}:{exc.colno}: " if isinstance(exc, json.JSONDecodeError) else ""
        raise UsageError(f"{path}:{where}not a results file (not JSON: {exc.msg if where else exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "unohil" or not isinstance(doc.get("scenarios"), list):
        raise UsageError(f"{path}: not a results file of `unohil run --json` (no tool: unohil and scenarios)")
    if not isinstance(doc.get("schema"), int) or doc["schema"] > SCHEMA_VERSION:
        raise UsageError(f"{path}: results file schema {doc.get('schema')!r}; this unohil reads schema "
                         f"{SCHEMA_VERSION} and older: update unohil")
    return doc
