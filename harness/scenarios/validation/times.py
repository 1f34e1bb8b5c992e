"""Races and times: the sweep and repeat that make a scenario's races, the times and counts of its
steps (expressions of the sweep variables, worked out in every race) and how far ahead of what the
runner last heard each step lands."""
from __future__ import annotations

import ast
import itertools
import math

import yaml

from unohil.protocol import devtime

from unohil.harness.scenarios import expr
from unohil.harness.scenarios.lead import REAL_LEAD_US
from unohil.harness.scenarios.model import Step, TimeSpec
from unohil.harness.scenarios.units import RIG_ANCHORS, UnitVocab
from unohil.harness.scenarios.validation.reader import CONSTRUCTOR, Validator, describe_node, env_text
from unohil.harness.scenarios.validation.words import (ALL_ANCHORS, BUILTIN_ANCHORS, MAX_AHEAD_US, MAX_EVALUATIONS,
                                                       MAX_EXPR_CHARS, MAX_FILE_RACES, MAX_RACES, MAX_TIMES,
                                                       RESERVED_NAMES)
from unohil.harness.text import clock_span

def parse_seed(v: Validator, node: yaml.Node) -> tuple[int | None, bool]:
    """seed: N (race i draws from rng_seed N + i) or {same: N} (every race from N)."""
    if isinstance(node, yaml.MappingNode):
        m = v.mapping(node, "seed", {"same"})
        if "same" not in m:
            if not node.value:
                v.err(node, "seed", "give an integer (race i: seed + i) or {same: N} (every race: N)")
            return None, False
        return v.integer(m["same"][1], "seed.same", 0, 0xFFFFFFFF), True
    return v.integer(node, "seed", 0, 0xFFFFFFFF), False


def parse_races(v: Validator, top: dict) -> list[dict[str, int]]:
    repeat = 1
    if "repeat" in top:
        repeat = v.integer(top["repeat"][1], "repeat", 1, MAX_RACES) or 1
    axes: list[tuple[str, list[int]]] = []
    if "sweep" in top:
        for name, (kn, vn) in v.mapping(top["sweep"][1], "sweep").items():
            key = f"sweep.{name}"
            if not name.isidentifier() or name in ALL_ANCHORS or name in RESERVED_NAMES:
                v.err(kn, key, f"{name!r} cannot name a sweep variable: " + (
                    "not a plain name" if not name.isidentifier() else
                    "it is an anchor (a sweep variable would rebind it)" if name in ALL_ANCHORS else
                    "the scenario language gives it a meaning"))
                continue
            if isinstance(vn, yaml.SequenceNode):
                if len(vn.value) > MAX_RACES:
                    v.err(vn, key, f"{len(vn.value)} values; at most {MAX_RACES} races per scenario (MAX_RACES)")
                    continue
                vals = [v.integer(x, key) for x in vn.value]
                if any(x is None for x in vals):
                    continue
                if not vals:
                    v.err(vn, key, "has no values")
                    continue
                axes.append((name, vals))  # type: ignore[arg-type]
                continue
            spec = v.mapping(vn, key, {"from", "to", "step"})
            if set(spec) != {"from", "to", "step"}:
                v.err(vn, key, "needs from, to and step (or a list of values)")
                continue
            lo, hi, step = (v.integer(spec[x][1], f"{key}.{x}") for x in ("from", "to", "step"))
            if None in (lo, hi, step):
                continue
            if step == 0 or (hi - lo) * step < 0:
                v.err(spec["step"][1], f"{key}.step", f"step {step} never gets from {lo} to {hi}")
                continue
            count = (hi - lo) // step + 1       # counted, not listed: a range is refused before it exists
            if count > MAX_RACES:
                v.err(vn, key, f"{count} values; at most {MAX_RACES} races per scenario (MAX_RACES)")
                continue
            axes.append((name, list(range(lo, hi + (1 if step > 0 else -1), step))))
    total = math.prod(len(vals) for _, vals in axes) * repeat
    where = top["sweep"][1] if "sweep" in top else top["repeat"][1] if "repeat" in top else None
    if total > MAX_RACES:
        sizes = " x ".join([str(len(vals)) for _, vals in axes] + ([f"repeat {repeat}"] if repeat > 1 else []))
        v.err(where, "sweep" if "sweep" in top else "repeat",
              f"{sizes} = {total} races; at most {MAX_RACES} per scenario (MAX_RACES)")
        return [{name: vals[0] for name, vals in axes} | {"race": 0}]   # to go on checking the rest
    if v.races + total > MAX_FILE_RACES:
        v.err(where, "sweep" if "sweep" in top else "repeat",
              f"{total} races, {v.races + total} in the file so far; at most {MAX_FILE_RACES} in one file "
              f"(MAX_FILE_RACES): split it")
        return [{name: vals[0] for name, vals in axes} | {"race": 0}]
    v.races += total
    races: list[dict[str, int]] = []
    combos = itertools.product(*(vals for _, vals in axes)) if axes else [()]
    for combo in combos:
        for _ in range(repeat):
            env = {name: val for (name, _), val in zip(axes, combo)}
            env["race"] = len(races)
            races.append(env)
    return races


