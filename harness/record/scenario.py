"""A recorded piece as a scenario file: the configuration, the inputs as steps anchored on the events
they followed, and what was seen as expectations; what the format cannot say, as comments. Pure.

Each input edge is timed from the step before it, or, when an event whose time a draw decides (the
catalogue's drawn_times: SD_GREEN, LA_RESULT) came between them, from that event (`next green +
183000`): exact on the virtual clock, faithful on a unit whose draws differ (the press still comes
183 ms after that unit's green), and blind to nothing a changed timing rule would do. A Flash
player is named by role once a game has started (`current`, `opponent_2`), so the replay presses
whoever that unit selected. Expectations: every verdict, its categorical fields and reaction times
(absolute device times never: they differ on every run), and the anchor events (and the Showdown's tray
count) that came once between two inputs, in order; so a replay's diff says where it went another way.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter

import yaml

from unohil.protocol import catalogue as cat

from unohil.harness.record.segments import Segment
from unohil.harness.run.judge import named_fields
from unohil.harness.scenarios import roles as rl
from unohil.harness.scenarios.units import UNITS


def scenario_of(seg: Segment, name: str) -> tuple[dict, list[str]]:
    """(the scenario as YAML data, the comments that go above it)."""
    unit = UNITS[seg.kind]
    doc: dict = {"name": name, "unit": seg.kind}
    comments = [f"recorded from {seg.name!r} race {seg.race} ({seg.source})" if seg.name else
                f"recorded on a {unit.title}, {len(seg.edges)} input edge(s)"]
    if seg.seed is None:
        comments.append("no seed was set: what the unit drew (who plays next, a burst's size, where cards land) "
                        "may differ on a replay")
    else:
        doc["seed"] = seg.seed
        if not seg.reference_rng:
            comments.append(f"seed {seg.seed} on a unit with a generator of its own: another unit draws otherwise")
    config = {k: v for k, v in seg.config.items() if k in {p.name for p in unit.params}
              and v != cat.PARAMS_BY_NAME[k].default}
    if config:
        doc["config"] = config
    physical = {k: v for k, v in seg.physical.items() if unit.boot_positions.get(k) != v}
    if physical:
        doc["physical"] = physical
    doc["steps"] = _steps(seg, unit)
    last_step = max([seg.edges[-1].t] + [t for t, _ in seg.config_steps])
    last = max((f.dev_us for f in seg.events), default=last_step)
    if last > last_step:        # what came after the last step is part of what was seen: wait for it
        doc["end"] = f"previous + {last - last_step}"
    expect = _expect(seg, unit)
    if expect:
        doc["expect"] = expect
    else:
        comments.append("nothing was seen to expect: the scenario only replays the inputs")
        doc["expect"] = {"count": {unit.verdict: 0}}
    comments += seg.notes
    return doc, comments


def _steps(seg: Segment, unit) -> list[dict]:
    # Only an event whose time a draw decides is an anchor (SD_GREEN: the countdown): a replay on a unit that
    # draws otherwise presses as long after it as the person did. Everything else is timed from the step
    # before, so a unit whose timing rules changed is met with the same presses, and the diff shows it.
    anchor_of = {event: name for name, event in unit.anchors.items() if event in unit.drawn_times}
    steps, prev = [], seg.start_us
    started = False
    # the configuration set mid-piece, each change a config step at its time (before an edge at the same time)
    changes = sorted(seg.config_steps, key=lambda c: c[0])
    for i, edge in enumerate(seg.edges):
        while changes and changes[0][0] <= edge.t:
            t, values = changes.pop(0)
            steps.append({"config": dict(values), "at": f"{'start' if not steps else 'previous'} + {t - prev}"})
            prev = t
        seen = [f for f in seg.events if prev <= f.dev_us < edge.t and f.msg.NAME in anchor_of]
        if seen:
            event = seen[-1].msg.NAME
            base = next(f.dev_us for f in seen if f.msg.NAME == event)
            at, anchor = f"next {anchor_of[event]} + {edge.t - base}", base
        else:
            at, anchor = f"{'start' if not steps else 'previous'} + {edge.t - prev}", prev
        target = edge.input
        if unit.roles is not None and started and i > 0 and edge.input in unit.roles.buttons:
            if edge.t == anchor and (earlier := _earlier_anchor(unit, seg.events, edge)) is not None:
                at, anchor = earlier
            if edge.t > anchor:
                roles = rl.at_time(unit.roles, seg.events, anchor)
                role = roles.role_of(unit.roles.buttons.index(edge.input)) if roles is not None else None
                target = role or target
        position = _switch_position(seg.kind, edge) if edge.error is None else None
        step: dict = {"physical": {edge.input: position}, "at": at} if position else {edge.action: target, "at": at}
        if edge.value and not position:
            step["value"] = edge.value
        if edge.error is not None:
            step["error"] = edge.error
        else:
            step["expect"] = edge.disposition
        steps.append(step)
        started = started or (unit.roles is not None and edge.input == unit.roles.started_by
                              and edge.action == "press" and edge.disposition == "acted")
        prev = edge.t
    for t, values in changes:           # after the last edge
        steps.append({"config": dict(values), "at": f"previous + {t - prev}"})
        prev = t
    return steps


def _earlier_anchor(unit, events, edge) -> tuple[str, int] | None:
    """For a player's press at the instant of the step before it (a role cannot be named at its anchor's own
    time): the latest event anchor before that instant whose roles still hold at it, as (`at`, its time), so the
    press is named by role as the person's role was; None when there is none."""
    name_of = {event: name for name, event in unit.anchors.items()}
    button = unit.roles.buttons.index(edge.input)
    now = rl.at_time(unit.roles, events, edge.t)
    for f in reversed([f for f in events if f.dev_us < edge.t and f.msg.NAME in name_of]):
        if any(g.msg.NAME == f.msg.NAME and f.dev_us < g.dev_us <= edge.t for g in events):
            continue        # "buzzer" names the latest buzzer at the previous step's time: not this one
        then = rl.at_time(unit.roles, events, f.dev_us)
        if then is None or now is None or then.role_of(button) is None or then.role_of(button) != now.role_of(button):
            return None
        return f"{name_of[f.msg.NAME]} + {edge.t - f.dev_us}", f.dev_us
    return None


