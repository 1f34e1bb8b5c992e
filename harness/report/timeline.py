"""A race as a timeline on the device-time axis, from its events and the catalogue's facts of its unit
kind: what the HTML report draws and the VCD export writes.

Nothing here is written per kind. The catalogue says which events are anchors (named marks), which is
the verdict, which verdict fields hold device times (ticks), which timer events are armed by which
(spans: the countdown to green, the flight to the landing, a turn to its timeout, the ding to each
card); STATE events give the unit's state over time (a Flash turn and buzzer window, a launcher
burst), LIGHT events each light's mode, INPUT_SEEN events each input (a press, a release, refused)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from unohil.protocol import catalogue as cat

STATE, LIGHTS, INPUTS, EVENTS, TIMES, RIG = "state", "lights", "inputs", "events", "verdict times", "rig"
LANES = (STATE, INPUTS, LIGHTS, EVENTS, TIMES, RIG)     # rig: rig mode's races only
CONSOLE = "console"             # the unit's debug text, where it has any (drawn only then)


@dataclass(frozen=True)
class Mark:
    t_us: int
    lane: str
    label: str
    kind: str = "event"         # event, verdict, press, release, refused, time, expected, rig
    detail: str = ""


@dataclass(frozen=True)
class Span:
    lane: str
    row: str                    # a lane's row: the state lane has one, the lights lane one per light
    start_us: int
    end_us: int
    label: str
    value: str = ""             # the state or mode the span stands for


@dataclass
class Timeline:
    kind: str
    end_us: int
    marks: list[Mark] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)

    def rows(self, lane: str) -> list[str]:
        """The rows of a lane, in order of first appearance."""
        return list(dict.fromkeys(s.row for s in self.spans if s.lane == lane))


def _fields_text(fields: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in fields.items())


def _light_row(fields: dict) -> str:
    target = fields.get("target")
    return f"{fields.get('light')}" + (f" {target}" if target not in (None, "none") else "")


def _matches(flt, event: dict, unit: cat.UnitDef) -> bool:
    """A catalogue event filter (values as numbers) against an event record (values by enum name)."""
    if event["event"] != flt.event:
        return False
    for name, value in flt.fields:
        got = event["fields"].get(name)
        en = unit.enum_for(flt.event, name)
        if got != value and not (en and got == cat.enum_name(en, value)):
            return False
    return True


def _segments(lane: str, row: str, changes: list[tuple[int, str]], end_us: int, off: tuple[str, ...]) -> list[Span]:
    """Spans from value changes [(t, value)]: each value until the next change; `off` values draw nothing."""
    spans = []
    for (t, value), nxt in zip(changes, changes[1:] + [(end_us, None)]):
        if value not in off and nxt[0] >= t:
            spans.append(Span(lane, row, t, nxt[0], value, value))
    return spans


# a failed check of a verdict's device time: "verdict[0].press_a_us: expected green + 170000, got 2181000 us from
# the start (+10000 us)" (run/judge.py)
_TIME_FAILURE = re.compile(r"^verdict\[\d+\]\.(?P<field>\w+): expected (?P<want>.+), got (?P<got>-?\d+) us from the "
                           r"start \((?P<off>[+-]\d+) us\)$")


def expected_marks(race: dict, unit: cat.UnitDef) -> list[Mark]:
    """Where a failed check of a verdict's device time wanted it: beside the time the unit gave."""
    out = []
    for line in race.get("failures") or []:
        m = _TIME_FAILURE.match(line)
        if m and m["field"] in unit.time_fields:
            t = int(m["got"]) - int(m["off"])
            out.append(Mark(t, TIMES, f"expected {m['field']}", "expected",
                            f"{m['field']} expected {m['want']} = {t} us; the unit gave {m['got']} us ({m['off']} us)"))
    return out


def rig_marks(view: dict | None) -> list[Mark]:
    """Rig mode: the race as its rig saw it (harness/rig/views.py), in unit time from the race start: each
    edge it drove, and each output edge it watched, beside the unit's own stamps."""
    if not view:
        return []
    out = [Mark(p["rig_us"], RIG, f"{p['action']} {p['input']}", "rig",
                f"driven at {p['rig_us']} us; the unit stamped {p.get('unit_us')} us (error "
                f"{p.get('timestamp_error_us')} us)") for p in view.get("presses", []) if p.get("rig_us") is not None]
    out += [Mark(o["rig_us"], RIG, f"{o['output']} {o.get('edge', '')}".strip(), "rig",
                 f"{o['output']} seen at {o['rig_us']} us, {o.get('decision_to_output_us')} us after the decision")
            for o in view.get("outputs", []) if o.get("rig_us") is not None]
    return out


def race_timeline(race: dict, kind: str) -> Timeline:
    """race: a race of the results file (its `events`, device us from the race start, and `verdicts`)."""
    unit = cat.UNITS[kind]
    events = race.get("events") or []
    end = max([e["t_us"] for e in events] + [0])
    tl = Timeline(kind, end)
    anchor_of = {event: name for name, event in unit.anchors.items()}
    states: list[tuple[int, str]] = []
    lights: dict[str, list[tuple[int, str]]] = {}
    for i, e in enumerate(events):
        name, f, t = e["event"], e["fields"], e["t_us"]
        if name == "STATE":
            if not states:
                states.append((0, f.get("previous", "?")))
            states.append((t, f["state"]))
        elif name == "LIGHT":
            lights.setdefault(_light_row(f), [(0, "off")]).append((t, f["mode"]))
        elif name == "INPUT_SEEN":
            kind_ = "refused" if f.get("disposition") == "refused" else f.get("action", "press")
            tl.marks.append(Mark(t, INPUTS, f"{f.get('action')} {f.get('input')}", kind_, _fields_text(f)))
        elif name in anchor_of:
            verdict = name == unit.verdict
            tl.marks.append(Mark(t, EVENTS, anchor_of[name], "verdict" if verdict else "event",
                                 f"{name} {_fields_text(f)}"))
            if verdict:
                for fname in sorted(unit.time_fields):
                    if f.get(fname) is not None:
                        tl.marks.append(Mark(f[fname], TIMES, fname, "time", f"{fname} = {f[fname]} us"))
        for rule in unit.timers:
            if rule.event != name:
                continue
            starts = [p["t_us"] for p in events[:i] if any(_matches(a, p, unit) for a in rule.after)]
            if starts:
                tl.spans.append(Span(EVENTS, "timers", max(starts), t, f"{name}: {rule.delay.text}"))
    tl.marks += expected_marks(race, unit) + rig_marks(race.get("rig"))
    for line in race.get("console") or []:
        # device time through the clock sync, from the host's stamp of the read: after the race started only
        if line.get("dev_us") is not None and line["dev_us"] >= 0:
            tl.marks.append(Mark(line["dev_us"], CONSOLE, line["text"][:32], "console", line["text"]))
    tl.spans += _segments(STATE, "state", states, end, ())
    for row, changes in lights.items():
        tl.spans += _segments(LIGHTS, row, changes, end, ("off",))
    tl.end_us = max([end] + [m.t_us for m in tl.marks])
    return tl
