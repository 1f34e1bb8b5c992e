"""Steps: each step word's own value (the table STEP_WORDS), the keys every step may have (at, times,
every, until, for, expect, error), and the players and roles the steps so far have brought into a game."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import yaml

from unohil.protocol import catalogue as cat

from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.model import REP, UNIT_PLAYERS, EventPattern, Matcher, NameTemplate, Step, TimeSpec
from unohil.harness.scenarios.units import UnitVocab
from unohil.harness.scenarios.validation.expectations import event_pattern
from unohil.harness.scenarios.validation.reader import CONSTRUCTOR, Validator, env_text
from unohil.harness.scenarios.validation.settings import step_config, step_switches
from unohil.harness.scenarios.validation.times import per_race, repetitions, time_spec
from unohil.harness.scenarios.validation.words import (EDGE_WORDS, FEWEST_PLAYERS, MAX_EVALUATIONS, MAX_EXPR_CHARS,
                                                       STEP_COMMON)

def buttons_pressed(st: Step, unit: UnitVocab | None, races: list[dict[str, int]]) -> set[str]:
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


def players_so_far(pressed: set[str], unit: UnitVocab | None) -> list[str] | None:
    """The players the steps so far can have registered, in button order; None if none."""
    if unit is None or unit.roles is None:
        return None
    return [b for b in unit.roles.buttons if b in pressed] or None


def starts_game(step: Step, unit: UnitVocab | None) -> bool:
    if unit is None or unit.roles is None:
        return False
    start = unit.inputs[unit.roles.started_by]
    return (step.action == "press" and step.input == start) or (step.action == "hold" and step.value >> start & 1)


def _role_step(v: Validator, node: yaml.Node, key: str, unit: UnitVocab, at: TimeSpec, races: list[dict[str, int]],
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
    elif any(x == 0 for x in per_race(v, at.offset, races)):
        v.err(node, key, f"names a role at its anchor's own time ({at.text!r}): the runner learns who plays "
                         f"from what the unit reported up to that time, so the step must come at least 1 us "
                         f"after it; anchor it on an earlier event (e.g. the buzzer) or give it time")


def _press_target(v: Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
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


def _template(v: Validator, node: yaml.Node, key: str, text: str, unit: UnitVocab, variables: set[str],
              races: list[dict[str, int]], counts: list[int]) -> NameTemplate | None:
    """An input name with expressions in braces, worked out (and checked to name an input of the unit)
    for every race of the sweep and every repetition of the step."""
    def check(env: dict[str, int], k: int, n: int, name: str) -> str | None:
        if name in unit.inputs:
            return None
        return (f"{text!r} is {name!r} (with {env_text(env)}{f', rep={k}' if n > 1 else ''}"
                f"{f', {UNIT_PLAYERS}={FEWEST_PLAYERS}' if UNIT_PLAYERS in text else ''}), "
                f"not an input of the {unit.kind} unit; it has: {', '.join(unit.inputs)}")
    # a unit with Player buttons says how many it has (IDENTITY.players): known at run time
    own = {UNIT_PLAYERS} if unit.roles is not None else set()
    return _braced(v, node, key, text, variables | {"race", REP} | own,
                   f"the sweep variables ({', '.join(sorted(variables - {'race'})) or 'none'}), race and rep (the "
                   f"repetition)" + (f", and {UNIT_PLAYERS} (the base's Player buttons)" if own else ""),
                   races, counts, check, {n: FEWEST_PLAYERS for n in own})


def _braced(v: Validator, node: yaml.Node, key: str, text: str, names: set[str], may_use: str,
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
                problem = f"{text!r} (with {env_text(env)}): {exc}"
            if problem is not None:
                v.err(node, key, problem)
                return None
    return template


def _prompt(v: Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
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


@dataclass
class _Word:
    """What a step's word and its value give: the input and edge sent, the value, the roles and name
    templates pressed by, and what a wait, a config or a physical step holds."""
    input: int | None = None
    edge: str = "press"
    value: int = 0
    roles: list[str] = field(default_factory=list)
    names: list[NameTemplate] = field(default_factory=list)
    awaited: EventPattern | None = None
    timeout: object = None
    prompt: NameTemplate | None = None
    on_timeout: str = "fail"
    config: dict[str, int] = field(default_factory=dict)
    switches: dict[str, str] = field(default_factory=dict)


@dataclass
class _StepNode:
    """One step being read: its node, its keys, its word's key and value node, and the scenario around it."""
    v: Validator
    node: yaml.Node
    key: str
    m: dict
    akey: str
    av: yaml.Node
    unit: UnitVocab | None
    variables: set[str]
    races: list[dict[str, int]]
    counts: list[int]
    started: bool
    running: dict[str, int] | None


def _press_or_release(s: _StepNode, action: str) -> _Word:
    num, role, template = _press_target(s.v, s.av, s.akey, s.unit, s.variables, s.races, s.counts)
    return _Word(num, action, roles=[role] if role else [], names=[template] if template else [])


