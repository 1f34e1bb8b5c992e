"""One place per unit fact: each fact below is written once, and a second copy anywhere in the code fails
here, naming where. The catalogue (protocol/catalogue.py) holds the value -> name map of every enum and the
capability-bit test; harness/text.py the duration formatters; scenarios/validation/steps.py the step words."""
from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from unohil.protocol import catalogue as cat
from unohil.harness.scenarios import load
from unohil.harness.scenarios.units import STEPS, UNITS
from unohil.harness.scenarios.validation import steps

ROOT = Path(__file__).resolve().parent.parent
CODE = ("protocol", "emulator", "harness", "tools")


def _modules():
    for tree in CODE:
        for path in sorted((ROOT / tree).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            yield rel, text, ast.parse(text, rel)


MODULES = list(_modules())


def _reverse_enum_maps(tree: ast.AST) -> list[int]:
    """Lines of {v: k for k, v in <...ENUM_VALUES...>.items()} (or a unit's .inputs): a value -> name map of a
    catalogue enum."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.DictComp) and len(node.generators) == 1:
            gen = node.generators[0]
            target = gen.target
            swapped = (isinstance(target, ast.Tuple) and len(target.elts) == 2
                       and all(isinstance(x, ast.Name) for x in (*target.elts, node.key, node.value))
                       and (node.key.id, node.value.id) == (target.elts[1].id, target.elts[0].id))
            if swapped and re.search(r"ENUM_VALUES|ERR|\.inputs\b", ast.unparse(gen.iter)):
                out.append(node.lineno)
    return out


def test_reverse_enum_maps_come_from_the_catalogue():
    found = {rel: lines for rel, _, tree in MODULES if (lines := _reverse_enum_maps(tree))}
    assert not found, f"read cat.ENUM_NAMES[enum] (or cat.enum_name) instead of building the map again: {found}"
    # the one map is the reverse of the catalogue's values, for every enum
    for enum, values in cat.ENUM_VALUES.items():
        assert {v: k for k, v in values.items()} == cat.ENUM_NAMES[enum]


def test_the_check_sees_a_reverse_map():
    probe = ast.parse('NAMES = {v: k for k, v in cat.ENUM_VALUES["error"].items()}\n'
                      'INPUTS = {v: k for k, v in unit.inputs.items()}\n')
    assert _reverse_enum_maps(probe) == [1, 2]


def test_the_capability_bit_is_tested_in_one_place():
    shift = re.compile(r"caps\s*>>|>>\s*[\w.\[\]\"']*capability")
    found = [f"{rel}:{i}" for rel, text, _ in MODULES for i, line in enumerate(text.splitlines(), 1)
             if shift.search(line) and rel != "protocol/catalogue.py"]
    assert not found, f"use cat.has_capability(caps, name): {found}"


def _formats_durations(node: ast.FunctionDef) -> bool:
    """A function returning text that chooses between time units: it writes both '... ms' and '... us'."""
    if node.returns is None or ast.unparse(node.returns) != "str":
        return False
    tails = [part.value for j in ast.walk(node) if isinstance(j, ast.JoinedStr)
             for part in j.values if isinstance(part, ast.Constant) and isinstance(part.value, str)]
    return any(t.endswith(" ms") for t in tails) and any(t.endswith(" us") for t in tails)


def test_durations_are_written_by_one_module():
    formatters = sorted(f"{rel}:{node.name}" for rel, _, tree in MODULES for node in ast.walk(tree)
                        if isinstance(node, ast.FunctionDef) and _formats_durations(node))
    assert formatters and all(f.startswith("harness/text.py:") for f in formatters), (
        f"a duration for people is harness/text.py's duration (or clock_span): {formatters}")


def test_the_step_words_are_one_table():
    assert load.STEP_ACTIONS == tuple(steps.STEP_WORDS)
    assert steps.STIMULUS_ACTIONS == {w for w, (_, stimulus) in steps.STEP_WORDS.items() if stimulus}
    # each unit kind's words are words of the table, and every word is some kind's
    assert set(STEPS) == set(cat.UNITS) == set(UNITS)
    assert set().union(*STEPS.values()) == set(steps.STEP_WORDS)
    literal = [rel for rel, text, _ in MODULES
               if re.search(r'"load",\s*"unload",\s*"press",\s*"release",\s*"hold"', text)]
    assert not literal, f"the step words are scenarios/validation/steps.py's STEP_WORDS: {literal}"


# ---- the emulator's models: power-on state and capabilities are the catalogue's ----

#: what UnitModel reads from a kind's catalogue entry when a model class is defined (emulator/model.py)
CATALOGUE_FACTS = ("POWER_ON", "CAPS", "VARIANTS", "DRAWS")
DEVICE_KINDS = (*cat.UNITS, cat.RIG.kind)


def _model_modules():
    """emulator/<kind>.py of every device kind: the modules a model is written in."""
    return {kind: next((text, tree) for rel, text, tree in MODULES if rel == f"emulator/{kind}.py")
            for kind in DEVICE_KINDS}


def _written_facts(tree: ast.AST, where: str) -> list[str]:
    """What the UnitModel subclasses of a module write that their catalogue entry holds: an assignment to
    one of CATALOGUE_FACTS, or a capability's name."""
    capabilities = set(cat.ENUM_VALUES["capability"])
    models = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
              and any(isinstance(b, ast.Name) and b.id == "UnitModel" for b in c.bases)]
    assert models, f"{where}: no UnitModel subclass"
    found = []
    for model in models:
        found += [f"{where}:{n.lineno} {t.id}" for n in model.body if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name) and t.id in CATALOGUE_FACTS]
        found += [f"{where}:{n.lineno} {n.value!r}" for n in ast.walk(model)
                  if isinstance(n, ast.Constant) and n.value in capabilities]
    return found


