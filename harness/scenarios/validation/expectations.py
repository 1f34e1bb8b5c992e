"""Expectations: what a race must show (verdicts, events, absences, counts, latencies, reaction times,
the rig's figures), by case of the sweep, and the comparisons across races; each value a matcher."""
from __future__ import annotations

import re

import yaml

from unohil.protocol import catalogue as cat

from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.model import Comparison, EventPattern, Expectation, Matcher, RoleMatcher, TimeMatcher, TimeSpec
from unohil.harness.scenarios.units import RIG_ANCHORS, UnitVocab
from unohil.harness.scenarios.validation.reader import CONSTRUCTOR, Validator, describe_node, sweep_text
from unohil.harness.scenarios.validation.times import race_values, time_spec, worked_out
from unohil.harness.scenarios.validation.words import (BUILTIN_ANCHORS, CASE_KEYS, COMPARE_KEYS, EXPECT_KEYS,
                                                       LATENCY_METRICS, MAX_EXPR_CHARS)

_NONE = {"u8": cat.NONE_U8, "u16": cat.NONE_U16, "u32": cat.NONE_U32, "i32": cat.NONE_I32}


def _expr_matcher(v: Validator, node: yaml.Node, key: str) -> Matcher | None:
    """An exact value given as an expression of the sweep variables ('players', 'n - 1'), worked out
    (and checked to be an integer) in every race."""
    text = str(CONSTRUCTOR.construct_object(node)).strip()
    if len(text) > MAX_EXPR_CHARS:
        v.err(node, key, f"{len(text)} characters; an expression is at most {MAX_EXPR_CHARS} (MAX_EXPR_CHARS)")
        return None
    worked = worked_out(v, node, key, text or "''", text, v.variables, v.sweep)
    if worked is None:
        return None
    tree, values = worked
    if any(isinstance(x, bool) or not isinstance(x, int) for x in values):
        v.err(node, key, f"{text!r} is not an integer")
        return None
    return Matcher("expr", (tree,), label=text)


def _matcher(v: Validator, node: yaml.Node, key: str, enum_name: str | None,
             none_value: int | None = None) -> Matcher | None:
    def conv(n: yaml.Node):
        raw = CONSTRUCTOR.construct_object(n) if isinstance(n, yaml.ScalarNode) else None
        if raw == "none" and none_value is not None and not (enum_name and "none" in cat.ENUM_VALUES.get(enum_name, {})):
            return none_value
        if isinstance(raw, bool) and enum_name:
            # YAML 1.1 reads a bare on/off/yes/no as a boolean; in an enum field it means the name.
            text = n.value.lower() if isinstance(n, yaml.ScalarNode) else ""
            raw = text if text in cat.ENUM_VALUES.get(enum_name, {}) else ("on" if raw else "off")
        if isinstance(raw, str) and enum_name:
            table = cat.ENUM_VALUES.get(enum_name, {})
            if raw == "none" and "none" not in table:
                return cat.NONE_U8
            if raw not in table:
                v.err(n, key, f"{raw!r} is not a {enum_name}; expected one of: {', '.join(table)}")
                return None
            return table[raw]
        if raw is None and isinstance(n, yaml.ScalarNode):
            return None if enum_name is None else cat.NONE_U8
        if isinstance(raw, bool) or not isinstance(raw, int):
            v.err(n, key, f"must be an integer{' or a ' + enum_name + ' name' if enum_name else ''}, not {describe_node(n)}")
            return None
        return raw

    if isinstance(node, yaml.ScalarNode) and enum_name is None and node.tag == "tag:yaml.org,2002:str" \
            and node.value != "none":
        return _expr_matcher(v, node, key)
    if isinstance(node, yaml.SequenceNode):
        vals = [conv(x) for x in node.value]
        if any(x is None for x in vals) or not vals:
            return None
        return Matcher("any", tuple(vals), label="one of " + ", ".join(str(CONSTRUCTOR.construct_object(x))
                                                                     for x in node.value))
    if isinstance(node, yaml.MappingNode):
        spec = v.mapping(node, key, {"min", "max", "value", "tol"})
        if "value" in spec:
            center = v.integer(spec["value"][1], key)
            tol = v.integer(spec["tol"][1], key, 0) if "tol" in spec else 0
            if center is None or tol is None or "min" in spec or "max" in spec:
                if "min" in spec or "max" in spec:
                    v.err(node, key, "give either value/tol or min/max, not both")
                return None
            return Matcher("range", lo=center - tol, hi=center + tol, label=f"{center} +/- {tol}")
        if not spec:
            v.err(node, key, "needs min and/or max, or value and tol")
            return None
        lo = v.integer(spec["min"][1], key) if "min" in spec else None
        hi = v.integer(spec["max"][1], key) if "max" in spec else None
        if lo is not None and hi is not None and lo > hi:
            v.err(node, key, f"min {lo} > max {hi}")
            return None
        return Matcher("range", lo=lo, hi=hi, label=f"[{'' if lo is None else lo}, {'' if hi is None else hi}]")
    val = conv(node)
    if val is None:
        return None
    return Matcher("eq", (val,), label=node.value if isinstance(node, yaml.ScalarNode) else str(val))


