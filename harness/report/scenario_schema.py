"""A JSON Schema (draft-07) of the scenario format, for editors: yaml-language-server checks and completes
scenarios against it as they are typed. The validator (harness/scenarios/load.py) stays the judge; the
schema says the same where JSON Schema can: the keys at each level, and every vocabulary of a unit kind
(inputs, events and their fields, field enums, anchors, parameters and their ranges, capabilities,
switches, decisions) derived from the catalogue, so a unit kind added there is in the schema too."""
from __future__ import annotations

from unohil.protocol import catalogue as cat
from unohil.harness.scenarios import roles as rl
from unohil.harness.scenarios.load import (BUILTIN_ANCHORS, CASE_KEYS, COMPARE_KEYS, EXPECT_KEYS, LATENCY_METRICS,
                                    STEP_ACTIONS, STEP_COMMON, TOP_KEYS, reaction_keys,
                                    rig_figures)
from unohil.harness.scenarios.units import RIG_ANCHORS, TAGS, UNITS, UnitVocab

SCHEMA_ID = "https://uno-hil.invalid/schemas/scenario.json"    # a name, not a place: nothing is fetched
U32 = 0xFFFFFFFF
#: An expression of sweep variables ('players', 'n - 1'): where an integer may be computed per race.
_EXPRESSION = {"type": "string", "pattern": r"^\s*[A-Za-z_0-9(]", "description": "an expression of sweep variables"}


def _time(unit: UnitVocab | None) -> dict:
    anchors = list(BUILTIN_ANCHORS) + (sorted(unit.anchors) + sorted(RIG_ANCHORS[unit.kind]) if unit else [])
    return {"description": "a device time: an anchor plus an offset in us ('green + 180000'), 'next ANCHOR', "
                           "or an offset from the race start (an integer, or an expression of sweep variables)",
            "anyOf": [{"type": "integer", "minimum": 0},
                      {"type": "string", "pattern": r"^\s*(next\s+)?[A-Za-z_0-9(]",
                       "examples": [f"{a} + 0" for a in anchors]}]}


