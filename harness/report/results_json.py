"""The JSON results file of a run: every scenario, race, verdict and figure, for machines."""
from __future__ import annotations

import json
import time

from unohil.harness.outcome import tally
from unohil.harness.report.files import write_results
from unohil.harness.run.results import ScenarioResult
from unohil.harness.session.health import LinkHealth

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


def results_json(results: list[ScenarioResult], health: LinkHealth, devices: list[dict], started: float,
                 interrupted: dict | None = None, events: bool = True) -> dict:
    """The results document; events=False leaves out the races' events (a store keeps the rest)."""
    doc = {
        "schema": SCHEMA_VERSION,
        "tool": "unohil",
        "started_unix": round(started, 3),
        "duration_s": round(time.time() - started, 3),
        "devices": devices,
        "summary": _summary(results),
        "health": health.as_dict(),
        "scenarios": [_with_events(r) if events else r.as_dict() for r in results],
    }
    if interrupted is not None:
        doc["interrupted"] = interrupted
    return doc


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=1, default=str) + "\n"


def results_json_chunks(results: list[ScenarioResult], health: LinkHealth, devices: list[dict], started: float,
                        interrupted: dict | None = None, store=None):
    """The text of results_json, a scenario at a time: the whole document (every race's events as
    dicts, then as one string) never exists at once, so writing a long run's file costs the memory
    of its largest scenario, not of the run. store: a run/result_store.py ResultStore holding the
    text of the scenarios put there as they ended (read back a piece at a time)."""
    head = results_json([], health, devices, started, interrupted)
    head["summary"] = _summary(results)
    del head["scenarios"]
    yield json.dumps(head, indent=1, default=str)[:-2] + ',\n "scenarios": ['
    for i, r in enumerate(results):
        yield ("," if i else "") + "\n"
        if store is not None and store.holds(r):
            yield from store.text(r)
        else:
            yield scenario_json(r)
    yield "\n ]\n}\n"


def merged_results_json(parts: list[dict], started: float) -> dict:
    """One results document from the parts of several processes (pytest's xdist workers), each a dict of
    scenarios (as results_json writes them), devices and health."""
    from unohil.harness.outcome import Outcome
    scenarios = [sc for part in parts for sc in part["scenarios"]]
    health: dict[str, int] = {}
    for part in parts:
        for key, value in part["health"].items():
            health[key] = health.get(key, 0) + value
    return {"schema": SCHEMA_VERSION, "tool": "unohil", "started_unix": round(started, 3),
            "duration_s": round(time.time() - started, 3), "devices": [d for part in parts for d in part["devices"]],
            "summary": {"scenarios": len(scenarios), **tally(Outcome(sc["status"]) for sc in scenarios),
                        "flaky": sum(bool(sc.get("flaky")) for sc in scenarios),
                        "races": sum(len(sc["results"]) for sc in scenarios)},
            "health": health, "scenarios": scenarios}


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


def with_stored_races(scenarios: list[dict], results: list[ScenarioResult], store) -> list[dict]:
    """scenarios (results_json's, without events) with every race of those whose races went to the
    run's result store (a kept result holds only its failures), read back from it without their events:
    the document a results store records."""
    out = []
    for sc, res in zip(scenarios, results):
        if store is not None and store.holds(res):
            sc = json.loads("".join(store.text(res)))
            for race in sc["results"]:
                race.pop("events", None)
        out.append(sc)
    return out


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