def _load_or_unload(s: _StepNode, action: str) -> _Word:
    n = s.v.integer(s.av, s.akey, 0, 255)
    return _Word(_inputs(s).get("load_cards"), "press" if action == "load" else "release", n or 0)


def _door(s: _StepNode, action: str) -> _Word:
    word = s.v.text(s.av, s.akey)
    if word not in ("open", "close"):
        s.v.err(s.av, s.akey, "must be 'open' or 'close'")
    return _Word(_inputs(s).get("door"), EDGE_WORDS.get(word or "", "press"))


def _power(s: _StepNode, action: str) -> _Word:
    word = CONSTRUCTOR.construct_object(s.av) if isinstance(s.av, yaml.ScalarNode) else None
    word = {True: "on", False: "off"}.get(word, word)
    if word not in ("on", "off"):
        s.v.err(s.av, s.akey, "must be 'on' or 'off'")
    return _Word(_inputs(s).get("power"), EDGE_WORDS.get(word or "", "press"))


def _speed(s: _StepNode, action: str) -> _Word:
    word = s.v.text(s.av, s.akey)
    speeds = cat.ENUM_VALUES["flash_speed"]
    if word not in speeds:
        s.v.err(s.av, s.akey, f"must be one of: {', '.join(speeds)}")
    return _Word(_inputs(s).get("speed_switch"), value=speeds.get(word or "", 0))


def _hold(s: _StepNode, action: str) -> _Word:
    out = _Word(edge="hold")
    nums = []
    for x in s.v.seq(s.av, s.akey) if isinstance(s.av, yaml.SequenceNode) else [s.av]:
        num, role, template = _press_target(s.v, x, s.akey, s.unit, s.variables, s.races, s.counts)
        nums += [num] if num is not None else []
        out.roles += [role] if role else []
        out.names += [template] if template else []
    if "for" not in s.m:
        s.v.err(s.node, f"{s.key}.for", "a hold needs 'for': how long the inputs are held, in us")
    out.input = nums[0] if nums else None
    out.value = sum(1 << n for n in nums)      # the set of held inputs, as a mask
    return out


def _wait(s: _StepNode, action: str) -> _Word:
    return _Word(edge="none")


def _wait_for(s: _StepNode, action: str) -> _Word:
    v, m, key = s.v, s.m, s.key
    out = _Word(edge="none", awaited=event_pattern(v, s.av, s.akey, s.unit) if s.unit is not None else None)
    if "timeout" in m:
        t = time_spec(v, m["timeout"][1], f"{key}.timeout", None, s.variables, s.races)
        out.timeout = t.offset if t else None
        if t is not None and t.anchor != "start":
            v.err(m["timeout"][1], f"{key}.timeout", "must be a duration in us, not anchored")
    if "on_timeout" in m:
        out.on_timeout = v.text(m["on_timeout"][1], f"{key}.on_timeout") or "fail"
        if out.on_timeout not in ("fail", "continue"):
            v.err(m["on_timeout"][1], f"{key}.on_timeout", "must be 'fail' (the race fails, naming the event) "
                                                          "or 'continue' (the steps after it go on)")
    if "prompt" in m:
        out.prompt = _prompt(v, m["prompt"][1], f"{key}.prompt", s.unit, s.variables, s.races, s.started)
        out.awaited = _persons(v, s.av, s.akey, out.awaited)
        if "timeout" not in m:
            v.err(m["prompt"][0], f"{key}.timeout", "a wait for a person needs 'timeout': how long the person "
                                                    "is given, in us (the unit's rules give no bound for them)")
    return out


def _config(s: _StepNode, action: str) -> _Word:
    if s.unit is None:
        return _Word()
    return _Word(edge="none", config=step_config(s.v, s.av, s.akey, s.unit,
                                                 s.running if s.running is not None else {}))


def _physical(s: _StepNode, action: str) -> _Word:
    if s.unit is None:
        return _Word()
    return _Word(edge="none", switches=step_switches(s.v, s.av, s.akey, s.unit))


def _inputs(s: _StepNode) -> dict[str, int]:
    return s.unit.inputs if s.unit else {}


#: The step words (docs/scenarios.md, Steps), each with the reader of its value and whether it gives the
#: unit a stimulus (and so may repeat it until an event): stimuli, waits, and changes of configuration and
#: switches. The words each unit kind has are units.STEPS.
STEP_WORDS = {
    "load": (_load_or_unload, True), "unload": (_load_or_unload, True), "press": (_press_or_release, True),
    "release": (_press_or_release, True), "hold": (_hold, True), "speed": (_speed, True), "power": (_power, True),
    "door": (_door, True), "wait": (_wait, False), "wait_for": (_wait_for, False), "config": (_config, False),
    "physical": (_physical, True),
}
STEP_ACTIONS = tuple(STEP_WORDS)
#: The steps that give the unit a stimulus (and so may repeat it until an event).
STIMULUS_ACTIONS = frozenset(word for word, (_, stimulus) in STEP_WORDS.items() if stimulus)
#: The keys a step's word allows besides its own: until with a stimulus; timeout, on_timeout and prompt
#: with a wait for an event; times and every with anything but a wait_for or config.
_KEY_WORDS = (("until", STIMULUS_ACTIONS), ("timeout", {"wait_for"}), ("on_timeout", {"wait_for"}),
              ("prompt", {"wait_for"}), ("times", set(STEP_WORDS) - {"wait_for", "config"}),
              ("every", set(STEP_WORDS) - {"wait_for", "config"}))