def test_no_model_writes_a_fact_the_catalogue_holds():
    found = [f for kind, (_, tree) in _model_modules().items() for f in _written_facts(tree, f"emulator/{kind}.py")]
    assert not found, f"the kind's entry in messages.yaml holds these (UnitModel reads it): {found}"


def test_the_check_sees_a_model_that_writes_them():
    written = ("class Showdown(UnitModel):\n    POWER_ON = STATE.empty\n    CAPS = ('test_mode',)\n"
               "    def caps(self):\n        return self.CAPS + ('landing_sensor',)\n")
    assert [f.split(" ", 1)[1] for f in _written_facts(ast.parse(written), "probe")] == [
        "POWER_ON", "CAPS", "'test_mode'", "'landing_sensor'"]


@pytest.mark.parametrize("kind", DEVICE_KINDS)
def test_a_model_follows_its_catalogue_entry(kind, monkeypatch):
    from unohil.emulator.build import model_class
    from unohil.emulator.model import GENERATOR_CAP
    model = model_class(kind)
    entry = cat.UNITS.get(kind, cat.RIG)
    assert model.POWER_ON == model.STATES[entry.power_on_state]
    assert set(model.CAPS) | ({GENERATOR_CAP} if model.DRAWS else set()) == set(entry.capabilities)
    assert model.VARIANTS == getattr(entry, "variants", ())
    # another power-on state and one capability fewer in the catalogue: a model of the kind defined then follows
    other = next(s for s in model.STATES.__members__ if s != entry.power_on_state)
    changed = replace(entry, power_on_state=other, capabilities=entry.capabilities[1:])
    if kind in cat.UNITS:
        monkeypatch.setitem(cat.UNITS, kind, changed)
    else:
        monkeypatch.setattr("unohil.emulator.model.RIG", changed)
    follows = type("Follows", (model,), {})
    assert follows.POWER_ON == model.STATES[other] and entry.capabilities[0] not in follows.CAPS


def test_a_variant_option_sets_its_capability():
    from unohil.emulator.device import Device
    from unohil.emulator.clock import VirtualClock
    for kind, unit in cat.UNITS.items():
        for cap in unit.variants:
            for on in (0, 1):
                d = Device(kind, VirtualClock(), **{cap: on})
                d.start()
                assert cat.has_capability(d.caps, cap) == bool(on), (kind, cap, on)


# ---- unit kinds: the list is the catalogue's (cat.UNITS); a table by kind has a row for each ----

KINDS = set(cat.UNITS) | {cat.RIG.kind}
#: tables by kind that hold only some kinds, and why
PARTIAL_TABLES = {
    "harness/rig/races.py:FAIR_RACES": "a fairness race is two sides racing: a launcher has no sides",
}


def _kind_names(nodes) -> list[str] | None:
    names = [n.value for n in nodes if isinstance(n, ast.Constant)]
    return names if len(names) >= 2 and len(names) == len(nodes) and set(names) <= KINDS else None


def _kind_lists_and_tables(tree: ast.AST, rel: str) -> tuple[list[str], dict[str, set[str]]]:
    """The tuples, lists and sets of unit kind names a module writes (rel:line), and its dicts keyed by them
    (rel:NAME for an assigned one, else rel:line) with their keys."""
    named = {id(node.value): t.id for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)}
    lists, tables = [], {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and _kind_names(node.elts):
            lists.append(f"{rel}:{node.lineno}")
        if isinstance(node, ast.Dict) and None not in node.keys and (keys := _kind_names(node.keys)):
            tables[f"{rel}:{named.get(id(node), node.lineno)}"] = set(keys)
    return lists, tables


def test_the_list_of_unit_kinds_is_the_catalogues():
    lists = [at for rel, _, tree in MODULES for at in _kind_lists_and_tables(tree, rel)[0]]
    assert not lists, f"the unit kinds are tuple(cat.UNITS) (messages.yaml units:), not written again: {lists}"


def test_every_table_by_kind_has_a_row_for_each_kind():
    tables = {at: keys for rel, _, tree in MODULES for at, keys in _kind_lists_and_tables(tree, rel)[1].items()}
    short = {at: sorted(set(cat.UNITS) - keys) for at, keys in tables.items()
             if not set(cat.UNITS) <= keys and at not in PARTIAL_TABLES}
    assert not short, f"tables by unit kind without a row for some kinds of the catalogue: {short}"
    assert set(PARTIAL_TABLES) <= set(tables), "a partial table is gone: take it off PARTIAL_TABLES"


def test_the_check_sees_kind_lists_and_tables():
    probe = ast.parse('KINDS = ("showdown", "flash", "launcher")\nT = {"showdown": 1, "flash": 2}\n'
                      'choices = ["flash", "launcher"]\n')
    lists, tables = _kind_lists_and_tables(probe, "probe")
    assert lists == ["probe:1", "probe:3"] and tables == {"probe:T": {"showdown", "flash"}}
