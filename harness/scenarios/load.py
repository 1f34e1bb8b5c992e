"""Scenario files: YAML in, validated Scenario objects out.

Validation reads the YAML node tree (which keeps line and column of every key)
and reports every problem in a file, each as FILE:LINE:COL: key: message, before
anything runs. The format is documented in docs/scenarios.md.
"""
from __future__ import annotations

import ast
import itertools
import keyword
import math
import re
from pathlib import Path
from typing import Any

import yaml

from unohil.protocol import catalogue as cat, devtime

from unohil.harness.errors import Problem, ScenarioError
from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.model import (REP, UNIT_PLAYERS, Comparison, EventPattern, Expectation, Matcher,
    NameTemplate, RoleMatcher, Scenario, Step, TimeMatcher, TimeSpec)
from unohil.harness.scenarios.units import RIG_ANCHORS, UNITS, UnitVocab

BUILTIN_ANCHORS = ("start", "previous")
#: Every anchor of every unit kind: a sweep variable named like one would rebind it (in some file,
#: if not this one), so no sweep variable may take such a name.
ALL_ANCHORS = frozenset(BUILTIN_ANCHORS).union(*(u.anchors for u in cat.UNITS.values()), *RIG_ANCHORS.values())
#: Other names the language gives a meaning: the race index, "next green", the functions, Python's keywords.
RESERVED_NAMES = frozenset({"race", "rep", "next", "abs", "max", "min", UNIT_PLAYERS}) | frozenset(keyword.kwlist)
#: The fewest Player buttons a base has (SPEC 8, 4.2: IDENTITY.players 2 to 8): the value unit_players is
#: validated with; on a base where the name is no input, the runner skips the race, saying so.
FEWEST_PLAYERS = 2


# Caps: validation does work bounded by these, each checked before the work it bounds (docs/scenarios.md).
MAX_FILE_BYTES = 1_000_000          # a scenario file; the library's largest is 12 kB
MAX_NESTING = 100                   # YAML levels (a scenario needs 6); the composer recurses per level
MAX_NODES = 200_000                 # YAML nodes of a file, an alias counted at each use
MAX_EXPR_CHARS = 500                # the text of one time or condition
MAX_RACES = 10_000                  # races of one scenario: sweep values multiplied, times repeat
MAX_FILE_RACES = 100_000            # races of all the scenarios of one file
MAX_EVALUATIONS = 3_000_000         # expression nodes evaluated for one file (about 1 s): each time,
                                    #   every, for and when, its size times the races it is worked out for
MAX_TIMES = 1000                    # repetitions of one step (times)
#: The furthest ahead a race may schedule: the device clock is a u32 us counter (protocol/devtime.py) and
#: an INJECT 2^31 us (35 min 47 s) or more ahead of the unit's now cannot be told from one in the past (SPEC
#: 3.2); 30 min leaves the rest for the harness to get the stimulus there.
MAX_AHEAD_US = 30 * 60 * 1_000_000


LATENCY_METRICS = ("device_us", "inherent_us", "processing_us", "host_us", "host_processing_us")
TAG_FORM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")     # a word that -k and -m (as a hil_ marker) can name
TOP_KEYS = {"name", "unit", "description", "tags", "covers", "seed", "config", "repeat", "sweep", "steps",
            "expect", "end", "timeout_us", "timing", "needs", "physical", "compare"}
STEP_COMMON = {"at", "times", "every", "expect", "error", "value", "for", "until", "timeout", "on_timeout", "prompt"}
#: The step words (docs/scenarios.md, Steps): stimuli, waits, and changes of configuration and switches.
STEP_ACTIONS = ("load", "unload", "press", "release", "hold", "speed", "power", "door", "wait", "wait_for",
                "config", "physical")
#: The steps that give the unit a stimulus (and so may repeat it until an event).
STIMULUS_ACTIONS = frozenset(STEP_ACTIONS) - {"wait", "wait_for", "config"}
COMPARE_KEYS = {"same", "differ", "races"}
EXPECT_KEYS = {"verdict", "verdicts", "events", "absent", "count", "latency", "reaction", "rig", "cases"}
CASE_KEYS = EXPECT_KEYS - {"cases"} | {"when"}
EDGE_WORDS = {"open": "press", "close": "release", "on": "press", "off": "release"}


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_INT_TAG = "tag:yaml.org,2002:int"
_TOO_DEEP = f"nested more than {MAX_NESTING} levels deep (MAX_NESTING)"


