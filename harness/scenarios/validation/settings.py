"""Configuration and switches: a scenario's parameters and switch positions, and a config or physical
step's changes to them, checked against the unit's cross-parameter rules."""
from __future__ import annotations

import yaml

from unohil.protocol import catalogue as cat

from unohil.harness.scenarios.units import UnitVocab
from unohil.harness.scenarios.validation.reader import CONSTRUCTOR, Validator, describe_node

def parameters(v: Validator, node: yaml.Node, unit: UnitVocab | None, key: str = "config",
            base: dict[str, int] | None = None) -> dict[str, int]:
    """Parameters of the unit and their values; base: the configuration they change (a config step's:
    the race's by then), against which the cross-parameter rules are checked."""
    out: dict[str, int] = {}
    entries = v.mapping(node, key)
    if isinstance(node, yaml.MappingNode) and not node.value and key != "config":
        v.err(node, key, "sets no parameter")
    for k, (kn, vn) in entries.items():
        p = cat.PARAMS_BY_NAME.get(k)
        if p is None:
            v.err(kn, f"{key}.{k}", f"unknown parameter; known: {', '.join(cat.PARAMS_BY_NAME)}")
            continue
        if unit is not None and unit.kind not in p.units:
            v.err(kn, f"{key}.{k}", f"not a parameter of the {unit.kind} unit")
            continue
        if k == "rng_seed" and key != "config":
            v.err(kn, f"{key}.{k}", "a race's seed is the scenario's 'seed'")
            continue
        val = v.integer(vn, f"{key}.{k}", p.min, p.max)
        if val is not None:
            out[k] = val
    if unit is not None:
        # SPEC 4.7's cross-parameter rules, over the values given and the defaults of the rest: a
        # unit refuses such a configuration, so it is the file's mistake, said before anything runs.
        values = unit.with_defaults({**(base or {}), **out})
        for rule in unit.cross_rules:
            if not rule.holds(values):
                given = [name for name in rule.params if name in out]
                where = entries[given[0]][0] if given else node
                now = ", ".join(f"{name} = {values[name]}" + ("" if name in out else " (before)" if name in
                                                              (base or {}) else " (default)")
                                for name in rule.params)
                v.err(where, f"{key}.{given[0]}" if given else key,
                      f"breaks the rule {rule.text} ({now}); the unit would refuse it")
    return out


def switch_positions(v: Validator, node: yaml.Node | None, unit: UnitVocab | None, key: str = "physical") -> dict[str, str]:
    """The position of every switch of the unit at the start of each race: the ones given, the rest
    where a booted unit has them (the catalogue's first position). A physical step's: the ones given."""
    if unit is None:
        return {}
    out = unit.boot_positions if key == "physical" else {}
    if node is None:
        return out
    base = key
    for name, (kn, vn) in v.mapping(node, base).items():
        key = f"{base}.{name}"
        if name not in unit.switches:
            v.err(kn, key, f"the {unit.kind} unit has no switch {name!r}; "
                           + (f"it has: {', '.join(unit.switches)}" if unit.switches else "it has none"))
            continue
        raw = CONSTRUCTOR.construct_object(vn) if isinstance(vn, yaml.ScalarNode) else None
        # YAML 1.1 reads a bare on/off as a boolean; here it is the position's name
        word = {True: "on", False: "off"}.get(raw, raw) if isinstance(raw, bool) else raw
        if word not in unit.switches[name]:
            v.err(vn, key, f"{describe_node(vn)} is not a position of the {name}; expected one of: "
                           f"{', '.join(unit.switches[name])}")
            continue
        out[name] = word
    return out


def step_config(v: Validator, node: yaml.Node, key: str, unit: UnitVocab, running: dict[str, int]) -> dict[str, int]:
    """A config step's parameters, checked like the scenario's config, against the configuration the
    race has by then (the cross-parameter rules hold for the values that result)."""
    before = len(v.problems)
    values = parameters(v, node, unit, key=key, base=running)
    if len(v.problems) == before:       # a refused change is not counted on: the next are checked without it
        running.update(values)
    return values


def step_switches(v: Validator, node: yaml.Node, key: str, unit: UnitVocab) -> dict[str, str]:
    out = switch_positions(v, node, unit, key=key)
    if not out and isinstance(node, yaml.MappingNode) and not node.value:
        v.err(node, key, "names no switch")
    return out