def time_spec(v: Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
          races: list[dict[str, int]]) -> TimeSpec | None:
    if not isinstance(node, yaml.ScalarNode):
        v.err(node, key, f"must be a time such as 'green + 180000' or 250000, not {describe_node(node)}")
        return None
    raw = CONSTRUCTOR.construct_object(node)
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        v.err(node, key, f"must be a time such as 'green + 180000' or 250000, not {raw!r}")
        return None
    text = str(raw).strip()
    if not text:
        # not 'start', not 'previous': an empty time is a mistake, whatever it was meant to be
        v.err(node, key, "is empty; write a time ('previous + 1000', 'start', 'green + 180000'), or leave "
                         "the key out" + (" (at: the previous step's time)" if key.endswith(".at") else ""))
        return None
    if len(text) > MAX_EXPR_CHARS:
        v.err(node, key, f"{len(text)} characters; a time is at most {MAX_EXPR_CHARS} (MAX_EXPR_CHARS)")
        return None
    # an event anchor: the unit's event, or in rig mode what the rig saw of the unit (seen_...)
    events = (set(unit.anchors) | set(RIG_ANCHORS[unit.kind])) if unit else set()
    anchors = set(BUILTIN_ANCHORS) | events
    is_next = False
    if text.startswith("next ") and not isinstance(raw, int):
        is_next = True
        rest_text = text[5:].strip()
        head = rest_text.split("+")[0].split("-")[0].strip()
        if head in BUILTIN_ANCHORS or head not in events:
            v.err(node, key, f"'next' goes before an event anchor ({', '.join(sorted(unit.anchors)) if unit else ''}), "
                             f"not {head!r}")
            return None
        text = rest_text
    head, _, rest = text.partition(" ") if not isinstance(raw, int) else ("", "", text)
    head = head.split("+")[0].split("-")[0].strip() if head else ""
    if head and head.isidentifier() and head not in variables and head != "race":
        if head not in anchors:
            v.err(node, key, f"unknown anchor {head!r}; the {unit.kind if unit else 'unit'} has: "
                             f"{', '.join(sorted(anchors))}")
            return None
        offset_text = text[len(head):].strip()
        anchor = head
    else:
        anchor, offset_text = "start", text
    if offset_text.startswith("+"):
        offset_text = offset_text[1:]
    elif offset_text.startswith("-"):
        v.err(node, key, f"{text!r} is before its anchor {anchor!r}; anchor on an earlier event instead")
        return None
    worked = worked_out(v, node, key, offset_text.strip() or "0", text, variables, races)
    if worked is None:
        return None
    tree, values = worked
    for env, off in zip(races, values):
        if not isinstance(off, int) or isinstance(off, bool):
            v.err(node, key, f"{text!r} is not a time")
            return None
        if off < 0:
            v.err(node, key, f"{text!r} is {off} us, before its anchor {anchor!r} (with {env_text(env)})")
            return None
    return TimeSpec(anchor, tree, ("next " if is_next else "") + text, is_next)