def _role_matcher(v: Validator, node: yaml.Node, key: str, unit: UnitVocab, mask: bool) -> RoleMatcher | bool:
    """A field value given by role ('current', 'opponent_2', 'opponent_1 | opponent_3', 'opponents',
    or a list of such and numbers: one of them); False if the value names no role, True if it did
    but wrongly (the problem is reported)."""
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    if not all(isinstance(x, yaml.ScalarNode) for x in items):
        return False
    raw = [CONSTRUCTOR.construct_object(x) for x in items]
    if not any(isinstance(r, str) and any(rl.looks_like_role(t) for t in rl.mask_terms(r)) for r in raw):
        return False
    options: list = []
    for x, r in zip(items, raw):
        if isinstance(r, int) and not isinstance(r, bool):
            options.append(r)
            continue
        terms = rl.mask_terms(r) if isinstance(r, str) and mask else [r]
        problems = [p for t in terms if (p := rl.role_problem(str(t), unit.roles, mask, v.players)) is not None]
        if problems:
            v.err(x, key, problems[0] + ("" if mask else "; a player field names one player (a list: one of them)"))
            return True
        options.append(tuple(terms))
    label = " or ".join(str(r) for r in raw) if len(raw) > 1 else str(raw[0])
    return RoleMatcher(tuple(options), mask, ("one of " if len(raw) > 1 else "") + label)


def _fields(v: Validator, node: yaml.Node, key: str, message: str, unit: UnitVocab) -> dict[str, Matcher | RoleMatcher]:
    mdef = cat.BY_NAME[message]
    types = {f.name: f.type for f in mdef.fields}
    known = set(types) - {"event_seq"}
    out: dict[str, Matcher | RoleMatcher] = {}
    facts = unit.roles
    for fname, (kn, vn) in v.mapping(node, key, known).items():
        if fname in unit.time_fields:
            tm = _time_matcher(v, vn, f"{key}.{fname}", unit)
            if isinstance(tm, TimeMatcher):
                out[fname] = tm
            if tm is not False:
                continue
        if facts is not None and (message, fname) in facts.player_fields | facts.mask_fields:
            rm = _role_matcher(v, vn, f"{key}.{fname}", unit, (message, fname) in facts.mask_fields)
            if isinstance(rm, RoleMatcher):
                out[fname] = rm
            if rm is not False:
                continue
        m = _matcher(v, vn, f"{key}.{fname}", unit.enum_for(message, fname), _NONE.get(types[fname]))
        if m is not None:
            out[fname] = m
    return out


def _anchored(node: yaml.Node, unit: UnitVocab) -> bool:
    """Whether a scalar reads as a time from an anchor ('green + 180000', 'start')."""
    raw = CONSTRUCTOR.construct_object(node) if isinstance(node, yaml.ScalarNode) else None
    if not isinstance(raw, str):
        return False
    head = re.match(r"\s*([A-Za-z_][A-Za-z_0-9]*)", raw)
    return head is not None and (head[1] in unit.anchors or head[1] in BUILTIN_ANCHORS or head[1] == "next"
                                 or head[1] in RIG_ANCHORS[unit.kind])


