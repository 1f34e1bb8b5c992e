"""A race in rig mode, seen twice: as the unit reported it and as its rig saw it (SPEC 13.5).

The runner judges a race on the unit's events as always; this module adds the rig's view of the same
race, from the rig's RIG_CAPTUREs mapped into unit time through both time syncs (exact on the virtual
clock; within both estimates' uncertainty on a bench):

  presses    each driven edge against the unit's INPUT_SEEN of it: timestamp_error_us = the unit's
             stamp - the driven edge
  reactions  each reaction time a verdict carries against the rig's: the driven press minus the watched
             output (the green lamp) or driven input (BUZZER) the reaction counts from;
             reaction_error_us = the unit's - the rig's
  outputs    the verdict's physical appearance: every output the unit switched from its decisive press to
             just after its verdict (the launch solenoid, the green lamp going off, the red lamp swinging, a
             Flash button's light, the first card out) against the watched line's edge it caused;
             decision_to_OUTPUT_us = the watched edge - the decision (the unit's event switching the output,
             or the verdict if that event came with it or later)

A figure's worst in a race is the value farthest from zero. An expectation `expect: {rig: {FIGURE:
MATCHER}}` holds every value of FIGURE in the race to the matcher (harness/scenarios/validation/expectations.py: the figures
a unit kind has, from its reference wiring).
"""
from __future__ import annotations

from dataclasses import dataclass

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.rig.races import _unwrap_near
from unohil.harness.rig.session import RigSession
from unohil.harness.run.results import worst_figure as worst
from unohil.harness.scenarios.model import Expectation
from unohil.harness.scenarios import expr

ORIGIN = cat.ENUM_VALUES["rig_origin"]
ACTION_NAMES = cat.ENUM_NAMES["action"]
#: the unit's events that switch an output: event -> (rig_signal of the line watching it, the field naming it)
OUTPUT_EVENTS = {b.event: (signal, b.field) for signal, b in cat.RIG.switched_by.items()}
#: what a verdict's reaction times count from: its time field -> what the rig sees of it (signal, name).
#: The SPEC's reaction fields: SD_VERDICT reaction_X_us = press_X_us - green_us (the green lamp's onset);
#: FL_BUZZER_VERDICT reaction_us[i] = player i's press - buzzer_us (the BUZZER press).
REACTION_FROM = {"green_us": ("light", "green"), "buzzer_us": ("input", "buzzer")}
#: how long after a race's end the rig is still heard: an output this late after its event is measured
OUTPUT_LAG_US = 100_000


@dataclass(frozen=True)
class Driven:
    """A stimulus the runner gave through the rig: its stimulus id, input, edge and the unit time asked for."""
    sid: int
    input: str
    action: str
    at_us: int


def race_view(s: RigSession, driven: list[Driven], events: list[Frame], rig_frames: list[Frame], start: int,
              verdict: str) -> dict:
    """The rig's view of one race: its presses, reactions and outputs (times in unit us from the race start)
    and the worst of each figure."""
    slack = s.placement_us()        # how far the two clocks' mapping may be off (0 on the virtual clock)
    to_unit = {id(f): round(s.rig_to_unit(f.dev_us)) for f in rig_frames}
    caps = [f for f in rig_frames if f.msg.NAME == "RIG_CAPTURE"]
    by_sid = {f.msg.stimulus: to_unit[id(f)] for f in caps if f.msg.origin == ORIGIN["driven"]}
    watched: dict[int, list[tuple[int, str]]] = {}
    for f in caps:
        if f.msg.origin == ORIGIN["watched"]:
            watched.setdefault(f.msg.line, []).append((to_unit[id(f)], ACTION_NAMES[f.msg.action]))
    presses = _presses(s, driven, by_sid, events)
    verdicts = [f for f in events if f.msg.NAME == verdict]
    reactions, outputs = [], []
    for i, v in enumerate(verdicts):
        reactions += _reactions(i, v, presses, watched, s, slack)
        outputs += _outputs(i, v, events, watched, s, slack)
    for x in presses + outputs:         # times from the race start, as the race's events are shown
        for key in ("rig_us", "unit_us", "decision_us"):
            if x.get(key) is not None:
                x[key] -= start
    view = {"presses": presses, "reactions": reactions, "outputs": outputs}
    view["worst"] = {k: worst(v) for k, v in sorted(figure_values(view).items())}
    return view