def _switch_position(kind: str, edge) -> str | None:
    """The position a switch edge put its switch in (a `physical:` step says it so), None if not a switch's."""
    for position, (action, value) in cat.UNITS[kind].switches.get(edge.input, {}).items():
        if action == edge.action and value == edge.value:
            return position
    return None


def _expect(seg: Segment, unit) -> dict:
    out: dict = {}
    pinned = seg.seed is not None
    roles = rl.before_each(unit.roles, seg.events) if unit.roles is not None else [None] * len(seg.events)
    verdicts = [(f, r) for f, r in zip(seg.events, roles) if f.msg.NAME == unit.verdict]
    if verdicts:
        out["verdicts"] = [_fields(f, unit, r, pinned) for f, r in verdicts]
        reactions = [_reactions(f, unit, r) for f, r in verdicts]
        if len(verdicts) == 1 and reactions[0]:
            out["reaction"] = reactions[0]
    out_events = []
    edge_times = sorted(e.t for e in seg.edges)
    # how many of each event came between two inputs (the interval is the number of edges at or before it)
    between = Counter((bisect_right(edge_times, f.dev_us), f.msg.NAME) for f in seg.events)
    for f, r in zip(seg.events, roles):
        name = f.msg.NAME
        if name == unit.verdict or (name not in unit.anchors.values() and name not in HELD_COUNT_EVENTS):
            continue
        if not pinned and (name in DRAWN_EVENTS or name in cat.UNITS[seg.kind].drawn_times):
            continue        # whether it comes at all is the generator's (a magazine emptied by a burst)
        if between[bisect_right(edge_times, f.dev_us), name] > 1:
            continue        # several between two inputs (countdown beeps, cards): their number is the draw's
        fields = _fields(f, unit, r, pinned)
        out_events.append({name: fields} if fields else name)
    if out_events:
        out["events"] = out_events
    out["count"] = {unit.verdict: len(verdicts)}
    return out