def parse_step(v: Validator, node: yaml.Node, key: str, unit: UnitVocab | None, variables: set[str],
               races: list[dict[str, int]], started: bool = False, running: dict[str, int] | None = None
               ) -> Step | None:
    all_actions = set(STEP_WORDS)
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
    counted = repetitions(v, m["times"][1], f"{key}.times", variables, races) if "times" in m else None
    times_tree, counts = counted if counted is not None else (expr.parse("1"), [1] * len(races))
    for word, allowed in _KEY_WORDS:
        if word in m and action not in allowed:
            v.err(m[word][0], f"{key}.{word}", f"goes with a step of {', '.join(sorted(allowed))}, not {action!r}")
            return None
    s = _StepNode(v, node, key, m, akey, av, unit, variables, races, counts, started, running)
    got = STEP_WORDS[action][0](s, action)
    if "value" in m:
        got.value = v.integer(m["value"][1], f"{key}.value", 0, 255) or 0
    at = _at(s, action)
    every, until, hold_for = _repeats(s, action, counts)
    expect, error = _outcome(s)
    if at is None:
        return None
    if got.roles and unit is not None:
        _role_step(v, av, akey, unit, at, races, started)
    shown = CONSTRUCTOR.construct_object(av) if isinstance(av, yaml.ScalarNode) else \
        ", ".join(str(x.value) for x in av.value) if isinstance(av, yaml.SequenceNode) else \
        ", ".join(f"{k}={val}" for k, val in {**got.config, **got.switches}.items()) if action in ("config", "physical") \
        else got.awaited.text if got.awaited is not None else ""
    return Step(action=action, input=got.input, action_edge=got.edge, value=got.value, at=at, times=times_tree,
                every=every, hold_for=hold_for, expect=expect, error=error, line=node.start_mark.line + 1,
                text=f"{action} {shown}".strip(), roles=tuple(got.roles), names=tuple(got.names), until=until,
                awaited=got.awaited, timeout=got.timeout, on_timeout=got.on_timeout, config=got.config,
                switches=got.switches, prompt=got.prompt)


def _at(s: _StepNode, action: str) -> TimeSpec | None:
    """The step's time: 'at', a wait's own value, or (neither given) the previous step's time."""
    v, m, key = s.v, s.m, s.key
    at_node = m["at"][1] if "at" in m else (s.av if action == "wait" else None)
    if action == "wait" and "at" in m:
        v.err(m["at"][0], f"{key}.at", "a wait step gives its time as 'wait: TIME'")
    if action == "wait_for" and "at" in m:
        v.err(m["at"][0], f"{key}.at", "a wait_for step starts waiting at the previous step's time; give "
                                       "'timeout' for how long")
    if at_node is None:
        return TimeSpec("previous", expr.parse("0"), "previous")
    return time_spec(v, at_node, f"{key}.{'wait' if action == 'wait' else 'at'}", s.unit, s.variables, s.races)


def _repeats(s: _StepNode, action: str, counts: list[int]) -> tuple:
    """(every, until, for) of a step: the spacing of its repetitions, the event that ends them, how long
    it holds."""
    v, m, key = s.v, s.m, s.key
    every = None
    if "every" in m:
        t = time_spec(v, m["every"][1], f"{key}.every", None, s.variables, s.races)
        every = t.offset if t else None
        if t is not None and t.anchor != "start":
            v.err(m["every"][1], f"{key}.every", "must be a duration in us, not anchored")
    if ("times" in m or "until" in m) and every is None and "every" not in m \
            and (max(counts, default=1) > 1 or "until" in m):
        v.err(s.node, f"{key}.every", "steps repeated with 'times' need 'every' (the spacing in us)")
    until = None
    if "until" in m and s.unit is not None:
        until = event_pattern(v, m["until"][1], f"{key}.until", s.unit)
        if "times" not in m:
            v.err(m["until"][0], f"{key}.until", "a step repeated until an event needs 'times': the most "
                                                  "repetitions (the loop's cap)")
    hold_for = None
    if "for" in m:
        t = time_spec(v, m["for"][1], f"{key}.for", None, s.variables, s.races)
        hold_for = t.offset if t else None
    return every, until, hold_for


def _outcome(s: _StepNode) -> tuple[str | None, int | None]:
    """(expect, error): how the unit is to take the step (acted, reported, refused) and the error it
    refuses it with."""
    v, m, key = s.v, s.m, s.key
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
    return expect, error


_PHYSICAL = cat.ENUM_VALUES["input_source"]["physical"]


def _persons(v: Validator, node: yaml.Node, key: str, awaited: EventPattern | None) -> EventPattern | None:
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