def worked_out(v: Validator, node: yaml.Node, key: str, source: str, text: str, variables: set[str],
                races: list[dict[str, int]]) -> tuple | None:
    """An expression's tree and its value in each race, or None (its problem said): it must parse,
    name only sweep variables and race, and have a value in every race. text: how to quote it."""
    try:
        tree = expr.parse(source)
    except expr.ExprError as exc:
        v.err(node, key, str(exc))
        return None
    unknown = expr.names(tree) - variables - {"race"}
    if unknown:
        v.err(node, key, f"unknown name(s) {', '.join(sorted(unknown))} in {text!r}; sweep variables: "
                         f"{', '.join(sorted(variables)) or 'none'}")
        return None
    values = race_values(v, node, key, tree, text, races)
    return None if values is None else (tree, values)


def race_values(v: Validator, node: yaml.Node, key: str, tree, text: str, races: list[dict[str, int]]) -> list | None:
    """The expression's value in each race (kept for the checks that combine them), None if it has
    none in some race (said) or the file needs more evaluating than MAX_EVALUATIONS."""
    cost = len(races) * sum(1 for _ in ast.walk(tree))
    if v.evaluations + cost > MAX_EVALUATIONS:
        if not v.over_budget:
            v.err(node, key, f"validating the file needs more than {MAX_EVALUATIONS} steps of expression evaluation "
                             f"(each time and condition's size times its races; MAX_EVALUATIONS): fewer races, "
                             f"or split the file")
        v.over_budget = True
        return None
    v.evaluations += cost
    varies = bool(races) and bool(expr.names(tree) & set(races[0]))
    values = []
    for env in races if varies else races[:1]:
        try:
            values.append(expr.evaluate(tree, env))
        except expr.ExprError as exc:
            v.err(node, key, f"{text!r}: {exc}")
            return None
    if not varies:
        values *= len(races)        # the same in every race
    v.values[id(tree)] = (tree, values)
    return values


def per_race(v: Validator, tree, races: list[dict[str, int]]) -> list[int]:
    """The value in each race of an expression race_values worked out (a default, such as 0, otherwise)."""
    if id(tree) not in v.values:
        v.values[id(tree)] = (tree, [expr.evaluate(tree, races[0] if races else {})] * len(races))
    return v.values[id(tree)][1]


def repetitions(v: Validator, node: yaml.Node, key: str, variables: set[str], races: list[dict[str, int]]):
    """A step's repetitions: an integer or an expression of the sweep variables, from 1 to MAX_TIMES in
    every race. (its tree, its value per race), or None (said)."""
    raw = CONSTRUCTOR.construct_object(node) if isinstance(node, yaml.ScalarNode) else None
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        v.err(node, key, f"must be a count: an integer or an expression of sweep variables, not {describe_node(node)}")
        return None
    text = str(raw).strip()
    if not text:
        v.err(node, key, "is empty; give a count (leave 'times' out for 1)")
        return None
    if len(text) > MAX_EXPR_CHARS:
        v.err(node, key, f"{len(text)} characters; a count is at most {MAX_EXPR_CHARS} (MAX_EXPR_CHARS)")
        return None
    worked = worked_out(v, node, key, text, text, variables, races)
    if worked is None:
        return None
    tree, values = worked
    for env, n in zip(races, values):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TIMES:
            shown = f"{n!r}" if isinstance(raw, int) else f"{text!r} is {n!r}" + (
                f" (with {env_text(env)})" if len(races) > 1 else "") + ","
            v.err(node, key, f"{shown} is out of range [1, {MAX_TIMES}]: a step is given 1 to {MAX_TIMES} times "
                             f"(MAX_TIMES)" if isinstance(n, int) else f"{text!r} is not a count")
            return None
    return tree, values