def figure_values(view: dict) -> dict[str, list[int]]:
    """Every value of each figure in a race's view, by figure name."""
    out: dict[str, list[int]] = {}
    for p in view["presses"]:
        if p["timestamp_error_us"] is not None:
            out.setdefault("timestamp_error_us", []).append(p["timestamp_error_us"])
    for r in view["reactions"]:
        out.setdefault("reaction_error_us", []).append(r["reaction_error_us"])
    for o in view["outputs"]:
        out.setdefault(f"decision_to_{o['output']}_us", []).append(o["decision_to_output_us"])
    return out


def _presses(s: RigSession, driven: list[Driven], by_sid: dict[int, int], events: list[Frame]) -> list:
    """Each driven edge (in the order driven) with the unit's INPUT_SEEN of it: the first report of that input and
    edge after the driven edge of them before it and before the one after it, early or late (a unit stamping
    early is as wrong as one stamping late); none when no report came (the edge never reached the unit: a pulse
    the debounce swallowed, a press the firmware missed)."""
    inputs = cat.UNITS[s.kind].inputs
    got = sorted(((by_sid[d.sid], d) for d in driven if d.sid in by_sid), key=lambda x: x[0])
    seen = [f for f in events if f.msg.NAME == "INPUT_SEEN"]
    used: set[int] = set()
    out = []
    for k, (t, d) in enumerate(got):
        same = [t2 for t2, d2 in got if (d2.input, d2.action) == (d.input, d.action)]
        before = max((t2 for t2 in same if t2 < t), default=None)
        after = min((t2 for t2 in same if t2 > t), default=None)
        f = next((f for f in seen if id(f) not in used and f.msg.input == inputs[d.input]
                  and ACTION_NAMES[f.msg.action] == d.action and (before is None or f.dev_us > before)
                  and (after is None or f.dev_us < after)), None)
        if f is not None:
            used.add(id(f))
        out.append({"input": d.input, "action": d.action, "rig_us": t, "unit_us": None if f is None else f.dev_us,
                    "timestamp_error_us": None if f is None else f.dev_us - t})
    return out


def _reactions(i: int, v: Frame, presses: list[dict], watched: dict, s: RigSession, slack: int) -> list:
    """The verdict's reaction times against the rig's: its press as driven minus what it counts from as the rig
    saw it."""
    m = v.msg
    ref_field = next((f for f in REACTION_FROM if hasattr(m, f)), None)
    if ref_field is None:
        return []
    unit_ref = _unwrap_near(getattr(m, ref_field), v.dev_us)
    signal, name = REACTION_FROM[ref_field]
    if signal == "input":
        rig_ref = _nearest(presses, name, unit_ref)
    else:
        line = s.line(signal, name)
        rig_ref = next((t for t, action in watched.get(line, ()) if action == "press" and t >= unit_ref - slack),
                       None)
    if rig_ref is None:
        return []
    out = []
    for who, reaction in _reaction_times(m, s.kind):
        # the press of who nearest to where the unit says it was: a unit that counts its reaction wrong
        # shows as a reaction error, never as a reaction left out
        press = _nearest(presses, who, unit_ref + reaction)
        if press is None:
            continue
        rig = press - rig_ref
        out.append({"verdict": i, "who": who, "unit_reaction_us": reaction, "rig_reaction_us": rig,
                    "reaction_error_us": reaction - rig})
    return out


def _nearest(presses: list, who: str, unit_us: int) -> int | None:
    """The rig time of the driven press of input who (or paddle_who) nearest unit time unit_us, by the driven
    time (a press the unit never reported counts where the rig drove it)."""
    mine = [p for p in presses if p["action"] == "press" and (p["input"] == who or p["input"].endswith("_" + who))]
    return min((p["rig_us"] for p in mine), key=lambda t: abs(t - unit_us), default=None)


def _reaction_times(m, kind: str) -> list[tuple[str, int]]:
    """(who, reaction) of every reaction time a verdict carries (none left out); an array's element i is button
    i's (the catalogue's roles.buttons)."""
    out = []
    for fd in m.DEF.fields:
        if fd.name == "reaction_us":
            buttons = cat.UNITS[kind].roles.buttons
            out += [(buttons[k], x) for k, x in enumerate(m.reaction_us) if x != cat.NONE_I32]
        elif fd.name.startswith("reaction_") and fd.name.endswith("_us") and getattr(m, fd.name) != cat.NONE_I32:
            out.append((fd.name[len("reaction_"):-len("_us")], getattr(m, fd.name)))
    return out


