"""Scenario files: YAML in, validated Scenario objects out.

Validation reads the YAML node tree (which keeps line and column of every key)
and reports every problem in a file, each as FILE:LINE:COL: key: message, before
anything runs. The format is documented in docs/scenarios.md. This module is the
top level (a file, its scenarios, the keys of one scenario); each section of a
scenario has its module in validation/ (composition, times, settings, steps,
expectations), the words of the language and the caps in validation/words.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from unohil.protocol import catalogue as cat

from unohil.harness.errors import Problem, ScenarioError
from unohil.harness.scenarios.model import Scenario, Step
from unohil.harness.scenarios.units import UNITS, UnitVocab
from unohil.harness.scenarios.validation.compose import check_size, compose_docs
from unohil.harness.scenarios.validation.expectations import comparisons, parse_expect, reaction_keys, rig_figures
from unohil.harness.scenarios.validation.reader import CONSTRUCTOR, Validator
from unohil.harness.scenarios.validation.settings import parameters, switch_positions
from unohil.harness.scenarios.validation.steps import (STEP_ACTIONS, buttons_pressed, parse_step, players_so_far,
                                                       starts_game)
from unohil.harness.scenarios.validation.times import (ahead_of_heard, lead_warning, parse_races, parse_seed,
                                                       per_race, time_spec)
from unohil.harness.scenarios.validation.words import (ALL_ANCHORS, BUILTIN_ANCHORS, CASE_KEYS, COMPARE_KEYS,
                                                       EXPECT_KEYS, LATENCY_METRICS, MAX_FILE_BYTES, STEP_COMMON,
                                                       TAG_FORM, TOP_KEYS)

__all__ = ["ALL_ANCHORS", "BUILTIN_ANCHORS", "CASE_KEYS", "COMPARE_KEYS", "EXPECT_KEYS", "LATENCY_METRICS",
           "STEP_ACTIONS", "STEP_COMMON", "TOP_KEYS", "ScenarioError", "discover", "load_file", "load_paths", "loads",
           "print_warnings", "reaction_keys", "rig_figures"]


def load_file(path: str | Path) -> list[Scenario]:
    """All scenarios of one file (a document, or a list of documents). Raises ScenarioError."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)     # no more than the cap, whatever the file's size
    except OSError as exc:
        raise ScenarioError([Problem(path, 1, 1, "", f"cannot read: {exc.strerror or exc}")]) from None
    check_size(len(data), path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScenarioError([Problem(path, line, col, "", f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be "
                                                          f"decoded ({exc.reason}); save the file as UTF-8")]) from None
    return loads(text, path)


def loads(text: str, file: str = "<string>") -> list[Scenario]:
    check_size(len(text.encode("utf-8", "surrogatepass")), file)
    try:
        return _validate(compose_docs(text, file), file)
    finally:
        # the shared constructor remembers every node it built: forget this file's
        CONSTRUCTOR.constructed_objects.clear()
        CONSTRUCTOR.recursive_objects.clear()


def _validate(docs: list[yaml.Node], file: str) -> list[Scenario]:
    v = Validator(file)
    scenarios: list[Scenario] = []
    nodes: list[yaml.Node] = []
    for doc in docs:
        if isinstance(doc, yaml.SequenceNode):
            nodes.extend(doc.value)
        else:
            nodes.append(doc)
    if not nodes:
        v.err(None, "", "no scenario in file")
    names: dict[str, int] = {}
    for node in nodes:
        sc = _scenario(v, node)
        if sc is not None:
            if sc.name in names:
                v.err(node, "name", f"{sc.name!r} is already the name of the scenario at line {names[sc.name]}")
            names[sc.name] = sc.line
            scenarios.append(sc)
    if v.problems:
        raise ScenarioError(v.problems)
    return scenarios


def _scenario(v: Validator, node: yaml.Node) -> Scenario | None:
    before, warned = len(v.problems), len(v.warnings)
    v.values.clear()            # one scenario's races at a time
    top = v.mapping(node, "", TOP_KEYS)
    if not top and not isinstance(node, yaml.MappingNode):
        return None
    for req in ("name", "unit", "steps", "expect"):
        if req not in top:
            v.err(node, req, "required key is missing" + (
                ": a scenario with no expectation would pass whatever the device did" if req == "expect" else ""))
    name = v.text(top["name"][1], "name") if "name" in top else None
    unit_name = v.text(top["unit"][1], "unit") if "unit" in top else None
    unit = UNITS.get(unit_name) if unit_name else None
    if unit_name and unit is None:
        v.err(top["unit"][1], "unit", f"unknown unit {unit_name!r}; expected one of: {', '.join(UNITS)}")
    tags = _tags(v, top["tags"][1]) if "tags" in top else []
    covers = _covers(v, top["covers"][1], unit) if "covers" in top and unit is not None else ()
    description = v.text(top["description"][1], "description") if "description" in top else ""
    seed, seed_same = parse_seed(v, top["seed"][1]) if "seed" in top else (None, False)
    timeout_us = v.integer(top["timeout_us"][1], "timeout_us", 1, 3_600_000_000) if "timeout_us" in top else None
    config = parameters(v, top["config"][1], unit) if "config" in top else {}
    physical = switch_positions(v, top["physical"][1] if "physical" in top else None, unit)
    needs = _needs(v, top["needs"][1], unit) if "needs" in top and unit is not None else []
    timing = v.text(top["timing"][1], "timing") if "timing" in top else "any"
    if timing not in (None, "any", "exact"):
        v.err(top["timing"][1], "timing", "must be 'exact' (needs test mode) or 'any'")
    races = parse_races(v, top)
    variables = set(races[0]) if races else set()
    v.sweep, v.variables = races, variables       # for expectations that count from anchors
    steps, ahead = _steps(v, top["steps"][1] if "steps" in top else None, unit, races, config)
    compare = tuple(comparisons(v, top["compare"][1], unit, races)) if "compare" in top and unit else ()
    expectations = parse_expect(v, top["expect"][1], unit, variables, races) if "expect" in top else []
    end = time_spec(v, top["end"][1], "end", unit, variables, races) if "end" in top else None
    if end is not None:
        ahead_of_heard(v, top["end"][1], "end", end, races, ahead)
    if len(v.problems) > before or unit is None or name is None:
        return None
    return Scenario(name=name, file=v.file, line=node.start_mark.line + 1, unit=unit.kind, tags=tuple(tags),
                    seed=seed, config=config, races=races, steps=steps, expectations=expectations, end=end,
                    timeout_us=timeout_us, description=description or "",
                    timing=timing or "any", needs=tuple(needs), physical=physical,
                    covers=covers, seed_same=seed_same, compare=compare, warnings=tuple(v.warnings[warned:]))


def _tags(v: Validator, node: yaml.Node) -> list[str]:
    tags: list[str] = []
    for t in v.seq(node, "tags"):
        s = v.text(t, "tags")
        if s is not None and not TAG_FORM.fullmatch(s):     # free tags are allowed; TAGS are the documented ones
            v.err(t, "tags", f"tag {s!r}: a tag is letters, digits, '-' and '_', starting with a letter or digit")
        elif s is not None:
            tags.append(s)
    return tags


def _needs(v: Validator, node: yaml.Node, unit: UnitVocab) -> list[str]:
    """The capabilities a scenario needs of its unit (CAP), or needs it without ('no CAP')."""
    needs: list[str] = []
    for n in v.seq(node, "needs"):
        cap = v.text(n, "needs")
        bare = cap[len("no "):] if cap is not None and cap.startswith("no ") else cap
        if cap is not None and bare not in unit.capabilities:
            v.err(n, "needs", f"{bare!r} is not a capability of the {unit.kind} unit (write CAP, or 'no CAP' "
                              f"for a unit without it); it has: {', '.join(unit.capabilities)}")
        elif cap is not None:
            needs.append(cap)
    return needs


def _steps(v: Validator, node: yaml.Node | None, unit: UnitVocab | None, races: list[dict[str, int]],
           config: dict[str, int]) -> tuple[list[Step], list[int]]:
    """The scenario's steps, and per race how far ahead of what the runner last heard the last of them
    is (for the end's check). Leaves v.players at the players the steps can have registered."""
    variables = set(races[0]) if races else set()
    ahead = [0] * len(races)    # per race: how far ahead of what the runner last heard the previous step is
    heard_event = False         # whether what the runner last heard is an event (not the start it chose)
    steps: list[Step] = []
    pressed: set[str] = set()   # the player buttons the steps so far press by name
    running = dict(config)      # the configuration in force after the steps so far (config steps change it)
    step_nodes = v.seq(node, "steps") if node is not None else []
    if node is not None and not step_nodes and isinstance(node, yaml.SequenceNode):
        v.err(node, "steps", "must not be empty")
    started = False             # whether a step before this one starts a game (roles need one)
    for i, sn in enumerate(step_nodes):
        v.players = players_so_far(pressed, unit)
        st = parse_step(v, sn, f"steps[{i}]", unit, variables, races, started, running)
        if st is None:
            continue
        steps.append(st)
        started = started or starts_game(st, unit)
        pressed |= buttons_pressed(st, unit, races)
        if st.at.anchor not in ("previous", "start") or st.roles:
            heard_event = True          # the runner schedules it once it has heard its anchor
        elif st.at.anchor == "start":
            heard_event = False
        if steps[-2:-1] and steps[-2].action in ("wait_for", "config") and st.at.anchor == "previous" \
                and st.action not in ("wait", "wait_for") and 0 in per_race(v, st.at.offset, races):
            v.err(sn, f"steps[{i}].at", f"comes at the time of the {steps[-2].action} step before it, when "
                                        f"the runner has only just heard the unit: give it time "
                                        f"('previous + 1000')")
        lead_warning(v, sn, f"steps[{i}]", st, races, ahead, heard_event)
        ahead = ahead_of_heard(v, sn, f"steps[{i}]", st.at, races, ahead, st.every, per_race(v, st.times, races),
                               st.hold_for)
        if st.action in ("wait_for", "config"):
            # the runner has heard the unit up to the step's time (the event, or it waited to send it)
            ahead, heard_event = [0] * len(races), True
    v.players = players_so_far(pressed, unit)
    return steps, ahead


def _covers(v: Validator, node: yaml.Node, unit: UnitVocab) -> tuple[str, ...]:
    """The SPEC decision ids (protocol/decisions.yaml) a scenario exercises: its unit kind's only."""
    mine = [d.id for d in unit.decisions]
    out: list[str] = []
    for n in v.seq(node, "covers"):
        did = v.text(n, "covers")
        if did is None:
            continue
        other = cat.DECISIONS.get(did)
        if did in out:
            v.err(n, "covers", f"{did} named twice")
        elif did not in mine:
            v.err(n, "covers", (f"{did} is a decision of the {other.unit} unit" if other else
                                f"unknown decision id {did!r}") + f"; the {unit.kind} unit's are: {', '.join(mine)}")
        else:
            out.append(did)
    return tuple(out)


def discover(paths: list[str]) -> list[Path]:
    """YAML files under the given files/directories, sorted; missing paths are errors."""
    out: list[Path] = []
    problems: list[Problem] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(x for x in path.rglob("*") if x.suffix in (".yaml", ".yml") and x.is_file()))
        elif path.is_file():
            out.append(path)
        else:
            problems.append(Problem.whole_file(str(p), "no such file or directory"))
    if problems:
        raise ScenarioError(problems)
    return out


def load_paths(paths: list[str]) -> list[Scenario]:
    """Every scenario under paths; all problems of all files in one ScenarioError."""
    problems: list[Problem] = []
    scenarios: list[Scenario] = []
    for f in discover(paths):
        try:
            scenarios.extend(load_file(f))
        except ScenarioError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ScenarioError(problems)
    return scenarios


def print_warnings(scenarios: list[Scenario], stream=None) -> None:
    """The validation warnings of the scenarios (unohil validate and run say them; they stop nothing)."""
    for sc in scenarios:
        for w in sc.warnings:
            print(w, file=stream or sys.stderr)
