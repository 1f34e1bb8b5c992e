"""A race as a Value Change Dump, for GTKWave and PulseView: one-bit wires for the unit's inputs (1 while
pressed), its lights (1 while on or flashing) and its anchor events (a 1 us pulse), and a vector for its
state (the catalogue's number of the state). Time is device time from the race start, in microseconds."""
from __future__ import annotations

import re
from datetime import datetime, timezone

from unohil.protocol import catalogue as cat

_FIRST_ID, _LAST_ID = 33, 126       # identifiers are printable ASCII


def _ident(n: int) -> str:
    span = _LAST_ID - _FIRST_ID + 1
    out = ""
    while True:
        out += chr(_FIRST_ID + n % span)
        n //= span
        if not n:
            return out


def _name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "_.[]" else "_" for c in str(text)) or "_"


def _light(fields: dict) -> str:
    target = fields.get("target")
    return _name(f"{fields.get('light')}" + (f"_{target}" if target not in (None, "none") else ""))


def run_vcds(run, date: datetime | None = None):
    """(file name, VCD text) for every race of a run (report/run_record.py RunRecord) that has its events;
    date: when the files say they were written (default: now)."""
    for i, res in enumerate(map(run.whole, run.scenarios)):
        name = res.scenario.name
        for race in res.races:
            events = race.events
            if not events:
                continue        # a results file before schema 4 keeps the events of failed races only
            yield (f"{i:03d}-{_slug(name)}-race{race.index}.vcd",
                   race_vcd({"events": events}, res.scenario.unit, f"{name} race {race.index}", date))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60] or "scenario"


def race_vcd(race: dict, kind: str, title: str = "race", date: datetime | None = None) -> str:
    """race: a race of the results file (its `events`, device us from the race start)."""
    unit = cat.UNITS[kind]
    states = cat.ENUM_VALUES[f"{kind}_state"]
    width = max(1, max(states.values()).bit_length())
    anchor_of = {event: name for name, event in unit.anchors.items()}
    events = race.get("events") or []
    # the variables: (scope, name) -> (id, width); inputs of the kind and the lights and anchors seen
    variables: dict[tuple[str, str], tuple[str, int]] = {}

    def var(scope: str, name: str, bits: int = 1) -> str:
        key = (scope, name)
        if key not in variables:
            variables[key] = (_ident(len(variables)), bits)
        return variables[key][0]

    state_id = var("unit", "state", width)
    for name in unit.inputs:
        var("inputs", _name(name))
    for event in unit.anchors.values():
        var("events", _name(anchor_of[event]))
    initial = {v[0]: 0 for v in variables.values()}
    changes: list[tuple[int, int, str, int]] = []        # (t, order, id, value): a pulse's end sorts first
    for e in events:
        t, f = e["t_us"], e["fields"]
        if e["event"] == "STATE":
            if not changes or all(c[2] != state_id for c in changes):
                initial[state_id] = states.get(f.get("previous"), 0)
            changes.append((t, 1, state_id, states.get(f["state"], 0)))
        elif e["event"] == "INPUT_SEEN" and f.get("input") in unit.inputs:
            changes.append((t, 1, var("inputs", _name(f["input"])), int(f.get("action") == "press")))
        elif e["event"] == "LIGHT":
            vid = var("lights", _light(f))
            initial.setdefault(vid, 0)
            changes.append((t, 1, vid, int(f.get("mode") != "off")))
        elif e["event"] in anchor_of:
            vid = var("events", _name(anchor_of[e["event"]]))
            changes += [(t, 1, vid, 1), (t + 1, 0, vid, 0)]
    widths = {vid: bits for vid, bits in variables.values()}

    def value(vid: str, v: int) -> str:
        return f"{v}{vid}" if widths[vid] == 1 else f"b{v:0{widths[vid]}b} {vid}"
    out = [f"$date {date or datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC $end",
           f"$version unohil: {_name(title)}, a {kind} unit $end", "$timescale 1us $end",
           f"$comment state values: {', '.join(f'{v}={k}' for k, v in states.items())} $end",
           f"$scope module {_name(title)} $end"]
    for scope in dict.fromkeys(s for s, _ in variables):
        out.append(f"$scope module {scope} $end")
        for (s, name), (vid, bits) in variables.items():
            if s == scope:
                out.append(f"$var wire {bits} {vid} {name} $end")
        out.append("$upscope $end")
    out += ["$upscope $end", "$enddefinitions $end", "#0", "$dumpvars"]
    out += [value(vid, v) for vid, v in initial.items()] + ["$end"]
    now, current = 0, dict(initial)
    for t, _order, vid, v in sorted(changes, key=lambda c: (c[0], c[1])):
        if current.get(vid) == v:
            continue
        if t != now:
            out.append(f"#{t}")
            now = t
        out.append(value(vid, v))
        current[vid] = v
    end = max([c[0] for c in changes] + [0]) + 1
    if end != now:
        out.append(f"#{end}")
    return "\n".join(out) + "\n"