# Fields whose value follows from the unit's draws (SPEC 6.4, 6.5: whether a press fires, a burst's size, and
# so the magazine's counts and the empty streak after it): a recording with no seed leaves them out, since a
# replay's draws need not be the trace's (a race the runner ran again drew once more on the line it came from)
DRAWN_FIELDS = {"LA_RESULT": {"planned", "fired", "inside", "fired_total"}, "LA_DING": {"empty_streak", "chance_permille"}}
# Events beside the anchors that a scenario expects: the unit's word on what it holds after an input (the
# Showdown's tray count; the launcher's LA_LOADED is an anchor). A count a unit carries wrongly from one
# showdown to the next (an even split that leaves a card on the tray) shows there first, and nowhere else
# when the recording ends at it
HELD_COUNT_EVENTS = {"SD_CARDS"}
# events that come or not as the draws go (a card flies, the magazine empties), beside those whose time is drawn
DRAWN_EVENTS = {"LA_CARD"}


def _fields(f, unit, roles, pinned: bool = True) -> dict:
    """A frame's fields as an expectation says them: names for enums, roles for players, no device times."""
    named = named_fields(f, unit)
    out = {}
    drawn = () if pinned else DRAWN_FIELDS.get(f.msg.NAME, ())
    for k, v in named.items():
        if k in unit.time_fields or isinstance(v, list) or k in drawn:
            continue
        ref = (f.msg.NAME, k)
        if unit.roles is not None and ref == unit.roles.current and not pinned:
            continue            # who plays next is the generator's draw, and nothing pinned the generator
        if unit.roles is not None and roles is not None and ref in unit.roles.player_fields and isinstance(v, int):
            v = roles.role_of(v) or v
        elif unit.roles is not None and roles is not None and ref in unit.roles.mask_fields and isinstance(v, int):
            v = _mask_roles(v, roles)
        out[k] = "none" if v is None else v
    return out


def _mask_roles(mask: int, roles: rl.RoleMap) -> int | str:
    if roles.current is not None and mask and mask == sum(1 << p for p in roles.opponents):
        return rl.OPPONENTS
    names = [roles.role_of(b) for b in range(8) if mask >> b & 1]
    return " | ".join(names) if names and None not in names else mask


def _reactions(f, unit, roles) -> dict:
    named = named_fields(f, unit)
    out = {}
    for k, v in named.items():
        if k == "reaction_us" and isinstance(v, list):
            for button, x in enumerate(v):
                if x is not None:
                    role = roles.role_of(button) if roles is not None else None
                    out[role or f"player_{button}"] = x
    return out


def dump(scenarios: list[tuple[dict, list[str]]], header: list[str] = ()) -> str:
    """The scenarios as one YAML file that `unohil validate` accepts, comments above each."""
    parts = [f"# {line}\n" for line in header]
    for doc, comments in scenarios:
        parts.append("".join(f"# {c}\n" for c in comments))
        body = yaml.safe_dump([doc], sort_keys=False, default_flow_style=None, width=110, allow_unicode=True)
        parts.append(body + "\n")
    return "".join(parts)


def events_of(frames, unit, start_us: int) -> list[tuple[int, str, dict]]:
    """Events as a replay diff compares them: (us from the start, name, fields by name without device times)."""
    out = []
    for f in frames:
        named = {k: v for k, v in named_fields(f, unit).items() if k not in unit.time_fields}
        out.append((f.dev_us - start_us, f.msg.NAME, named))
    return out