def _outputs(i: int, v: Frame, events: list[Frame], watched: dict, s: RigSession, slack: int) -> list:
    """The verdict's outputs: those the unit switched from its decisive press until OUTPUT_LAG_US after the
    verdict (no later than the next input it took or its next verdict), each against the first edge of its
    watched line after it (before the unit switched that output again); a line that did not move (a lamp already
    on) gives nothing. Decided at the output's own event (a launch at the first press, before the tie window
    closes) or, when that came with or after the verdict, at the verdict: a lamp the firmware switches late
    counts from the decision."""
    from unohil.harness.run.judge import latency
    decided = v.dev_us - latency(v, None).get("device_us", 0)
    wires = [w for w in cat.RIG.wiring[s.kind] if not w.drives]
    out, done = [], set()
    after = False
    for k in range(_decision_start(events, v, decided), len(events)):
        e = events[k]
        if after and (e.msg.NAME in ("INPUT_SEEN", v.msg.NAME) or e.dev_us > v.dev_us + OUTPUT_LAG_US):
            break
        after = after or e is v
        if e.msg.NAME not in OUTPUT_EVENTS:
            continue
        for w in _lines_of(e, wires):
            if w.line in done:
                continue
            again = next((f.dev_us for f in events[k + 1:] if f.dev_us > e.dev_us and w in _lines_of(f, wires)), None)
            edge = next(((t, a) for t, a in watched.get(w.line, ()) if t >= e.dev_us - slack
                         and (again is None or t < again)), None)
            if edge is None:
                continue
            done.add(w.line)
            decision = min(e.dev_us, v.dev_us)
            out.append({"verdict": i, "output": w.name, "line": w.line, "edge": edge[1], "unit_us": e.dev_us,
                        "decision_us": decision, "rig_us": edge[0], "decision_to_output_us": edge[0] - decision})
    return out


def _decision_start(events: list[Frame], v: Frame, decided: int) -> int:
    """Where the verdict's decision begins in the event stream: at the decisive press's INPUT_SEEN (what the
    unit did at that instant before taking it, a green lamp lit at the same microsecond, is not the verdict's),
    else at the first event of the decisive instant after the previous verdict."""
    end = next(k for k, f in enumerate(events) if f is v)
    prior = next((k + 1 for k in range(end - 1, -1, -1) if events[k].msg.NAME == v.msg.NAME), 0)
    first = next((k for k in range(prior, end) if events[k].dev_us >= decided), end)
    return next((k for k in range(first, end) if events[k].msg.NAME == "INPUT_SEEN" and events[k].dev_us == decided
                 and ACTION_NAMES[events[k].msg.action] == "press"), first)


def _lines_of(e: Frame, wires) -> list:
    """The watched lines an output event concerns (every line of that lamp or sound: which one moves, the rig says)."""
    spec = OUTPUT_EVENTS.get(e.msg.NAME)
    if spec is None:
        return []
    signal, field = spec
    return [w for w in wires if w.signal == signal and (field is None or w.id == getattr(e.msg, field))]


def check(expectations: list[Expectation], view: dict, env: dict) -> list[str]:
    """An expectation's rig figures against the race's: every value of each figure must match."""
    out = []
    for exp in expectations:
        if not exp.rig or (exp.when is not None and not expr.evaluate(exp.when, env)):
            continue
        prefix = f"[when {exp.when_text}] " if exp.when is not None else ""
        for name, m in exp.rig.items():
            if name == "timestamp_error_us":
                lost = [p for p in view["presses"] if p["timestamp_error_us"] is None]
                if lost:
                    out.append(f"{prefix}rig.timestamp_error_us: the unit reported no {lost[0]['input']} "
                               f"{lost[0]['action']} driven at {lost[0]['rig_us']} us"
                               + (f" (nor {len(lost) - 1} more driven edge(s))" if len(lost) > 1 else ""))
            values = figure_values(view).get(name, [])
            if not values:
                out.append(f"{prefix}rig.{name}: not measured in this race ({_unmeasured(name)})")
                continue
            bad = [x for x in values if not m.check(x, env=env)]
            if bad:
                out.append(f"{prefix}rig.{name}: expected {m.describe(env)} us, got {worst(bad)} us"
                           + (f" ({len(bad)} of {len(values)} values)" if len(values) > 1 else ""))
    return out


def _unmeasured(name: str) -> str:
    if name == "timestamp_error_us":
        return "no driven edge the unit reported"
    if name == "reaction_error_us":
        return "no verdict with a reaction time the rig saw the press and its start of"
    return f"no {name[len('decision_to_'):-len('_us')]} output switched between a decisive press and its verdict"