def _duration() -> dict:
    return {"description": "a duration in us (an integer, or an expression of sweep variables)",
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": r"^\s*[A-Za-z_0-9(]"}]}


def _anchored(unit: UnitVocab) -> dict:
    """A device time from an anchor of the race, as an expectation gives it ('green + 180000')."""
    anchors = ["start"] + sorted(unit.anchors)
    return {"type": "string", "pattern": rf"^\s*({'|'.join(anchors)})\b", "examples": [f"{a} + 0" for a in anchors]}


def _value(enum: str | None, role: bool) -> dict:
    """One value a field may be matched against."""
    options: list[dict] = [{"type": "integer"}, {"const": "none"}, {"type": "null"}]
    if not enum and not role:
        options.append(_EXPRESSION)
    if enum:
        options.append({"enum": list(cat.ENUM_VALUES[enum])})
        if set(cat.ENUM_VALUES[enum]) & {"on", "off"}:
            options.append({"type": "boolean"})       # YAML 1.1 reads a bare on/off as a boolean
    if role:
        options.append({"type": "string", "pattern": rf"^\s*({rl.CURRENT}|{rl.OPPONENTS}|{rl.OPPONENT}[0-9]+)"
                                                     rf"(\s*\|\s*({rl.CURRENT}|{rl.OPPONENT}[0-9]+))*\s*$"})
    return {"anyOf": options}


def _matcher(value: dict, bound: dict | None = None) -> dict:
    bound = bound or {"type": "integer"}
    return {"anyOf": [value, {"type": "array", "minItems": 1, "items": value},
                      {"type": "object", "additionalProperties": False, "minProperties": 1,
                       "properties": {"min": bound, "max": bound}},
                      {"type": "object", "additionalProperties": False, "required": ["value"],
                       "properties": {"value": bound, "tol": {"type": "integer", "minimum": 0}}}]}


_DEFS: dict[str, dict] = {}      # filled while the schema is built: shared parts, referenced by name


def _ref(name: str, build) -> dict:
    if name not in _DEFS:
        _DEFS[name] = {}
        _DEFS[name] = build()
    return {"$ref": f"#/definitions/{name}"}


def _fields(unit: UnitVocab, message: str) -> dict:
    return _ref(f"{unit.kind}.{message}", lambda: _fields_of(unit, message))


def _fields_of(unit: UnitVocab, message: str) -> dict:
    role_fields = unit.roles.player_fields | unit.roles.mask_fields if unit.roles else set()
    props = {}
    for f in cat.BY_NAME[message].fields:
        if f.name in unit.time_fields:
            props[f.name] = _ref(f"{unit.kind}.match.time", lambda: _matcher(
                {"anyOf": [_value(None, False), _anchored(unit)]},
                {"anyOf": [{"type": "integer"}, _anchored(unit)]}))
        elif f.name != "event_seq":
            enum, role = unit.enum_for(message, f.name) or f.enum, (message, f.name) in role_fields
            props[f.name] = _ref(f"match.{enum or 'integer'}{'.role' if role else ''}",
                                 lambda: _matcher(_value(enum, role)))
    return {"type": "object", "additionalProperties": False, "properties": props}


def _pattern(unit: UnitVocab) -> dict:
    return _ref(f"{unit.kind}.event-pattern", lambda: _pattern_of(unit))


def _pattern_of(unit: UnitVocab) -> dict:
    events = sorted(unit.events)
    return {"anyOf": [{"enum": events},
                      {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                       "properties": {e: _fields(unit, e) for e in events}}]}


def _expect_body(unit: UnitVocab, keys: set[str]) -> dict:
    metric = _matcher({"anyOf": [{"type": "integer"}, _EXPRESSION]})
    props = {
        "verdict": _fields(unit, unit.verdict),
        "verdicts": {"type": "array", "items": _fields(unit, unit.verdict)},
        "events": {"type": "array", "items": _pattern(unit)},
        "absent": {"type": "array", "items": _pattern(unit)},
        "count": {"type": "object", "additionalProperties": False,
                  "properties": {e: metric for e in sorted(unit.events)}},
        "latency": {"type": "object", "additionalProperties": False, "properties": {m: metric for m in LATENCY_METRICS}},
        "reaction": {"type": "object", "additionalProperties": False,
                     "properties": {k: metric for k in reaction_keys(unit)}},
        "rig": {"type": "object", "additionalProperties": False, "description": "the physical view, checked "
                "only through a rig (--rig URL): every value of each figure in a race",
                "properties": {k: metric for k in rig_figures(unit)}},
        "when": {"type": "string", "description": "a condition on sweep variables, e.g. 'd > 1000'"},
    }
    props = {k: v for k, v in props.items() if k in keys}
    return {"type": "object", "additionalProperties": False, "properties": props}


def _target(unit: UnitVocab) -> dict:
    names: list[dict] = [{"enum": list(unit.inputs)},
                         {"type": "string", "pattern": r"\{[^{}]*\}", "description": "an input name built from "
                          "expressions of sweep variables, race and rep: 'player_{rep}'"}]
    if unit.roles is not None:
        names.append({"enum": list(rl.role_words(unit.roles))})
    return {"anyOf": names}


def _step(unit: UnitVocab) -> dict:
    actions = {
        "press": _target(unit), "release": _target(unit),
        "hold": {"anyOf": [_target(unit), {"type": "array", "minItems": 1, "items": _target(unit)}]},
        "load": {"type": "integer", "minimum": 0, "maximum": 255},
        "unload": {"type": "integer", "minimum": 0, "maximum": 255},
        "door": {"enum": ["open", "close"]},
        "power": {"enum": ["on", "off", True, False]},
        "speed": {"enum": list(cat.ENUM_VALUES["flash_speed"])},
        "wait": _time(unit),
        "wait_for": _pattern(unit),
        "config": {"type": "object", "additionalProperties": False, "minProperties": 1,
                   "properties": {k: v for k, v in _params(unit).items() if k != "rng_seed"}},
        "physical": {**_switches(unit), "minProperties": 1},
    }
    common = {"at": _time(unit), "times": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 1000}, _EXPRESSION]},
              "every": _duration(), "for": _duration(), "expect": {"enum": ["acted", "reported", "refused"]},
              "error": {"enum": list(cat.ENUM_VALUES["error"])},
              "value": {"type": "integer", "minimum": 0, "maximum": 255},
              "until": _pattern(unit), "timeout": _duration(), "on_timeout": {"enum": ["fail", "continue"]},
              "prompt": {"type": "string", "minLength": 1,
                         "description": "wait_for: a wait for a person, shown this text (docs/scenarios.md)"}}
    assert set(common) == STEP_COMMON and set(actions) == set(STEP_ACTIONS)
    mine = [a for a in STEP_ACTIONS if a in unit.steps]
    return {"type": "object", "additionalProperties": False,
            "properties": {**{a: actions[a] for a in mine}, **common},
            "oneOf": [{"required": [a]} for a in mine],
            "description": f"one action of the {unit.kind} unit ({', '.join(mine)}), when, and what it expects"}