def ahead_of_heard(v: Validator, node: yaml.Node, key: str, at: TimeSpec, races: list[dict[str, int]], previous: list[int],
           every=None, counts: list[int] | None = None, hold=None) -> list[int]:
    """How far ahead of what the runner last heard from the unit (the race's start or the step's event
    anchor, or through 'previous' the step before's) each race puts this step's last repetition. The
    runner sends a stimulus once it knows its anchor, so every time, repetition and hold counted from
    there must fit the device clock: at most MAX_AHEAD_US, in every race of the sweep."""
    offsets = per_race(v, at.offset, races)
    spacing = per_race(v, every, races) if every is not None else [0] * len(races)
    holds = per_race(v, hold, races) if hold is not None else [0] * len(races)
    out = []
    counts = counts or [1] * len(races)
    for i, env in enumerate(races):
        base = previous[i] if at.anchor == "previous" else 0
        times = counts[i]
        last = base + offsets[i] + (times - 1) * spacing[i] + holds[i]     # previous after a hold: its release
        furthest = max(last, spacing[i], holds[i])
        if furthest > MAX_AHEAD_US:
            origin = "the race's start" if at.anchor == "start" else f"its anchor {at.anchor!r}" \
                if at.anchor != "previous" else "the start or event the steps before it count from"
            sweep = f" (with {env_text(env)})" if len(races) > 1 else ""
            v.err(node, key, f"{at.text!r}{' repeated' if times > 1 else ''}{' and held' if hold is not None else ''} "
                             f"reaches {clock_span(furthest)} ({furthest} us) after {origin}{sweep}; the device clock "
                             f"(a u32 us counter that wraps every {clock_span(devtime.WRAP)}) lets a race schedule at "
                             f"most {clock_span(MAX_AHEAD_US)} ahead (MAX_AHEAD_US)")
            return [0] * len(races)     # said once; the steps after it are checked from scratch
        out.append(last)
    return out


def lead_warning(v: Validator, node: yaml.Node, key: str, st: Step, races: list[dict[str, int]],
                  ahead: list[int], heard_event: bool) -> None:
    """A step the runner schedules once it has heard an event (its anchor, a role's, the steps before it
    back to one) less than REAL_LEAD_US after that event, or repeated until an event with less than
    that between repetitions: a link with transit time cannot get the stimulus there in time (the
    unit answers too_late) though a virtual link can. Said, not refused."""
    offsets = per_race(v, st.at.offset, races)
    gaps = [(ahead[i] if st.at.anchor == "previous" else 0) + offsets[i] for i in range(len(races))]
    closest = min(range(len(races)), key=lambda i: gaps[i], default=None)
    if heard_event and closest is not None and gaps[closest] < REAL_LEAD_US \
            and st.action not in ("wait_for", "config", "wait"):
        sweep = f" (with {env_text(races[closest])})" if len(races) > 1 else ""
        v.warn(node, key, f"{st.text} at {st.at.text!r} comes {gaps[closest]} us after the event the runner must "
                          f"hear before it can send it{sweep}; a link with transit time needs about {REAL_LEAD_US} "
                          f"us (REAL_LEAD_US in harness/scenarios/lead.py): on hardware the unit would answer too_late")
    if st.until is not None and st.every is not None:
        spacing = per_race(v, st.every, races)
        i = min(range(len(races)), key=lambda j: spacing[j])
        if spacing[i] < REAL_LEAD_US:
            v.warn(node, key, f"{st.text} repeats until {st.until.text} every {spacing[i]} us; the runner decides "
                              f"each repetition from what it heard before it, and a link with transit time needs "
                              f"about {REAL_LEAD_US} us (REAL_LEAD_US in harness/scenarios/lead.py)")
