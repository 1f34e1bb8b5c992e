"""A replay beside its recording: which events match, which differ in a field or in time beyond a
tolerance, which are missing or new. Pure: two event lists in, rows out.

An event is (t_us from the race's start, name, fields by name as a scenario writes them). The two
lists are aligned on the order of event names (difflib: the longest common subsequence), so one
event more or less in the middle does not shift every later row; then each aligned pair is compared
field by field and in time.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

Event = tuple[int, str, dict]


@dataclass(frozen=True)
class Row:
    kind: str                       # same | differs | missing (recorded only) | new (replay only)
    recorded: Event | None
    replayed: Event | None
    fields: tuple[str, ...] = ()    # the fields that differ
    late_us: int | None = None      # replayed time - recorded time, when beyond the tolerance

    def describe(self) -> str:
        r, p = self.recorded, self.replayed
        if self.kind == "missing":
            return f"{_show(r)}  -> not in the replay"
        if self.kind == "new":
            return f"not recorded  <- {_show(p)}"
        what = []
        if self.fields:
            what.append(", ".join(f"{k}: {r[2].get(k)} -> {p[2].get(k)}" for k in self.fields))
        if self.late_us is not None:
            what.append(f"{self.late_us:+d} us")
        return f"{_show(r)}  " + ("= " if self.kind == "same" else "!= ") + "; ".join(what)


def _show(e: Event) -> str:
    t, name, fields = e
    return f"{t:>11} us {name}" + (" " + " ".join(f"{k}={v}" for k, v in fields.items()) if fields else "")


def compare(recorded: list[Event], replayed: list[Event], tolerance_us: int = 0,
            ignore: frozenset[str] = frozenset()) -> list[Row]:
    """Rows for the two lists; fields named in ignore (device times, sequence numbers) are not compared."""
    sm = difflib.SequenceMatcher(a=[e[1] for e in recorded], b=[e[1] for e in replayed], autojunk=False)
    rows: list[Row] = []
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        if op == "equal":
            rows += [_pair(r, p, tolerance_us, ignore) for r, p in zip(recorded[a0:a1], replayed[b0:b1])]
            continue
        rows += [Row("missing", r, None) for r in recorded[a0:a1]]
        rows += [Row("new", None, p) for p in replayed[b0:b1]]
    return rows


def _pair(r: Event, p: Event, tolerance_us: int, ignore: frozenset[str]) -> Row:
    keys = [k for k in dict.fromkeys([*r[2], *p[2]]) if k not in ignore]
    differ = tuple(k for k in keys if r[2].get(k) != p[2].get(k))
    late = p[0] - r[0]
    late_us = late if abs(late) > tolerance_us else None
    return Row("differs" if differ or late_us is not None else "same", r, p, differ, late_us)


def summary(rows: list[Row]) -> str:
    counts = {k: sum(1 for r in rows if r.kind == k) for k in ("same", "differs", "missing", "new")}
    return (f"{counts['same']} event(s) as recorded, {counts['differs']} differ, {counts['missing']} missing, "
            f"{counts['new']} not recorded")
