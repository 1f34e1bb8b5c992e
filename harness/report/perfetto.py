"""Whole runs in the Chrome trace event format (JSON), which Perfetto (ui.perfetto.dev) and chrome://tracing
open: one process per unit, its trace file read back (harness/session/trace.py); a run's record names
its units' trace files (run_perfetto).

The axis is the host's clock, so units and reboots share one time line; every event of the unit is
placed at its own device time plus that boot's offset (the smallest host-minus-device gap seen, the
fastest transit), so spacing between the unit's events is exact device time. Threads: the unit's
events (anchors and verdicts, by the catalogue), its inputs, its state and each light as slices,
the host's commands (a slice from sending to the reply) and the link's notes and frame errors."""
from __future__ import annotations

import json

from unohil.protocol import catalogue as cat

THREADS = ("events", "inputs", "state", "commands", "link")     # then one thread per light


class _Unit:
    """One trace file: its frames, what unit it is, each boot's host-minus-device offset."""

    def __init__(self, records: list[dict], name: str):
        self.name = name
        self.records = records
        ident = next((r for r in records if r.get("type") == "IDENTITY"), None)
        self.kind = ident.get("names", {}).get("kind") if ident else None
        self.unit = cat.UNITS.get(self.kind) if self.kind else None
        self.anchors = {event: name for name, event in self.unit.anchors.items()} if self.unit else {}
        # per record: the host-minus-device offset of the boot it belongs to (a BOOT after the first
        # device frame starts a new boot, whose device clock starts again)
        boot, seen, per, bests = 0, False, [], {}
        for r in records:
            if r.get("type") == "BOOT" and seen:
                boot += 1
            if r.get("dir") == "rx" and r.get("dev_us") is not None:
                seen = True
                gap = r["host_us"] - r["dev_us"]
                bests[boot] = min(bests.get(boot, gap), gap)
            per.append(boot)
        self.offsets = [bests.get(b, 0) for b in per]

    def field(self, r: dict, name: str):
        """A field by enum name where the catalogue names it for this kind, else its number."""
        value = r["fields"].get(name)
        if name in r.get("names", {}):
            return r["names"][name]
        en = self.unit.enum_for(r["type"], name) if self.unit else None
        return cat.enum_name(en, value) if en and isinstance(value, int) else value


def read_trace(path) -> list[dict]:
    from unohil.harness.errors import UsageError
    records = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{path}:{n}:{exc.colno}: not a trace record (JSON Lines of "
                                     f"unohil run --trace): {exc.msg}") from None
                if not isinstance(rec, dict) or "host_us" not in rec or "dir" not in rec:
                    raise UsageError(f"{path}:{n}:1: not a trace record (no host_us and dir)")
                records.append(rec)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the trace: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not a trace (not UTF-8 text at byte {exc.start})") from None
    return records


def run_perfetto(run) -> dict:
    """The trace files of the units a run (report/run_record.py RunRecord) names, as one Chrome trace."""
    from pathlib import Path
    from unohil.harness.errors import UsageError
    paths = [d["trace"] for d in run.devices if d.get("trace")]
    if not paths:
        raise UsageError("the run names no trace file of its units: run it with --trace DIR")
    return perfetto_trace([(Path(p).stem, read_trace(p)) for p in paths])


def perfetto_trace(traces: list[tuple[str, list[dict]]]) -> dict:
    """traces: (name, records) of each unit's trace file."""
    out: list[dict] = []
    for pid, (name, records) in enumerate(traces, 1):
        u = _Unit(records, name)
        threads = {t: i for i, t in enumerate(THREADS, 1)}
        out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"{name} ({u.kind or '?'})"}})
        open_slices: dict[str, tuple[int, str, dict]] = {}      # thread -> (start, name, args) of the current
        pending: dict[int, tuple[int, str, dict]] = {}          # cmd seq -> (ts, command, fields)
        last_ts = 0

        def tid(thread: str) -> int:
            if thread not in threads:
                threads[thread] = len(threads) + 1
            return threads[thread]

        def close(thread: str, ts: int) -> None:
            if thread in open_slices:
                start, label, args = open_slices.pop(thread)
                out.append({"ph": "X", "name": label, "ts": start, "dur": max(ts - start, 0), "pid": pid,
                            "tid": tid(thread), "args": args})
        for r, offset in zip(records, u.offsets):
            if r["dir"] == "rx" and r.get("dev_us") is not None:
                ts = r["dev_us"] + offset
            else:
                ts = r["host_us"]
            last_ts = max(last_ts, ts)
            if r["dir"] == "console":
                at = r["dev_us"] + offset if r.get("dev_us") is not None else r["host_us"]
                out.append({"ph": "i", "s": "t", "name": r["text"], "ts": at, "pid": pid, "tid": tid("console"),
                            "args": {"host_us": r["host_us"]}})
                continue
            if r["dir"] == "note" or "error" in r:
                out.append({"ph": "i", "s": "t", "name": r.get("text") or f"frame error {r.get('error')}",
                            "ts": ts, "pid": pid, "tid": tid("link"), "args": r})
                continue
            mtype, fields = r.get("type"), r.get("fields", {})
            mdef = cat.BY_NAME.get(mtype)
            if mdef is None:
                continue
            if r["dir"] == "tx":
                pending[r["seq"]] = (ts, mtype, fields)
                continue
            if mdef.kind == "reply" and fields.get("cmd_seq") in pending:
                start, command, args = pending.pop(fields["cmd_seq"])
                out.append({"ph": "X", "name": command, "ts": start, "dur": max(r["host_us"] - start, 0),
                            "pid": pid, "tid": tid("commands"), "args": {"command": args, mtype: fields}})
                continue
            if mdef.kind != "event":
                continue
            named = {k: u.field(r, k) for k in fields}
            if mtype == "STATE":
                close("state", ts)
                open_slices["state"] = (ts, str(named["state"]), named)
            elif mtype == "LIGHT":
                light = f"light {named.get('light')}" + (f" {named['target']}" if named.get("target") not in
                                                         (None, "none") else "")
                close(light, ts)
                if named.get("mode") != "off":
                    open_slices[light] = (ts, str(named.get("mode")), named)
            elif mtype == "INPUT_SEEN":
                out.append({"ph": "i", "s": "t", "name": f"{named.get('action')} {named.get('input')}", "ts": ts,
                            "pid": pid, "tid": tid("inputs"), "args": named})
            else:
                anchor = u.anchors.get(mtype)
                verdict = u.unit is not None and mtype == u.unit.verdict
                out.append({"ph": "i", "s": "p" if verdict else "t", "name": anchor or mtype, "ts": ts, "pid": pid,
                            "tid": tid("events"), "cat": "verdict" if verdict else "anchor" if anchor else "event",
                            "args": named})
        for thread in list(open_slices):
            close(thread, last_ts)
        out += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": i, "args": {"name": t}}
                for t, i in threads.items()]
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"tool": "unohil", "axis": "host clock, us; the unit's events at device time plus "
                                                   "the boot's smallest host-minus-device offset"}}