def _params(unit: UnitVocab) -> dict:
    return {p.name: {"type": "integer", "minimum": p.min, "maximum": p.max, "default": p.default,
                     "description": p.doc} for p in unit.params}


def _switches(unit: UnitVocab) -> dict:
    return {"type": "object", "additionalProperties": False,
            "properties": {s: {"enum": list(pos) + ([True, False] if {"on", "off"} <= set(pos) else [])}
                           for s, pos in unit.switches.items()}}


def _compare(unit: UnitVocab) -> dict:
    path = {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z_0-9]*(\[[0-9]+\])?\.[a-z_0-9]+$",
            "examples": ["verdict.loser", "verdicts[1].fired", f"{sorted(unit.events)[0]}.t_us"]}
    paths = {"anyOf": [path, {"type": "array", "minItems": 1, "items": path}]}
    props = {"same": paths, "differ": paths, "races": {"type": "array", "items": {"type": "integer", "minimum": 0}}}
    assert set(props) == COMPARE_KEYS
    return {"type": "array", "items": {"type": "object", "additionalProperties": False, "properties": props,
                                       "oneOf": [{"required": ["same"]}, {"required": ["differ"]}]}}


def _unit(unit: UnitVocab) -> dict:
    params = _params(unit)
    sweep_value = {"anyOf": [{"type": "array", "items": {"type": "integer"}},
                             {"type": "object", "additionalProperties": False, "required": ["from", "to", "step"],
                              "properties": {k: {"type": "integer"} for k in ("from", "to", "step")}}]}
    reserved = sorted(set(BUILTIN_ANCHORS) | set(unit.anchors) | {"race", "rep"})
    needs = list(unit.capabilities) + [f"no {c}" for c in unit.capabilities]
    props = {
        "name": {"type": "string", "minLength": 1},
        "unit": {"const": unit.kind},
        "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string", "examples": list(TAGS)}},
        "covers": {"type": "array", "uniqueItems": True, "items": {"enum": [d.id for d in unit.decisions]}},
        "seed": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": U32},
                           {"type": "object", "additionalProperties": False, "required": ["same"],
                            "properties": {"same": {"type": "integer", "minimum": 0, "maximum": U32}}}]},
        "compare": _compare(unit),
        "config": {"type": "object", "additionalProperties": False, "properties": params},
        "repeat": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
        "sweep": {"type": "object", "additionalProperties": sweep_value,
                  "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z_0-9]*$", "not": {"enum": reserved}}},
        "steps": {"type": "array", "minItems": 1, "items": _step(unit)},
        "expect": {**_expect_body(unit, EXPECT_KEYS), "minProperties": 1},
        "end": _time(unit),
        "timeout_us": {"type": "integer", "minimum": 1, "maximum": 3_600_000_000},
        "timing": {"enum": ["any", "exact"]},
        "needs": {"type": "array", "items": {"enum": needs}},
        "physical": _switches(unit),
    }
    props["expect"]["properties"]["cases"] = {"type": "array", "items": {
        **_expect_body(unit, CASE_KEYS), "required": ["when"]}}
    assert set(props) == TOP_KEYS
    return {"type": "object", "additionalProperties": False, "required": ["name", "unit", "steps", "expect"],
            "properties": props, "title": f"a {unit.kind} scenario"}


def scenario_schema() -> dict:
    """The schema of one YAML document of a scenario file: a scenario, or a list of them."""
    kinds = list(UNITS)
    _DEFS.clear()
    units = {k: _unit(u) for k, u in UNITS.items()}
    scenario = {"type": "object", "required": ["unit"], "properties": {"unit": {"enum": kinds}},
                "allOf": [{"if": {"properties": {"unit": {"const": k}}, "required": ["unit"]},
                           "then": {"$ref": f"#/definitions/{k}"}} for k in kinds]}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$id": SCHEMA_ID,
            "title": "unohil scenario file",
            "description": "One YAML document: a scenario or a list of scenarios (docs/scenarios.md). "
                           "Generated from the catalogue by `unohil schema`.",
            "definitions": {"scenario": scenario, **units, **dict(sorted(_DEFS.items()))},
            "anyOf": [{"$ref": "#/definitions/scenario"},
                      {"type": "array", "items": {"$ref": "#/definitions/scenario"}}]}
