"""Recording a results document (the JSON `unohil run`, `conform` and the pytest plugin write) into a store,
and reading a stored run back in the same shape, so compare and the reports read either alike."""
from __future__ import annotations

import json
import time

from unohil.harness.store.backend import Store

FIGURES = ("device_us", "inherent_us", "processing_us", "host_us", "host_processing_us")


def record(store: Store, doc: dict, command: str, results_path: str | None = None) -> int:
    """The document as one stored run, in one transaction; its id."""
    if "checks" in doc and "coverage" in doc:
        return _record_conform(store, doc, results_path)
    if (doc.get("bench") and isinstance(doc.get("units"), dict)) or ("rig" in doc and "samples" in doc):
        doc = bench_as_run(doc)         # `bench`, or `bench --rig`'s document
    summary = doc.get("summary", {})
    scenarios = doc.get("scenarios", [])
    flaky = sum(1 for s in scenarios if s.get("flaky"))
    run_id = store.insert(
        "INSERT INTO runs (command, started_unix, duration_s, results_path, status, scenarios, passed, failed, "
        "skipped, other, races, recorded_unix, flaky) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (command, float(doc.get("started_unix") or time.time()), doc.get("duration_s"), results_path,
         _run_status(summary), summary.get("scenarios", len(scenarios)), summary.get("passed", 0),
         summary.get("failed", 0), summary.get("skipped", 0),
         sum(summary.get(k, 0) for k in ("link_error", "reset", "error", "interrupted")),
         summary.get("races", 0), time.time(), flaky))
    units = {d.get("url"): _unit(store, run_id, d) for d in doc.get("devices", [])}
    scenario_ids = store.insert_many(
        "scenarios", ("run_id", "unit_id", "kind", "name", "file", "line", "status", "races", "failed_races",
                      "error", "flaky"),
        [(run_id, units.get(sc.get("device")), sc.get("unit", ""), sc["name"], sc.get("file"), sc.get("line"),
          str(sc["status"]), sc.get("races", 0), sc.get("failed_races", 0), sc.get("error") or None,
          int(bool(sc.get("flaky")))) for sc in scenarios])
    races = [(scenario_id, race) for scenario_id, sc in zip(scenario_ids, scenarios) for race in sc.get("results", [])]
    race_ids = store.insert_many(
        "races", ("scenario_id", "idx", "status", "verdict", "flaky"),
        [(scenario_id, race.get("index", 0), str(race["status"]), json.dumps(race.get("verdicts") or [], sort_keys=True),
          int(bool(race.get("flaky")))) for scenario_id, race in races])
    store.many("figures", ("race_id", "name", "value_us"),
               [(race_id, name, int(value)) for race_id, (_, race) in zip(race_ids, races)
                for name, value in (race.get("latency") or {}).items()
                if (name in FIGURES or command == "bench") and value is not None])
    store.commit()
    return run_id


def bench_as_run(doc: dict) -> dict:
    """`unohil bench --json` as a run: per unit kind a scenario `bench` whose i-th race holds each figure's i-th
    sample (its figures' names as the bench gives them: processing_us, read_us, delivered_us, command_rtt_us;
    through a rig, press_to_OUTPUT_us and the rest of measure/rig_latency.py's)."""
    scenarios, devices = [], []
    units = doc.get("units")
    if units is None:       # `bench --rig`: one unit, its figures from the physical press (harness/measure/rig_latency.py)
        units = {doc["kind"]: {"samples": doc.get("samples"), "device": doc.get("device"),
                               "identity": doc.get("identity")}} if doc.get("kind") else {}
    for kind, unit in units.items():
        samples = unit.get("samples") or {}
        n = max((len(v) for v in samples.values()), default=0)
        races = [{"index": i, "status": "pass", "latency": {k: v[i] for k, v in samples.items() if i < len(v)}}
                 for i in range(n)]
        device = str(unit.get("device") or doc.get("device") or kind)
        devices.append({"url": device, "kind": kind, **(unit.get("identity") or {})})
        scenarios.append({"name": "bench", "unit": kind, "device": device, "status": "pass", "races": n,
                          "failed_races": 0, "results": races})
    return {"started_unix": doc.get("started_unix"), "devices": devices, "scenarios": scenarios,
            "summary": {"scenarios": len(scenarios), "passed": len(scenarios),
                        "races": sum(s["races"] for s in scenarios)}}