class _PureSafeLoader(yaml.SafeLoader):
    """The pure-Python loader (a PyYAML without libyaml): its composer recurses once per level, so
    it stops at MAX_NESTING levels, long before Python's recursion limit. (libyaml stops at 1000.)"""

    _depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise yaml.composer.ComposerError(None, None, _TOO_DEEP, self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


# libyaml composes several times faster than the pure-Python parser, with the same line marks
# (protocol/schema.py loads the catalogue the same way)
_LOADER = getattr(yaml, "CSafeLoader", _PureSafeLoader)


class _Validator:
    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []       # said, but the file is valid (a lead a real link cannot honour)
        self.races = 0              # races of the file's scenarios so far (MAX_FILE_RACES)
        self.evaluations = 0        # expression nodes evaluated so far (MAX_EVALUATIONS)
        self.over_budget = False    # said once: the file asks for more than MAX_EVALUATIONS
        # id of an expression tree -> (the tree, kept so that its id stays its own; its value in each race)
        self.values: dict[int, tuple] = {}
        # the players a scenario's steps can have registered so far (buttons pressed), None if none: a role
        # beyond them names a player no game of the scenario has
        self.players: list[str] | None = None
        self.sweep: list[dict[str, int]] = []     # the races of the scenario being validated
        self.variables: set[str] = set()

    def err(self, node: yaml.Node | None, key: str, message: str) -> None:
        line, col = (node.start_mark.line + 1, node.start_mark.column + 1) if node is not None else (1, 1)
        self.problems.append(Problem(self.file, line, col, key, message))

    def warn(self, node: yaml.Node, key: str, message: str) -> None:
        self.warnings.append(Problem(self.file, node.start_mark.line + 1, node.start_mark.column + 1, key,
                                     f"warning: {message}"))

    # -- node helpers --

    def mapping(self, node: yaml.Node, key: str, allowed: set[str] | None = None) -> dict[str, tuple]:
        if not isinstance(node, yaml.MappingNode):
            self.err(node, key, f"must be a mapping, not {_what(node)}")
            return {}
        out: dict[str, tuple] = {}
        for k, v in node.value:
            name = _CONSTRUCTOR.construct_object(k) if isinstance(k, yaml.ScalarNode) else None
            if not isinstance(name, str):
                self.err(k, key, f"keys must be names, not {_what(k)}")
                continue
            if name in out:
                self.err(k, f"{key}.{name}" if key else name, "duplicate key")
                continue
            if allowed is not None and name not in allowed:
                self.err(k, f"{key}.{name}" if key else name,
                         f"unknown key; expected one of: {', '.join(sorted(allowed))}")
                continue
            out[name] = (k, v)
        return out

    def seq(self, node: yaml.Node, key: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            self.err(node, key, f"must be a list, not {_what(node)}")
            return []
        return list(node.value)

    def value(self, node: yaml.Node, key: str, types: tuple, what: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.err(node, key, f"must be {what}, not {_what(node)}")
            return None
        v = _CONSTRUCTOR.construct_object(node)
        if isinstance(v, bool) and bool not in types or not isinstance(v, types):
            self.err(node, key, f"must be {what}, not {v!r}")
            return None
        return v

    def integer(self, node: yaml.Node, key: str, lo: int | None = None, hi: int | None = None) -> int | None:
        v = self.value(node, key, (int,), "an integer")
        if v is None:
            return None
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            self.err(node, key, f"{v} is out of range [{lo}, {hi}]")
            return None
        return v

    def text(self, node: yaml.Node, key: str) -> str | None:
        return self.value(node, key, (str,), "text")


def _what(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(_CONSTRUCTOR.construct_object(node))


def load_file(path: str | Path) -> list[Scenario]:
    """All scenarios of one file (a document, or a list of documents). Raises ScenarioError."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)     # no more than the cap, whatever the file's size
    except OSError as exc:
        raise ScenarioError([Problem(path, 1, 1, "", f"cannot read: {exc.strerror or exc}")]) from None
    _check_size(len(data), path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScenarioError([Problem(path, line, col, "", f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be "
                                                          f"decoded ({exc.reason}); save the file as UTF-8")]) from None
    return loads(text, path)


def _check_size(size: int, file: str) -> None:
    if size > MAX_FILE_BYTES:
        raise ScenarioError([Problem(file, 1, 1, "", f"larger than {MAX_FILE_BYTES} bytes, the most a scenario "
                                                     f"file may hold (MAX_FILE_BYTES); split it")])


def _compose(text: str, file: str) -> list[yaml.Node]:
    """The file's documents as node trees, or a ScenarioError at the place YAML stops making sense."""
    try:
        docs = list(yaml.compose_all(text, Loader=_LOADER))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or str(exc)
        if problem in (_TOO_DEEP, "exceeded maximum nesting depth"):     # ours, or libyaml's at 1000 levels
            raise ScenarioError([Problem(file, line, col, "", _TOO_DEEP)]) from None
        raise ScenarioError([Problem(file, line, col, "", f"malformed YAML: {problem}")]) from None
    except yaml.reader.ReaderError as exc:     # a character YAML does not allow (a NUL, a control code)
        before = text[:exc.position]
        line, col = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        raise ScenarioError([Problem(file, line, col, "", f"malformed YAML: the character {char} is not allowed "
                                                          f"in YAML text")]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([Problem(file, 1, 1, "", f"malformed YAML: {exc}")]) from None
    except RecursionError:      # a last resort: both loaders stop at their nesting limit first
        raise ScenarioError([Problem(file, 1, 1, "", _TOO_DEEP)]) from None
    docs = [d for d in docs if d is not None]
    _check_shape(docs, file)
    return docs


def _check_shape(docs: list[yaml.Node], file: str) -> None:
    """Refuse, before anything reads it, a tree nested more than MAX_NESTING deep, one of more than
    MAX_NODES nodes (aliases counted at each use: what the validator would walk), and an integer
    Python will not convert (over 4,300 digits)."""
    problems: list[Problem] = []
    stack = [(d, 1) for d in docs]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        where = (file, node.start_mark.line + 1, node.start_mark.column + 1, "")
        if seen > MAX_NODES:
            raise ScenarioError([Problem(*where, f"more than {MAX_NODES} YAML nodes (an alias counts at each "
                                                 f"use), the most a scenario file may hold (MAX_NODES); split it")])
        if depth > MAX_NESTING:
            raise ScenarioError([Problem(*where, _TOO_DEEP)])
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _INT_TAG:
                try:
                    _CONSTRUCTOR.construct_yaml_int(node)
                except ValueError:
                    problems.append(Problem(*where, f"an integer of {len(node.value)} characters; no number a "
                                                    f"scenario needs has more than 20 digits"))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((x, depth + 1) for x in node.value)
        else:
            stack.extend((x, depth + 1) for kv in node.value for x in kv)
    if problems:
        raise ScenarioError(problems)


def loads(text: str, file: str = "<string>") -> list[Scenario]:
    _check_size(len(text.encode("utf-8", "surrogatepass")), file)
    try:
        return _validate(_compose(text, file), file)
    finally:
        # the shared constructor remembers every node it built: forget this file's
        _CONSTRUCTOR.constructed_objects.clear()
        _CONSTRUCTOR.recursive_objects.clear()


def _validate(docs: list[yaml.Node], file: str) -> list[Scenario]:
    v = _Validator(file)
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


def _scenario(v: _Validator, node: yaml.Node) -> Scenario | None:
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
    tags: list[str] = []
    if "tags" in top:
        for t in v.seq(top["tags"][1], "tags"):
            s = v.text(t, "tags")
            if s is not None and not TAG_FORM.fullmatch(s):     # free tags are allowed; TAGS are the documented ones
                v.err(t, "tags", f"tag {s!r}: a tag is letters, digits, '-' and '_', starting with a letter or digit")
            elif s is not None:
                tags.append(s)
    covers = _covers(v, top["covers"][1], unit) if "covers" in top and unit is not None else ()
    description = v.text(top["description"][1], "description") if "description" in top else ""
    seed, seed_same = _seed(v, top["seed"][1]) if "seed" in top else (None, False)
    timeout_us = v.integer(top["timeout_us"][1], "timeout_us", 1, 3_600_000_000) if "timeout_us" in top else None
    config = _config(v, top["config"][1], unit) if "config" in top else {}
    physical = _physical(v, top["physical"][1] if "physical" in top else None, unit)
    needs: list[str] = []
    if "needs" in top and unit is not None:
        for n in v.seq(top["needs"][1], "needs"):
            cap = v.text(n, "needs")
            bare = cap[len("no "):] if cap is not None and cap.startswith("no ") else cap
            if cap is not None and bare not in unit.capabilities:
                v.err(n, "needs", f"{bare!r} is not a capability of the {unit.kind} unit (write CAP, or 'no CAP' "
                                  f"for a unit without it); it has: {', '.join(unit.capabilities)}")
            elif cap is not None:
                needs.append(cap)
    timing = v.text(top["timing"][1], "timing") if "timing" in top else "any"
    if timing not in (None, "any", "exact"):
        v.err(top["timing"][1], "timing", "must be 'exact' (needs test mode) or 'any'")
    races = _races(v, top)
    variables = set(races[0]) if races else set()
    v.sweep, v.variables = races, variables       # for expectations that count from anchors
    ahead = [0] * len(races)    # per race: how far ahead of what the runner last heard the previous step is
    heard_event = False         # whether what the runner last heard is an event (not the start it chose)
    steps: list[Step] = []
    pressed: set[str] = set()   # the player buttons the steps so far press by name
    running = dict(config)      # the configuration in force after the steps so far (config steps change it)
    if "steps" in top:
        step_nodes = v.seq(top["steps"][1], "steps")
        if not step_nodes and isinstance(top["steps"][1], yaml.SequenceNode):
            v.err(top["steps"][1], "steps", "must not be empty")
        started = False         # whether a step before this one starts a game (roles need one)
        for i, sn in enumerate(step_nodes):
            v.players = _players(pressed, unit)
            st = _step(v, sn, f"steps[{i}]", unit, variables, races, started, running)
            if st is not None:
                steps.append(st)
                started = started or _starts_game(st, unit)
                pressed |= _buttons_pressed(st, unit, races)
                if st.at.anchor not in ("previous", "start") or st.roles:
                    heard_event = True          # the runner schedules it once it has heard its anchor
                elif st.at.anchor == "start":
                    heard_event = False
                if steps[-2:-1] and steps[-2].action in ("wait_for", "config") and st.at.anchor == "previous" \
                        and st.action not in ("wait", "wait_for") and 0 in _offsets(v, st.at.offset, races):
                    v.err(sn, f"steps[{i}].at", f"comes at the time of the {steps[-2].action} step before it, when "
                                                f"the runner has only just heard the unit: give it time "
                                                f"('previous + 1000')")
                _lead_warning(v, sn, f"steps[{i}]", st, races, ahead, heard_event)
                ahead = _ahead(v, sn, f"steps[{i}]", st.at, races, ahead, st.every, _offsets(v, st.times, races),
                               st.hold_for)
                if st.action in ("wait_for", "config"):
                    # the runner has heard the unit up to the step's time (the event, or it waited to send it)
                    ahead, heard_event = [0] * len(races), True
    v.players = _players(pressed, unit)
    compare = tuple(_comparisons(v, top["compare"][1], unit, races)) if "compare" in top and unit else ()
    expectations = _expect(v, top["expect"][1], unit, variables, races) if "expect" in top else []
    end = _time(v, top["end"][1], "end", unit, variables, races) if "end" in top else None
    if end is not None:
        _ahead(v, top["end"][1], "end", end, races, ahead)
    if len(v.problems) > before or unit is None or name is None:
        return None
    return Scenario(name=name, file=v.file, line=node.start_mark.line + 1, unit=unit.kind, tags=tuple(tags),
                    seed=seed, config=config, races=races, steps=steps, expectations=expectations, end=end,
                    timeout_us=timeout_us, description=description or "",
                    timing=timing or "any", needs=tuple(needs), physical=physical,
                    covers=covers, seed_same=seed_same, compare=compare, warnings=tuple(v.warnings[warned:]))


def _covers(v: _Validator, node: yaml.Node, unit: UnitVocab) -> tuple[str, ...]:
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


def _config(v: _Validator, node: yaml.Node, unit: UnitVocab | None, key: str = "config",
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


def _physical(v: _Validator, node: yaml.Node | None, unit: UnitVocab | None, key: str = "physical") -> dict[str, str]:
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
        raw = _CONSTRUCTOR.construct_object(vn) if isinstance(vn, yaml.ScalarNode) else None
        # YAML 1.1 reads a bare on/off as a boolean; here it is the position's name
        word = {True: "on", False: "off"}.get(raw, raw) if isinstance(raw, bool) else raw
        if word not in unit.switches[name]:
            v.err(vn, key, f"{_what(vn)} is not a position of the {name}; expected one of: "
                           f"{', '.join(unit.switches[name])}")
            continue
        out[name] = word
    return out


def _races(v: _Validator, top: dict) -> list[dict[str, int]]:
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


def _time(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
          races: list[dict[str, int]]) -> TimeSpec | None:
    if not isinstance(node, yaml.ScalarNode):
        v.err(node, key, f"must be a time such as 'green + 180000' or 250000, not {_what(node)}")
        return None
    raw = _CONSTRUCTOR.construct_object(node)
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
    worked = _worked_out(v, node, key, offset_text.strip() or "0", text, variables, races)
    if worked is None:
        return None
    tree, values = worked
    for env, off in zip(races, values):
        if not isinstance(off, int) or isinstance(off, bool):
            v.err(node, key, f"{text!r} is not a time")
            return None
        if off < 0:
            v.err(node, key, f"{text!r} is {off} us, before its anchor {anchor!r} (with {_env_text(env)})")
            return None
    return TimeSpec(anchor, tree, ("next " if is_next else "") + text, is_next)


def _worked_out(v: _Validator, node: yaml.Node, key: str, source: str, text: str, variables: set[str],
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
    values = _values(v, node, key, tree, text, races)
    return None if values is None else (tree, values)


def _values(v: _Validator, node: yaml.Node, key: str, tree, text: str, races: list[dict[str, int]]) -> list | None:
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


def _offsets(v: _Validator, tree, races: list[dict[str, int]]) -> list[int]:
    """The value in each race of an expression _values worked out (a default, such as 0, otherwise)."""
    if id(tree) not in v.values:
        v.values[id(tree)] = (tree, [expr.evaluate(tree, races[0] if races else {})] * len(races))
    return v.values[id(tree)][1]


def _sweep_text(races: list[dict[str, int]]) -> str:
    """The values each sweep variable takes over the races: 'd = 0, 100, 200; race = 0 to 2'."""
    out = []
    for name in races[0] if races else ():
        if name == "race":
            continue
        seen = list(dict.fromkeys(env[name] for env in races))
        shown = ", ".join(map(str, seen)) if len(seen) <= 8 else \
            f"{', '.join(map(str, seen[:3]))}, ... {seen[-1]} ({len(seen)} values, {min(seen)} to {max(seen)})"
        out.append(f"{name} = {shown}")
    return "; ".join(out + [f"race = 0 to {len(races) - 1}"]) if races else "no races"


def _env_text(env: dict) -> str:
    return ", ".join(f"{k}={val}" for k, val in env.items() if k != "race") or "no sweep"


def _buttons_pressed(st: Step, unit: UnitVocab | None, races: list[dict[str, int]]) -> set[str]:
    """The player buttons a step presses by name (registrations, with a unit whose game has roles); a
    name built from expressions counts with the buttons it names in every race."""
    if unit is None or unit.roles is None or st.roles or st.action not in ("press", "hold"):
        return set()
    named = {b for b in unit.roles.buttons if (st.action == "press" and st.input == unit.inputs[b])
             or (st.action == "hold" and st.value >> unit.inputs[b] & 1)}
    if st.names:
        everywhere = None
        for env in races:
            # a name from the unit's own count is known at run time only: it registers no one known here
            mine = {t.name(env | {REP: k}) for t in st.names if UNIT_PLAYERS not in t.names()
                    for k in range(st.count(env))}
            everywhere = mine if everywhere is None else everywhere & mine
        named |= (everywhere or set()) & set(unit.roles.buttons)
    return named


def _players(pressed: set[str], unit: UnitVocab | None) -> list[str] | None:
    """The players the steps so far can have registered, in button order; None if none."""
    if unit is None or unit.roles is None:
        return None
    return [b for b in unit.roles.buttons if b in pressed] or None


def _ahead(v: _Validator, node: yaml.Node, key: str, at: TimeSpec, races: list[dict[str, int]], previous: list[int],
           every=None, counts: list[int] | None = None, hold=None) -> list[int]:
    """How far ahead of what the runner last heard from the unit (the race's start or the step's event
    anchor, or through 'previous' the step before's) each race puts this step's last repetition. The
    runner sends a stimulus once it knows its anchor, so every time, repetition and hold counted from
    there must fit the device clock: at most MAX_AHEAD_US, in every race of the sweep."""
    offsets = _offsets(v, at.offset, races)
    spacing = _offsets(v, every, races) if every is not None else [0] * len(races)
    holds = _offsets(v, hold, races) if hold is not None else [0] * len(races)
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
            sweep = f" (with {_env_text(env)})" if len(races) > 1 else ""
            v.err(node, key, f"{at.text!r}{' repeated' if times > 1 else ''}{' and held' if hold is not None else ''} "
                             f"reaches {_duration(furthest)} ({furthest} us) after {origin}{sweep}; the device clock "
                             f"(a u32 us counter that wraps every {_duration(devtime.WRAP)}) lets a race schedule at "
                             f"most {_duration(MAX_AHEAD_US)} ahead (MAX_AHEAD_US)")
            return [0] * len(races)     # said once; the steps after it are checked from scratch
        out.append(last)
    return out


def _duration(us: int) -> str:
    """A span of microseconds in human units: '30 min', '1 h 6 min 40 s', '35 min 47.483648 s'."""
    s, micro = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    sec = f"{s}.{micro:06d}".rstrip("0") if micro else str(s)
    parts = ([f"{h} h"] if h else []) + ([f"{m} min"] if m else []) + ([f"{sec} s"] if s or micro else [])
    return " ".join(parts) or "0 s"


def _starts_game(step: Step, unit: UnitVocab | None) -> bool:
    if unit is None or unit.roles is None:
        return False
    start = unit.inputs[unit.roles.started_by]
    return (step.action == "press" and step.input == start) or (step.action == "hold" and step.value >> start & 1)


def _role_step(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab, at: TimeSpec, races: list[dict[str, int]],
               started: bool) -> None:
    """A step that presses by role: a role names a player of a game, so a game must have started
    before the step's anchor; and who that is is known only from what the unit reported up to the
    anchor time, so the step must come after it."""
    start = unit.roles.started_by
    if not started:
        v.err(node, key, f"names a role before any step starts a game (a press of {start}): before the "
                         f"unit's first selection nobody is current and there are no opponents")
    elif at.anchor == "start":
        v.err(node, key, "names a role but is timed from 'start', before the game: time it from the steps "
                         "before it (previous) or from an event of the game")
    elif any(x == 0 for x in _offsets(v, at.offset, races)):
        v.err(node, key, f"names a role at its anchor's own time ({at.text!r}): the runner learns who plays "
                         f"from what the unit reported up to that time, so the step must come at least 1 us "
                         f"after it; anchor it on an earlier event (e.g. the buzzer) or give it time")


def _press_target(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
                  races: list[dict[str, int]], counts: list[int]) -> tuple[int | None, str | None, NameTemplate | None]:
    """(input, role, name template) of a press/release/hold name: an input of the unit, a role of a
    unit with roles, or a name built from expressions ('player_{i}'), an input in every race and
    repetition."""
    name = v.text(node, key)
    if name is None or unit is None:
        return None, None, None
    if "{" in name or "}" in name:
        return None, None, _template(v, node, key, name, unit, variables, races, counts)
    if name in unit.inputs:
        return unit.inputs[name], None, None
    if unit.roles is not None and rl.looks_like_role(name):
        problem = rl.role_problem(name, unit.roles, mask=False, players=v.players)
        if problem is not None:
            v.err(node, key, problem)
            return None, None, None
        return None, name, None
    roles = f", or a role ({', '.join(rl.role_words(unit.roles)[:3])}, ...)" if unit.roles is not None else ""
    v.err(node, key, f"the {unit.kind} unit has no input {name!r}; it has: {', '.join(unit.inputs)}{roles}")
    return None, None, None


_BRACES = re.compile(r"\{([^{}]*)\}")


def _template(v: _Validator, node: yaml.Node, key: str, text: str, unit: UnitVocab, variables: set[str],
              races: list[dict[str, int]], counts: list[int]) -> NameTemplate | None:
    """An input name with expressions in braces, worked out (and checked to name an input of the unit)
    for every race of the sweep and every repetition of the step."""
    def check(env: dict[str, int], k: int, n: int, name: str) -> str | None:
        if name in unit.inputs:
            return None
        return (f"{text!r} is {name!r} (with {_env_text(env)}{f', rep={k}' if n > 1 else ''}"
                f"{f', {UNIT_PLAYERS}={FEWEST_PLAYERS}' if UNIT_PLAYERS in text else ''}), "
                f"not an input of the {unit.kind} unit; it has: {', '.join(unit.inputs)}")
    # a unit with Player buttons says how many it has (IDENTITY.players): known at run time
    own = {UNIT_PLAYERS} if unit.roles is not None else set()
    return _braced(v, node, key, text, variables | {"race", REP} | own,
                   f"the sweep variables ({', '.join(sorted(variables - {'race'})) or 'none'}), race and rep (the "
                   f"repetition)" + (f", and {UNIT_PLAYERS} (the base's Player buttons)" if own else ""),
                   races, counts, check, {n: FEWEST_PLAYERS for n in own})


def _braced(v: _Validator, node: yaml.Node, key: str, text: str, names: set[str], may_use: str,
            races: list[dict[str, int]], counts: list[int], check, known_later: dict | None = None
            ) -> NameTemplate | None:
    """Text with expressions in braces over names, worked out for every race and every repetition of
    the step (counts: per race); check(env, rep, reps, result) says what is wrong with a result, or None.
    known_later: names whose values come at run time, given a stand-in value to work the text out with."""
    parts: list = []
    pos = 0
    for m in _BRACES.finditer(text):
        parts.append(text[pos:m.start()])
        inner = m.group(1).strip()
        if len(inner) > MAX_EXPR_CHARS:
            v.err(node, key, f"an expression of {len(inner)} characters; at most {MAX_EXPR_CHARS} (MAX_EXPR_CHARS)")
            return None
        try:
            tree = expr.parse(inner or "''")
        except expr.ExprError as exc:
            v.err(node, key, f"{{{inner}}} in {text!r}: {exc}")
            return None
        unknown = expr.names(tree) - names
        if unknown:
            v.err(node, key, f"unknown name(s) {', '.join(sorted(unknown))} in {text!r}; it may use {may_use}")
            return None
        parts.append(tree)
        pos = m.end()
    parts.append(text[pos:])
    if any(isinstance(p, str) and ("{" in p or "}" in p) for p in parts):
        v.err(node, key, f"{text!r}: braces hold one expression each, '{{' and '}}' paired, not nested")
        return None
    template = NameTemplate(tuple(p for p in parts if p != ""), text)
    size = sum(1 for p in parts if not isinstance(p, str) for _ in ast.walk(p))
    cost = size * sum(counts)
    if v.evaluations + cost > MAX_EVALUATIONS:
        v.err(node, key, f"validating {text!r} in every race and repetition needs more than {MAX_EVALUATIONS} steps "
                         f"of expression evaluation (MAX_EVALUATIONS)")
        v.over_budget = True
        return None
    v.evaluations += cost
    for env, n in zip(races, counts):
        for k in range(n):
            try:
                problem = check(env, k, n, template.name((known_later or {}) | env | {REP: k}))
            except expr.ExprError as exc:
                problem = f"{text!r} (with {_env_text(env)}): {exc}"
            if problem is not None:
                v.err(node, key, problem)
                return None
    return template


def _prompt(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
            races: list[dict[str, int]], started: bool) -> NameTemplate | None:
    """A wait for a person's text: not empty, with expressions in braces of the sweep variables, race
    and (Flash) the roles, each a player's button number at the wait's start ('player {current}')."""
    text = v.text(node, key)
    if text is None:
        return None
    if not text.strip():
        v.err(node, key, "is empty; say what the person is to do ('press paddle A when the light turns green')")
        return None
    roles = set(rl.role_words(unit.roles)) if unit is not None and unit.roles is not None else set()
    template = _braced(v, node, key, text, variables | {"race"} | roles,
                       f"the sweep variables ({', '.join(sorted(variables - {'race'})) or 'none'}) and race"
                       + (", and the roles (current, opponent_1, ...)" if roles else ""),
                       races, [1] * len(races), lambda *_: None, {r: 0 for r in roles})
    used = sorted(template.names() & roles) if template is not None else []
    problems = [p for r in used if (p := rl.role_problem(r, unit.roles, mask=False, players=v.players)) is not None]
    if used and not started:
        problems.append(f"names {', '.join(used)} before any step starts a game (a press of "
                        f"{unit.roles.started_by}): before the unit's first selection nobody plays")
    for p in problems:
        v.err(node, key, p)
    return None if problems else template


def _count(v: _Validator, node: yaml.Node, key: str, variables: set[str], races: list[dict[str, int]]):
    """A step's repetitions: an integer or an expression of the sweep variables, from 1 to MAX_TIMES in
    every race. (its tree, its value per race), or None (said)."""
    raw = _CONSTRUCTOR.construct_object(node) if isinstance(node, yaml.ScalarNode) else None
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        v.err(node, key, f"must be a count: an integer or an expression of sweep variables, not {_what(node)}")
        return None
    text = str(raw).strip()
    if not text:
        v.err(node, key, "is empty; give a count (leave 'times' out for 1)")
        return None
    if len(text) > MAX_EXPR_CHARS:
        v.err(node, key, f"{len(text)} characters; a count is at most {MAX_EXPR_CHARS} (MAX_EXPR_CHARS)")
        return None
    worked = _worked_out(v, node, key, text, text, variables, races)
    if worked is None:
        return None
    tree, values = worked
    for env, n in zip(races, values):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TIMES:
            shown = f"{n!r}" if isinstance(raw, int) else f"{text!r} is {n!r}" + (
                f" (with {_env_text(env)})" if len(races) > 1 else "") + ","
            v.err(node, key, f"{shown} is out of range [1, {MAX_TIMES}]: a step is given 1 to {MAX_TIMES} times "
                             f"(MAX_TIMES)" if isinstance(n, int) else f"{text!r} is not a count")
            return None
    return tree, values


def _step_config(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab, running: dict[str, int]) -> dict[str, int]:
    """A config step's parameters, checked like the scenario's config, against the configuration the
    race has by then (the cross-parameter rules hold for the values that result)."""
    before = len(v.problems)
    values = _config(v, node, unit, key=key, base=running)
    if len(v.problems) == before:       # a refused change is not counted on: the next are checked without it
        running.update(values)
    return values


def _step_switches(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab) -> dict[str, str]:
    out = _physical(v, node, unit, key=key)
    if not out and isinstance(node, yaml.MappingNode) and not node.value:
        v.err(node, key, "names no switch")
    return out


def _step(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
          races: list[dict[str, int]], started: bool = False, running: dict[str, int] | None = None) -> Step | None:
    all_actions = set(STEP_ACTIONS)
    m = v.mapping(node, key, all_actions | STEP_COMMON)
    actions = [a for a in m if a in all_actions]
    if len(actions) != 1:
        v.err(node, key, f"a step needs exactly one action ({', '.join(sorted(all_actions))}); found "
                         f"{', '.join(actions) or 'none'}")
        return None
    action = actions[0]
    akey = f"{key}.{action}"
    an, av = m[action]
    if unit is not None and action not in unit.steps:
        v.err(an, akey, f"the {unit.kind} unit has no {action!r} step; it has: {', '.join(unit.steps)}")
        return None
    counted = _count(v, m["times"][1], f"{key}.times", variables, races) if "times" in m else None
    times_tree, counts = counted if counted is not None else (expr.parse("1"), [1] * len(races))
    for word, allowed in (("until", STIMULUS_ACTIONS),
                          ("timeout", {"wait_for"}), ("on_timeout", {"wait_for"}), ("prompt", {"wait_for"})) + tuple(
                              (word, all_actions - {"wait_for", "config"}) for word in ("times", "every")):
        if word in m and action not in allowed:
            v.err(m[word][0], f"{key}.{word}", f"goes with a step of {', '.join(sorted(allowed))}, not {action!r}")
            return None
    inputs = unit.inputs if unit else {}
    input_no: int | None = None
    edge = "press"
    value = 0
    roles: list[str] = []
    names: list[NameTemplate] = []
    awaited = timeout = prompt = None
    on_timeout = "fail"
    config: dict[str, int] = {}
    switches: dict[str, str] = {}
    if action in ("press", "release"):
        edge = action
        input_no, role, template = _press_target(v, av, akey, unit, variables, races, counts)
        roles += [role] if role else []
        names += [template] if template else []
    elif action in ("load", "unload"):
        n = v.integer(av, akey, 0, 255)
        input_no, value, edge = inputs.get("load_cards"), n or 0, ("press" if action == "load" else "release")
    elif action == "door":
        word = v.text(av, akey)
        if word not in ("open", "close"):
            v.err(av, akey, "must be 'open' or 'close'")
        input_no, edge = inputs.get("door"), EDGE_WORDS.get(word or "", "press")
    elif action == "power":
        word = _CONSTRUCTOR.construct_object(av) if isinstance(av, yaml.ScalarNode) else None
        word = {True: "on", False: "off"}.get(word, word)
        if word not in ("on", "off"):
            v.err(av, akey, "must be 'on' or 'off'")
        input_no, edge = inputs.get("power"), EDGE_WORDS.get(word or "", "press")
    elif action == "speed":
        word = v.text(av, akey)
        speeds = cat.ENUM_VALUES["flash_speed"]
        if word not in speeds:
            v.err(av, akey, f"must be one of: {', '.join(speeds)}")
        input_no, value = inputs.get("speed_switch"), speeds.get(word or "", 0)
    elif action == "hold":
        nums = []
        for x in v.seq(av, akey) if isinstance(av, yaml.SequenceNode) else [av]:
            num, role, template = _press_target(v, x, akey, unit, variables, races, counts)
            nums += [num] if num is not None else []
            roles += [role] if role else []
            names += [template] if template else []
        if "for" not in m:
            v.err(node, f"{key}.for", "a hold needs 'for': how long the inputs are held, in us")
        input_no = nums[0] if nums else None
        value = sum(1 << n for n in nums)      # the set of held inputs, as a mask
        edge = "hold"
    elif action == "wait":
        edge = "none"
    elif action == "wait_for":
        edge = "none"
        awaited = _pattern(v, av, akey, unit) if unit is not None else None
        if "timeout" in m:
            t = _time(v, m["timeout"][1], f"{key}.timeout", None, variables, races)
            timeout = t.offset if t else None
            if t is not None and t.anchor != "start":
                v.err(m["timeout"][1], f"{key}.timeout", "must be a duration in us, not anchored")
        if "on_timeout" in m:
            on_timeout = v.text(m["on_timeout"][1], f"{key}.on_timeout") or "fail"
            if on_timeout not in ("fail", "continue"):
                v.err(m["on_timeout"][1], f"{key}.on_timeout", "must be 'fail' (the race fails, naming the event) "
                                                              "or 'continue' (the steps after it go on)")
        if "prompt" in m:
            prompt = _prompt(v, m["prompt"][1], f"{key}.prompt", unit, variables, races, started)
            awaited = _persons(v, av, akey, awaited)
            if "timeout" not in m:
                v.err(m["prompt"][0], f"{key}.timeout", "a wait for a person needs 'timeout': how long the person "
                                                        "is given, in us (the unit's rules give no bound for them)")
    elif action == "config" and unit is not None:
        edge = "none"
        config = _step_config(v, av, akey, unit, running if running is not None else {})
    elif action == "physical" and unit is not None:
        edge = "none"
        switches = _step_switches(v, av, akey, unit)
    if "value" in m:
        value = v.integer(m["value"][1], f"{key}.value", 0, 255) or 0
    at_node = m["at"][1] if "at" in m else (av if action == "wait" else None)
    if action == "wait" and "at" in m:
        v.err(m["at"][0], f"{key}.at", "a wait step gives its time as 'wait: TIME'")
    if action == "wait_for" and "at" in m:
        v.err(m["at"][0], f"{key}.at", "a wait_for step starts waiting at the previous step's time; give "
                                       "'timeout' for how long")
    at = _time(v, at_node, f"{key}.{'wait' if action == 'wait' else 'at'}", unit, variables, races) \
        if at_node is not None else TimeSpec("previous", expr.parse("0"), "previous")
    every = None
    if "every" in m:
        t = _time(v, m["every"][1], f"{key}.every", None, variables, races)
        every = t.offset if t else None
        if t is not None and t.anchor != "start":
            v.err(m["every"][1], f"{key}.every", "must be a duration in us, not anchored")
    if ("times" in m or "until" in m) and every is None and "every" not in m \
            and (max(counts, default=1) > 1 or "until" in m):
        v.err(node, f"{key}.every", "steps repeated with 'times' need 'every' (the spacing in us)")
    until = None
    if "until" in m and unit is not None:
        until = _pattern(v, m["until"][1], f"{key}.until", unit)
        if "times" not in m:
            v.err(m["until"][0], f"{key}.until", "a step repeated until an event needs 'times': the most "
                                                  "repetitions (the loop's cap)")
    hold_for = None
    if "for" in m:
        t = _time(v, m["for"][1], f"{key}.for", None, variables, races)
        hold_for = t.offset if t else None
    expect = None
    if "expect" in m:
        expect = v.text(m["expect"][1], f"{key}.expect")
        if expect not in (None, "acted", "reported", "refused"):
            v.err(m["expect"][1], f"{key}.expect", "must be acted, reported or refused")
    error = None
    if "error" in m:
        en = v.text(m["error"][1], f"{key}.error")
        if en is not None and en not in cat.ENUM_VALUES["error"]:
            v.err(m["error"][1], f"{key}.error", f"unknown error; known: {', '.join(cat.ENUM_VALUES['error'])}")
        elif en is not None:
            error = cat.ENUM_VALUES["error"][en]
            expect = expect or "refused"
    if at is None:
        return None
    if roles and unit is not None:
        _role_step(v, av, akey, unit, at, races, started)
    shown = _CONSTRUCTOR.construct_object(av) if isinstance(av, yaml.ScalarNode) else \
        ", ".join(str(x.value) for x in av.value) if isinstance(av, yaml.SequenceNode) else \
        ", ".join(f"{k}={val}" for k, val in {**config, **switches}.items()) if action in ("config", "physical") \
        else awaited.text if awaited is not None else ""
    return Step(action=action, input=input_no, action_edge=edge, value=value, at=at, times=times_tree,
                every=every, hold_for=hold_for, expect=expect, error=error, line=node.start_mark.line + 1,
                text=f"{action} {shown}".strip(), roles=tuple(roles), names=tuple(names), until=until,
                awaited=awaited, timeout=timeout, on_timeout=on_timeout, config=config, switches=switches,
                prompt=prompt)


_PHYSICAL = cat.ENUM_VALUES["input_source"]["physical"]


def _persons(v: _Validator, node: yaml.Node, key: str, awaited: EventPattern | None) -> EventPattern | None:
    """The event a person's wait is answered by: an INPUT_SEEN is of a physical edge (implied, or said),
    never one the host sent; named with its fields, for the prompt's messages."""
    if awaited is None:
        return None
    fields = dict(awaited.fields)
    if awaited.name == "INPUT_SEEN":
        source = fields.get("source")
        if source is None:
            fields["source"] = Matcher("eq", (_PHYSICAL,), label="physical")
        elif not isinstance(source, Matcher) or source.kind != "eq" or source.values != (_PHYSICAL,):
            fields_node = node.value[0][1]          # {INPUT_SEEN: {..., source: X}}: the fields, then X
            at = next(vn for kn, vn in fields_node.value if kn.value == "source")
            v.err(at, f"{key}.INPUT_SEEN.source", f"a wait for a person is answered by a physical edge "
                                                    f"(source physical), not {source.describe()}")
            return None
    shown = ", ".join(f"{k} {m.label}" for k, m in fields.items())
    return EventPattern(awaited.name, fields, f"{awaited.name} ({shown})" if shown else awaited.name)


_NONE = {"u8": cat.NONE_U8, "u16": cat.NONE_U16, "u32": cat.NONE_U32, "i32": cat.NONE_I32}


def _expr_matcher(v: _Validator, node: yaml.Node, key: str) -> Matcher | None:
    """An exact value given as an expression of the sweep variables ('players', 'n - 1'), worked out
    (and checked to be an integer) in every race."""
    text = str(_CONSTRUCTOR.construct_object(node)).strip()
    if len(text) > MAX_EXPR_CHARS:
        v.err(node, key, f"{len(text)} characters; an expression is at most {MAX_EXPR_CHARS} (MAX_EXPR_CHARS)")
        return None
    worked = _worked_out(v, node, key, text or "''", text, v.variables, v.sweep)
    if worked is None:
        return None
    tree, values = worked
    if any(isinstance(x, bool) or not isinstance(x, int) for x in values):
        v.err(node, key, f"{text!r} is not an integer")
        return None
    return Matcher("expr", (tree,), label=text)


def _matcher(v: _Validator, node: yaml.Node, key: str, enum_name: str | None,
             none_value: int | None = None) -> Matcher | None:
    def conv(n: yaml.Node):
        raw = _CONSTRUCTOR.construct_object(n) if isinstance(n, yaml.ScalarNode) else None
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
            v.err(n, key, f"must be an integer{' or a ' + enum_name + ' name' if enum_name else ''}, not {_what(n)}")
            return None
        return raw

    if isinstance(node, yaml.ScalarNode) and enum_name is None and node.tag == "tag:yaml.org,2002:str" \
            and node.value != "none":
        return _expr_matcher(v, node, key)
    if isinstance(node, yaml.SequenceNode):
        vals = [conv(x) for x in node.value]
        if any(x is None for x in vals) or not vals:
            return None
        return Matcher("any", tuple(vals), label="one of " + ", ".join(str(_CONSTRUCTOR.construct_object(x))
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


def _role_matcher(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab, mask: bool) -> RoleMatcher | bool:
    """A field value given by role ('current', 'opponent_2', 'opponent_1 | opponent_3', 'opponents',
    or a list of such and numbers: one of them); False if the value names no role, True if it did
    but wrongly (the problem is reported)."""
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    if not all(isinstance(x, yaml.ScalarNode) for x in items):
        return False
    raw = [_CONSTRUCTOR.construct_object(x) for x in items]
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


def _fields(v: _Validator, node: yaml.Node, key: str, message: str, unit: UnitVocab) -> dict[str, Matcher | RoleMatcher]:
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
    raw = _CONSTRUCTOR.construct_object(node) if isinstance(node, yaml.ScalarNode) else None
    if not isinstance(raw, str):
        return False
    head = re.match(r"\s*([A-Za-z_][A-Za-z_0-9]*)", raw)
    return head is not None and (head[1] in unit.anchors or head[1] in BUILTIN_ANCHORS or head[1] == "next"
                                 or head[1] in RIG_ANCHORS[unit.kind])


def _time_matcher(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab) -> TimeMatcher | bool:
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
        t = _time(v, n, k, unit, v.variables, v.sweep)
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


def _pattern(v: _Validator, node: yaml.Node, key: str, unit: UnitVocab) -> EventPattern | None:
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


def _expect(v: _Validator, node: yaml.Node, unit: UnitVocab | None, variables: set[str],
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
            holds = _values(v, wn, f"{key}.when", tree, text, races)
            if holds is None:
                continue
            if not any(holds):
                # its checks would be skipped in every race, and the scenario pass whatever they say
                v.err(wn, f"{key}.when", f"{text!r} holds in none of the races, so its checks would never run; "
                                         f"the sweep gives {_sweep_text(races)}")
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


def _expect_body(v: _Validator, m: dict, key: str, unit: UnitVocab) -> Expectation:
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
            p = _pattern(v, n, f"{key}.events[{i}]", unit)
            if p is not None:
                e.events.append(p)
    if "absent" in m:
        for i, n in enumerate(v.seq(m["absent"][1], f"{key}.absent")):
            p = _pattern(v, n, f"{key}.absent[{i}]", unit)
            if p is not None:
                e.absent.append(p)
    if "count" in m:
        for name, (kn, vn) in v.mapping(m["count"][1], f"{key}.count").items():
            if name not in unit.events:
                v.err(kn, f"{key}.count.{name}", f"the {unit.kind} unit has no event {name!r}")
                continue
            mt = _matcher(v, vn, f"{key}.count.{name}", None)
            if mt is not None:
                e.count[name] = mt
    if "latency" in m:
        for name, (kn, vn) in v.mapping(m["latency"][1], f"{key}.latency", set(LATENCY_METRICS)).items():
            mt = _matcher(v, vn, f"{key}.latency.{name}", None)
            if mt is not None:
                e.latency[name] = mt
    if "reaction" in m:
        known = reaction_keys(unit)
        for name, (kn, vn) in v.mapping(m["reaction"][1], f"{key}.reaction").items():
            if name not in known:
                v.err(kn, f"{key}.reaction.{name}", f"the {unit.kind} unit's {unit.verdict} has no such reaction time"
                      + (f"; it has: {', '.join(known)}" if known else ""))
                continue
            if unit.roles is not None and rl.looks_like_role(name) \
                    and (problem := rl.role_problem(name, unit.roles, mask=False, players=v.players)) is not None:
                v.err(kn, f"{key}.reaction.{name}", problem)
                continue
            mt = _matcher(v, vn, f"{key}.reaction.{name}", None)
            if mt is not None:
                e.reaction[name] = mt
    if "rig" in m:
        known = rig_figures(unit)
        for name, (kn, vn) in v.mapping(m["rig"][1], f"{key}.rig").items():
            if name not in known:
                v.err(kn, f"{key}.rig.{name}", f"a rig measures no {name!r} on the {unit.kind} unit; it measures: "
                      f"{', '.join(known)}")
                continue
            mt = _matcher(v, vn, f"{key}.rig.{name}", None)
            if mt is not None:
                e.rig[name] = mt
    return e


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
    import sys
    for sc in scenarios:
        for w in sc.warnings:
            print(w, file=stream or sys.stderr)


def _seed(v: _Validator, node: yaml.Node) -> tuple[int | None, bool]:
    """seed: N (race i draws from rng_seed N + i) or {same: N} (every race from N)."""
    if isinstance(node, yaml.MappingNode):
        m = v.mapping(node, "seed", {"same"})
        if "same" not in m:
            if not node.value:
                v.err(node, "seed", "give an integer (race i: seed + i) or {same: N} (every race: N)")
            return None, False
        return v.integer(m["same"][1], "seed.same", 0, 0xFFFFFFFF), True
    return v.integer(node, "seed", 0, 0xFFFFFFFF), False


def _lead_warning(v: _Validator, node: yaml.Node, key: str, st: Step, races: list[dict[str, int]],
                  ahead: list[int], heard_event: bool) -> None:
    """A step the runner schedules once it has heard an event (its anchor, a role's, the steps before it
    back to one) less than REAL_LEAD_US after that event, or repeated until an event with less than
    that between repetitions: a link with transit time cannot get the stimulus there in time (the
    unit answers too_late) though a virtual link can. Said, not refused."""
    from unohil.harness.run.runner import REAL_LEAD_US     # the runner's lead over a link with transit time
    offsets = _offsets(v, st.at.offset, races)
    gaps = [(ahead[i] if st.at.anchor == "previous" else 0) + offsets[i] for i in range(len(races))]
    closest = min(range(len(races)), key=lambda i: gaps[i], default=None)
    if heard_event and closest is not None and gaps[closest] < REAL_LEAD_US \
            and st.action not in ("wait_for", "config", "wait"):
        sweep = f" (with {_env_text(races[closest])})" if len(races) > 1 else ""
        v.warn(node, key, f"{st.text} at {st.at.text!r} comes {gaps[closest]} us after the event the runner must "
                          f"hear before it can send it{sweep}; a link with transit time needs about {REAL_LEAD_US} "
                          f"us (REAL_LEAD_US in harness/run/runner.py): on hardware the unit would answer too_late")
    if st.until is not None and st.every is not None:
        spacing = _offsets(v, st.every, races)
        i = min(range(len(races)), key=lambda j: spacing[j])
        if spacing[i] < REAL_LEAD_US:
            v.warn(node, key, f"{st.text} repeats until {st.until.text} every {spacing[i]} us; the runner decides "
                              f"each repetition from what it heard before it, and a link with transit time needs "
                              f"about {REAL_LEAD_US} us (REAL_LEAD_US in harness/run/runner.py)")


_PATH = re.compile(r"^(?P<event>[A-Za-z_][A-Za-z_0-9]*)(\[(?P<index>[0-9]+)\])?\.(?P<field>[a-z_0-9]+)$")


def _comparisons(v: _Validator, node: yaml.Node, unit: UnitVocab, races: list[dict[str, int]]) -> list[Comparison]:
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


def _compare_path(v: _Validator, pn: yaml.Node, key: str, unit: UnitVocab) -> tuple[str, int, str, str] | None:
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
