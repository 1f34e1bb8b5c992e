"""What a store remembers, asked back: runs by unit, firmware and date; a scenario's or a check's history;
a figure's trend by firmware version. Plain SQL both backends answer alike; quantiles are taken here, not
by the server, so SQLite and PostgreSQL give the same numbers."""
from __future__ import annotations

from dataclasses import dataclass

from unohil.harness.store.backend import Store


@dataclass
class Filter:
    kind: str | None = None
    firmware: str | None = None
    serial: int | None = None
    since: float | None = None      # unix time
    until: float | None = None

    def where(self, run: str = "r", unit: str = "u") -> tuple[str, tuple]:
        parts, args = [], []
        for column, value in ((f"{unit}.kind", self.kind), (f"{unit}.firmware", self.firmware),
                              (f"{unit}.serial", self.serial)):
            if value is not None:
                parts.append(f"{column} = ?")
                args.append(value)
        if self.since is not None:
            parts.append(f"{run}.started_unix >= ?")
            args.append(self.since)
        if self.until is not None:
            parts.append(f"{run}.started_unix < ?")
            args.append(self.until)
        return (" AND ".join(parts) or "1 = 1"), tuple(args)


def runs(store: Store, f: Filter, limit: int = 50) -> list[dict]:
    """The runs (newest first) with a unit that matches, each with its units."""
    where, args = f.where()
    ids = [r[0] for r in store.rows(
        f"SELECT DISTINCT r.id, r.started_unix FROM runs r JOIN units u ON u.run_id = r.id WHERE {where} "
        f"ORDER BY r.started_unix DESC, r.id DESC LIMIT {int(limit)}", args)]
    out = []
    for run_id in ids:
        (rid, command, started, status, scenarios, passed, failed, skipped, other, flaky, path), = store.rows(
            "SELECT id, command, started_unix, status, scenarios, passed, failed, skipped, other, flaky, results_path "
            "FROM runs WHERE id = ?", (run_id,))
        units = [{"kind": k, "serial": s, "firmware": fw} for k, s, fw in store.rows(
            "SELECT kind, serial, firmware FROM units WHERE run_id = ? ORDER BY id", (run_id,))]
        out.append({"run": rid, "command": command, "started_unix": started, "status": status,
                    "scenarios": scenarios, "passed": passed, "failed": failed, "skipped": skipped, "other": other,
                    "flaky": flaky, "results_path": path, "units": units})
    return out


def scenario_history(store: Store, name: str, f: Filter) -> list[dict]:
    """Every stored result of the scenarios named `name` (oldest first): run, date, unit, status, flaky."""
    where, args = f.where()
    rows = store.rows(
        "SELECT r.id, r.started_unix, s.kind, u.firmware, u.serial, s.status, s.flaky, s.races, s.failed_races "
        "FROM scenarios s JOIN runs r ON r.id = s.run_id LEFT JOIN units u ON u.id = s.unit_id "
        f"WHERE s.name = ? AND {where} ORDER BY r.started_unix, r.id", (name, *args))
    return [{"run": rid, "started_unix": t, "kind": kind, "firmware": fw, "serial": serial,
             "status": "flaky" if flaky else status, "races": races, "failed_races": failed}
            for rid, t, kind, fw, serial, status, flaky, races, failed in rows]


def check_history(store: Store, name: str, f: Filter) -> list[dict]:
    """Every stored result of conform's check `name` (oldest first)."""
    where, args = f.where()
    rows = store.rows(
        "SELECT r.id, r.started_unix, u.kind, u.firmware, u.serial, c.section, c.status FROM checks c "
        "JOIN runs r ON r.id = c.run_id JOIN units u ON u.run_id = r.id "
        f"WHERE c.name = ? AND {where} ORDER BY r.started_unix, r.id", (name, *args))
    return [{"run": rid, "started_unix": t, "kind": kind, "firmware": fw, "serial": serial, "section": section,
             "status": status} for rid, t, kind, fw, serial, section, status in rows]


def tally(history: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in history:
        out[h["status"]] = out.get(h["status"], 0) + 1
    return out


def trend(store: Store, figure: str, f: Filter, scenario: str | None = None) -> list[dict]:
    """A figure's distribution per firmware version (in the order each version was first run): n, p50, p99,
    max over every race of the units that match (of one scenario, if named)."""
    where, args = f.where()
    extra, more = ("AND s.name = ?", (scenario,)) if scenario else ("", ())
    rows = store.rows(
        "SELECT u.kind, u.firmware, fg.value_us, r.started_unix FROM figures fg JOIN races ra ON ra.id = fg.race_id "
        "JOIN scenarios s ON s.id = ra.scenario_id JOIN runs r ON r.id = s.run_id JOIN units u ON u.id = s.unit_id "
        f"WHERE fg.name = ? AND {where} {extra} ORDER BY r.started_unix, r.id, ra.id", (figure, *args, *more))
    groups: dict[tuple, list[int]] = {}
    for kind, fw, value, _ in rows:
        groups.setdefault((kind, fw), []).append(value)
    return [{"kind": kind, "firmware": fw, "n": len(vs), "p50": quantile(vs, 50), "p99": quantile(vs, 99),
             "max": max(vs)} for (kind, fw), vs in groups.items()]


def quantile(values: list[int], p: float) -> int:
    """The nearest-rank quantile, as the results file's p50 and p99 are taken (run/results.py)."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))]


def run_with_firmware(store: Store, firmware: str, kind: str | None = None) -> int | None:
    """The newest run with a unit of this firmware version (and kind)."""
    f = Filter(kind=kind, firmware=firmware)
    found = runs(store, f, limit=1)
    return found[0]["run"] if found else None


def latest_run(store: Store) -> int | None:
    found = store.rows("SELECT id FROM runs ORDER BY started_unix DESC, id DESC LIMIT 1")
    return found[0][0] if found else None


def release_before(store: Store, doc: dict) -> int | None:
    """The newest stored run, started before `doc`, of a unit of the same kind on another firmware version:
    "the last release" to compare a build with."""
    device = next((d for d in doc.get("devices", []) if d.get("firmware")), None)
    if device is None:
        return None
    found = store.rows(
        "SELECT r.id FROM runs r JOIN units u ON u.run_id = r.id WHERE u.kind = ? AND u.firmware <> ? "
        "AND r.started_unix < ? ORDER BY r.started_unix DESC, r.id DESC LIMIT 1",
        (device["kind"], device["firmware"], float(doc.get("started_unix") or 0)))
    return found[0][0] if found else None