def _run_status(summary: dict) -> str:
    if summary.get("interrupted"):
        return "interrupted"
    if summary.get("failed"):
        return "fail"
    if any(summary.get(k) for k in ("link_error", "reset", "error")):
        return "error"
    return "pass"


def _unit(store: Store, run_id: int, device: dict) -> int:
    return store.insert(
        "INSERT INTO units (run_id, url, kind, serial, firmware, boot_id, catalog_crc, error) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, device.get("url") or "", device.get("kind"), device.get("serial"), device.get("firmware"),
         device.get("boot_id"), _crc(device.get("catalog_crc")), device.get("error")))


def _crc(value) -> str | None:
    """A catalogue CRC as the results file writes it (0xd4ea), from either form."""
    if value is None:
        return None
    return f"{value:#06x}" if isinstance(value, int) else str(value)


def _record_conform(store: Store, doc: dict, results_path: str | None) -> int:
    from unohil.harness.report.junit import device_from_identity
    checks = doc.get("checks", [])
    statuses = [str(c["status"]) for c in checks]
    run_id = store.insert(
        "INSERT INTO runs (command, started_unix, duration_s, results_path, status, scenarios, passed, failed, "
        "skipped, other, races, recorded_unix) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("conform", float(doc.get("started_unix") or time.time()), doc.get("wall_s"), results_path,
         doc.get("verdict") or ("pass" if doc.get("passed") else "fail"), len(checks), statuses.count("pass"),
         statuses.count("fail"), statuses.count("skip"),
         len(statuses) - sum(statuses.count(s) for s in ("pass", "fail", "skip")), 0, time.time()))
    _unit(store, run_id, device_from_identity(doc.get("device") or "", doc.get("identity") or {}))
    store.many("checks", ("run_id", "section", "name", "status", "detail"),
               [(run_id, c.get("section", ""), c["name"], str(c["status"]), c.get("detail") or None) for c in checks])
    cov = doc.get("coverage") or {}
    store.many("coverage", ("run_id", "item", "status"),
               [(run_id, item.get("title") or item.get("id"), item.get("status", ""))
                for part in ("sections", "decisions") for item in cov.get(part, [])])
    store.commit()
    return run_id


def stored_run(store: Store, run_id: int) -> dict:
    """A stored run in the shape of a results file (devices, summary, scenarios with their races' status,
    verdicts and figures): what compare reads."""
    found = store.rows("SELECT id, command, started_unix, duration_s, results_path FROM runs WHERE id = ?", (run_id,))
    if not found:
        from unohil.harness.store.backend import StoreError
        raise StoreError(f"store {store.where}: no run {run_id}")
    _, command, started, duration, path = found[0]
    devices = [{"url": url, "kind": kind, "serial": serial, "firmware": fw, "boot_id": boot, "catalog_crc": crc}
               for url, kind, serial, fw, boot, crc in store.rows(
                   "SELECT url, kind, serial, firmware, boot_id, catalog_crc FROM units WHERE run_id = ? ORDER BY id",
                   (run_id,))]
    scenarios, by_id = [], {}
    for sid, kind, name, file, line, status, flaky, error in store.rows(
            "SELECT id, kind, name, file, line, status, flaky, error FROM scenarios WHERE run_id = ? ORDER BY id",
            (run_id,)):
        by_id[sid] = {"name": name, "unit": kind, "file": file, "line": line, "status": status,
                      "flaky": bool(flaky), "error": error or "", "results": []}
        scenarios.append(by_id[sid])
    races = {}
    for rid, sid, idx, status, verdict, flaky in store.rows(
            "SELECT r.id, r.scenario_id, r.idx, r.status, r.verdict, r.flaky FROM races r JOIN scenarios s "
            "ON s.id = r.scenario_id WHERE s.run_id = ? ORDER BY r.id", (run_id,)):
        races[rid] = {"index": idx, "status": status, "verdicts": json.loads(verdict or "[]"), "flaky": bool(flaky),
                      "latency": {}}
        by_id[sid]["results"].append(races[rid])
    for rid, name, value in store.rows(
            "SELECT f.race_id, f.name, f.value_us FROM figures f JOIN races r ON r.id = f.race_id JOIN scenarios s "
            "ON s.id = r.scenario_id WHERE s.run_id = ?", (run_id,)):
        races[rid]["latency"][name] = value
    return {"tool": "unohil", "command": command, "started_unix": started, "duration_s": duration,
            "results_path": path, "devices": devices, "scenarios": scenarios, "run_id": run_id}