def _time_matcher(v: Validator, node: yaml.Node, key: str, unit: UnitVocab) -> TimeMatcher | bool:
    """A device-time field's value given from an anchor: 'green + 180000', {value: 'green + 180000',
    tol: 20} or {min: green, max: 'green + 1000'}; False if the value names no anchor (matched raw),
    True if it did but wrongly (said)."""
    spec = {}
    if isinstance(node, yaml.MappingNode):
        spec = {name: vn for kn, vn in node.value
                if isinstance(kn, yaml.ScalarNode) and (name := kn.value) in ("value", "min", "max", "tol")}
        if not any(_anchored(x, unit) for k, x in spec.items() if k != "tol"):
            return False
        spec = {k: vn for k, (kn, vn) in v.mapping(node, key, {"value", "min", "max", "tol"}).items()}
    elif not _anchored(node, unit):
        return False
    def one(n: yaml.Node, k: str) -> TimeSpec | None:
        if not _anchored(n, unit):
            v.err(n, k, "give every bound from an anchor ('green + 1000', 'start + 5000') when one is")
            return None
        t = time_spec(v, n, k, unit, v.variables, v.sweep)
        if t is not None and t.anchor in RIG_ANCHORS[unit.kind]:
            v.err(n, k, f"an expected time counts from the unit's own events, not from what the rig saw "
                        f"({t.anchor}); the rig's view is checked with expect: rig")
            return None
        if t is not None and (t.anchor == "previous" or t.next):
            v.err(n, k, "an expected time counts from start or an event anchor (the latest such event at or "
                        "before the event judged), not previous or next")
            return None
        return t
    if not spec:
        t = one(node, key)
        return True if t is None else TimeMatcher(t, t, t.text)
    if set(spec) - {"value", "tol"} and "value" in spec or set(spec) == {"tol"}:
        v.err(node, key, "give either value/tol or min/max, not both")
        return True
    if "value" in spec:
        t = one(spec["value"], key)
        tol = v.integer(spec["tol"], key, 0) if "tol" in spec else 0
        if t is None or tol is None:
            return True
        return TimeMatcher(t, t, f"{t.text} +/- {tol}", tol)
    lo = one(spec["min"], key) if "min" in spec else None
    hi = one(spec["max"], key) if "max" in spec else None
    if ("min" in spec and lo is None) or ("max" in spec and hi is None):
        return True
    return TimeMatcher(lo, hi, f"[{lo.text if lo else ''}, {hi.text if hi else ''}]")


def event_pattern(v: Validator, node: yaml.Node, key: str, unit: UnitVocab) -> EventPattern | None:
    if isinstance(node, yaml.ScalarNode):
        name = v.text(node, key)
        fields_node = None
    else:
        m = v.mapping(node, key)
        if len(m) != 1:
            v.err(node, key, "an event pattern is NAME or {NAME: {field: value, ...}}")
            return None
        name, (kn, fields_node) = next(iter(m.items()))
    if name is None:
        return None
    if name not in unit.events:
        v.err(node, key, f"the {unit.kind} unit has no event {name!r}; it has: {', '.join(sorted(unit.events))}")
        return None
    fields = _fields(v, fields_node, f"{key}.{name}", name, unit) if fields_node is not None else {}
    return EventPattern(name, fields, name)


def parse_expect(v: Validator, node: yaml.Node, unit: UnitVocab | None, variables: set[str],
            races: list[dict[str, int]]) -> list[Expectation]:
    m = v.mapping(node, "expect", EXPECT_KEYS)
    if not m:
        if isinstance(node, yaml.MappingNode):
            v.err(node, "expect", "is empty: a scenario with no expectation would pass whatever the device did")
        return []
    if unit is None:
        return []
    base = _expect_body(v, m, "expect", unit)
    out = [base]
    if "cases" in m:
        for i, cn in enumerate(v.seq(m["cases"][1], "expect.cases")):
            key = f"expect.cases[{i}]"
            cm = v.mapping(cn, key, CASE_KEYS)
            if "when" not in cm:
                v.err(cn, f"{key}.when", "each case needs 'when' (a condition on sweep variables)")
                continue
            wn = cm["when"][1]
            text = v.text(wn, f"{key}.when")
            if text is None:
                continue
            if len(text) > MAX_EXPR_CHARS:
                v.err(wn, f"{key}.when", f"{len(text)} characters; a condition is at most {MAX_EXPR_CHARS} "
                                         f"(MAX_EXPR_CHARS)")
                continue
            try:
                tree = expr.parse(text)
            except expr.ExprError as exc:
                v.err(wn, f"{key}.when", str(exc))
                continue
            unknown = expr.names(tree) - variables - {"race"}
            if unknown:
                v.err(wn, f"{key}.when", f"unknown name(s): {', '.join(sorted(unknown))}")
                continue
            holds = race_values(v, wn, f"{key}.when", tree, text, races)
            if holds is None:
                continue
            if not any(holds):
                # its checks would be skipped in every race, and the scenario pass whatever they say
                v.err(wn, f"{key}.when", f"{text!r} holds in none of the races, so its checks would never run; "
                                         f"the sweep gives {sweep_text(races)}")
                continue
            body = _expect_body(v, {k: x for k, x in cm.items() if k != "when"}, key, unit)
            body.when, body.when_text = tree, text
            out.append(body)
    if not any(_has_checks(e) for e in out):
        v.err(node, "expect", "has no checks")
    return out


def _has_checks(e: Expectation) -> bool:
    return bool(e.verdicts or e.events or e.absent or e.count or e.latency or e.reaction or e.rig)


def rig_figures(unit: UnitVocab) -> list[str]:
    """The figures an expect: rig may check on this kind of unit (harness/rig/views.py computes them): the
    timestamp error of its presses, the reaction error if its verdict has reaction times, and the decision to
    each output of the unit its reference rig wiring watches (messages.yaml rig.wiring; not the rig's own
    loopback, which no decision of the unit switches)."""
    out = ["timestamp_error_us"] + (["reaction_error_us"] if reaction_keys(unit) else [])
    if cat.RIG is not None:
        out += list(dict.fromkeys(f"decision_to_{w.name}_us" for w in cat.RIG.wiring[unit.kind]
                                  if not w.drives and w.signal != "loopback"))
    return out


def reaction_keys(unit: UnitVocab) -> list[str]:
    """The names a reaction expectation may use: X for a verdict field reaction_X_us, player_i for
    each element of a reaction_us array, and the roles for a unit with them (the judge's _reaction
    reads them the same way)."""
    out = []
    for f in cat.BY_NAME[unit.verdict].fields:
        if f.name == "reaction_us":
            out += [f"player_{i}" for i in range(f.count)]
            out += list(rl.role_words(unit.roles)) if unit.roles is not None else []
        elif f.name.startswith("reaction_") and f.name.endswith("_us"):
            out.append(f.name[len("reaction_"):-len("_us")])
    return out


def _expect_body(v: Validator, m: dict, key: str, unit: UnitVocab) -> Expectation:
    e = Expectation()
    if "verdict" in m and "verdicts" in m:
        v.err(m["verdicts"][0], f"{key}.verdicts", "give verdict or verdicts, not both")
    if "verdict" in m:
        e.verdicts = [_fields(v, m["verdict"][1], f"{key}.verdict", unit.verdict, unit)]
    if "verdicts" in m:
        e.verdicts = [_fields(v, n, f"{key}.verdicts[{i}]", unit.verdict, unit)
                      for i, n in enumerate(v.seq(m["verdicts"][1], f"{key}.verdicts"))]
    if "events" in m:
        for i, n in enumerate(v.seq(m["events"][1], f"{key}.events")):
            p = event_pattern(v, n, f"{key}.events[{i}]", unit)
            if p is not None:
                e.events.append(p)
    if "absent" in m:
        for i, n in enumerate(v.seq(m["absent"][1], f"{key}.absent")):
            p = event_pattern(v, n, f"{key}.absent[{i}]", unit)
            if p is not None:
                e.absent.append(p)
    if "count" in m:
        e.count = _named_matchers(v, m["count"][1], f"{key}.count", lambda name: None if name in unit.events else
                                  f"the {unit.kind} unit has no event {name!r}")
    if "latency" in m:
        e.latency = _named_matchers(v, m["latency"][1], f"{key}.latency", lambda name: None, set(LATENCY_METRICS))
    if "reaction" in m:
        known = reaction_keys(unit)

        def reaction_problem(name: str) -> str | None:
            if name not in known:
                return f"the {unit.kind} unit's {unit.verdict} has no such reaction time" + (
                    f"; it has: {', '.join(known)}" if known else "")
            if unit.roles is not None and rl.looks_like_role(name):
                return rl.role_problem(name, unit.roles, mask=False, players=v.players)
            return None
        e.reaction = _named_matchers(v, m["reaction"][1], f"{key}.reaction", reaction_problem)
    if "rig" in m:
        figures = rig_figures(unit)
        e.rig = _named_matchers(v, m["rig"][1], f"{key}.rig", lambda name: None if name in figures else
                                f"a rig measures no {name!r} on the {unit.kind} unit; it measures: {', '.join(figures)}")
    return e


def _named_matchers(v: Validator, node: yaml.Node, key: str, problem_of, allowed: set[str] | None = None
                    ) -> dict[str, Matcher]:
    """The NAME: MATCHER entries of a mapping (counts, latencies, reaction times, rig figures), each name
    first checked by problem_of: what is wrong with it, or None."""
    out: dict[str, Matcher] = {}
    for name, (kn, vn) in v.mapping(node, key, allowed).items():
        problem = problem_of(name)
        if problem is not None:
            v.err(kn, f"{key}.{name}", problem)
            continue
        mt = _matcher(v, vn, f"{key}.{name}", None)
        if mt is not None:
            out[name] = mt
    return out


_PATH = re.compile(r"^(?P<event>[A-Za-z_][A-Za-z_0-9]*)(\[(?P<index>[0-9]+)\])?\.(?P<field>[a-z_0-9]+)$")


def comparisons(v: Validator, node: yaml.Node, unit: UnitVocab, races: list[dict[str, int]]) -> list[Comparison]:
    """compare: [{same: PATH}, {differ: PATH, races: [0, 1]}]: a value read from each race (PATH:
    verdict.FIELD, verdicts[N].FIELD, EVENT.FIELD, EVENT[N].FIELD; FIELD may be t_us, the event's time)
    that is equal in every race compared, or differs between every two of them."""
    out = []
    for i, n in enumerate(v.seq(node, "compare")):
        key = f"compare[{i}]"
        m = v.mapping(n, key, COMPARE_KEYS)
        kinds = [k for k in ("same", "differ") if k in m]
        if len(kinds) != 1:
            v.err(n, key, "give one of same: PATH or differ: PATH (PATH: verdict.FIELD, EVENT.FIELD, EVENT[N].FIELD)")
            continue
        kind = kinds[0]
        paths = [p for p in (_compare_path(v, x, f"{key}.{kind}", unit) for x in (
            m[kind][1].value if isinstance(m[kind][1], yaml.SequenceNode) else [m[kind][1]])) if p is not None]
        if not paths:
            continue
        chosen = tuple(range(len(races)))
        if "races" in m:
            vals = [v.integer(x, f"{key}.races", 0, len(races) - 1) for x in v.seq(m["races"][1], f"{key}.races")]
            if any(x is None for x in vals):
                continue
            chosen = tuple(dict.fromkeys(vals))     # type: ignore[arg-type]
        if len(chosen) < 2:
            v.err(n, key, f"compares {len(chosen)} race(s); a comparison needs two or more (the scenario has "
                          f"{len(races)}: give repeat or sweep, or races: [i, j])")
            continue
        out += [Comparison(kind, event, index, fname, chosen, f"{kind}: {text}", n.start_mark.line + 1)
                for event, index, fname, text in paths]
    return out


def _compare_path(v: Validator, pn: yaml.Node, key: str, unit: UnitVocab) -> tuple[str, int, str, str] | None:
    """(event, index, field, text) of a path compared across races, or None (said)."""
    text = v.text(pn, key)
    if text is None:
        return None
    pm = _PATH.match(text.strip())
    if pm is None:
        v.err(pn, key, f"{text!r} is not verdict.FIELD, verdicts[N].FIELD, EVENT.FIELD or EVENT[N].FIELD")
        return None
    event, index, fname = pm["event"], int(pm["index"] or 0), pm["field"]
    if event in ("verdict", "verdicts"):
        if (event == "verdict") != (pm["index"] is None):
            v.err(pn, key, "verdict.FIELD is the first verdict; verdicts[N].FIELD the N-th (from 0)")
            return None
        event = unit.verdict
    if event not in unit.events:
        v.err(pn, key, f"the {unit.kind} unit has no event {event!r}; it has: verdict, "
                       f"{', '.join(sorted(unit.events))}")
        return None
    known = [f.name for f in cat.BY_NAME[event].fields if f.name != "event_seq"] + ["t_us"]
    if fname not in known:
        v.err(pn, key, f"{event} has no field {fname!r}; it has: {', '.join(known)}")
        return None
    return event, index, fname, text.strip()
