"""A scenario as the runner sees it: validated dataclasses, built by load.py from a YAML file."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from unohil.protocol import catalogue as cat

from unohil.harness.scenarios import expr
from unohil.harness.scenarios.units import RIG_ANCHORS

#: The repetition index of a step repeated with times (0, 1, ...): a name its input names may use.
REP = "rep"
#: The unit's Player buttons (IDENTITY.players, a Flash base's 2 to 8): a name its input names may use,
#: known once the unit is ('player_{unit_players}': the first button the base does not have).
UNIT_PLAYERS = "unit_players"

@dataclass(frozen=True)
class TimeSpec:
    anchor: str
    offset: ast.expr
    text: str
    next: bool = False      # "next green": the first occurrence at or after the previous step's time

    def resolve(self, anchors: dict[str, int], env: dict[str, int]) -> int:
        return anchors[self.anchor] + expr.evaluate(self.offset, env)


@dataclass(frozen=True)
class Matcher:
    """Expected value of one field: exact, one of, range, or value with tolerance."""

    kind: str
    values: tuple = ()
    lo: int | None = None
    hi: int | None = None
    label: str = ""

    def check(self, v: Any, tolerance: int | tuple[int, int] = 0, env: dict[str, int] | None = None) -> bool:
        """Whether v matches; a number may be off by tolerance (a host-timed press's measured error), or
        by (below, above): v as far as below under the expected value and above over it (a timer's lateness
        goes one way). An expression (kind expr: 'players') is worked out in the race's variables, env."""
        if self.kind == "expr":
            return self.at(env or {}).check(v, tolerance)
        below, above = tolerance if isinstance(tolerance, tuple) else (tolerance, tolerance)
        if (below or above) and isinstance(v, int):
            if self.kind in ("eq", "any"):
                return any(isinstance(x, int) and x - below <= v <= x + above for x in self.values)
            return (self.lo is None or v >= self.lo - below) and (self.hi is None or v <= self.hi + above)
        if self.kind == "eq":
            return v == self.values[0]
        if self.kind == "any":
            return v in self.values
        return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)

    def describe(self, env: dict[str, int] | None = None) -> str:
        return self.at(env).label if self.kind == "expr" and env is not None else self.label

    def at(self, env: dict[str, int]) -> "Matcher":
        """An expression matcher as the exact value it has in a race."""
        if self.kind != "expr":
            return self
        val = expr.evaluate(self.values[0], env)
        return Matcher("eq", (val,), label=f"{self.label} = {val}")


@dataclass(frozen=True)
class RoleMatcher:
    """Expected value of a field that holds a button (or a mask of buttons), given by role: one of
    options, each a literal value or role words (one player; in a mask, the union of their bits).
    Resolved when judged, against the roles in force at the event (harness/scenarios/roles.py)."""

    options: tuple[int | tuple[str, ...], ...]
    mask: bool
    label: str

    def values(self, roles) -> tuple[int, ...]:
        """The values the options stand for under roles; an option naming a player the game does
        not have stands for nothing."""
        out = []
        for o in self.options:
            if isinstance(o, int):
                out.append(o)
            elif roles is not None:
                v = roles.mask(o) if self.mask else roles.button(o[0])
                if v is not None:
                    out.append(v)
        return tuple(out)

    def describe(self, roles) -> str:
        """The label with the players it stood for: 'opponent_1 (player 2)'."""
        vals = self.values(roles)
        if not vals:
            return f"{self.label} (nobody: {roles.describe() if roles is not None else 'no game started'})"
        return f"{self.label} ({'mask ' if self.mask else 'player '}{', '.join(map(str, vals))})"


@dataclass(frozen=True)
class TimeMatcher:
    """Expected value of a device-time field (press_a_us, green_us, knowable_us, ...) relative to an
    anchor of the race: exactly a time (with a tolerance), or between two. Resolved when judged: an
    event anchor is the latest such event at or before the judged event (the first one if none is)."""

    lo: TimeSpec | None
    hi: TimeSpec | None
    label: str
    tol: int = 0

    def bounds(self, resolve) -> tuple[int | None, int | None]:
        """(lo, hi) in device us; resolve(TimeSpec) gives a time, or None when its anchor never came."""
        lo = None if self.lo is None else resolve(self.lo)
        hi = None if self.hi is None else resolve(self.hi)
        return (None if lo is None else lo - self.tol), (None if hi is None else hi + self.tol)

    def describe(self) -> str:
        return self.label


@dataclass(frozen=True)
class EventPattern:
    name: str
    fields: dict[str, Matcher | RoleMatcher | TimeMatcher]
    text: str


@dataclass(frozen=True)
class NameTemplate:
    """An input name built from expressions, 'player_{i}': literal parts and expression trees, worked
    out per race (its sweep variables and race) and per repetition of the step (rep)."""

    parts: tuple[str | ast.expr, ...]
    text: str

    def name(self, env: dict[str, int]) -> str:
        return "".join(p if isinstance(p, str) else str(expr.evaluate(p, env)) for p in self.parts)

    def names(self) -> set[str]:
        """The names its expressions use (variables, race, rep, a prompt's roles)."""
        return {n for p in self.parts if not isinstance(p, str) for n in expr.names(p)}


@dataclass
class Step:
    action: str
    input: int | None
    action_edge: str              # press | release | none
    value: int
    at: TimeSpec
    times: ast.expr = field(default_factory=lambda: expr.parse("1"))   # repetitions, in the race's variables
    every: ast.expr | None = None
    hold_for: ast.expr | None = None
    expect: str | None = None     # acted | reported | refused
    error: int | None = None
    line: int = 0
    text: str = ""
    roles: tuple[str, ...] = ()   # players pressed by role (press/release: the one; hold: besides value's inputs)
    names: tuple[NameTemplate, ...] = ()   # inputs named by expression (press/release: the one; hold: more)
    until: EventPattern | None = None      # repeat the stimulus until this event (times is the cap)
    awaited: EventPattern | None = None    # wait_for: the event waited for
    timeout: ast.expr | None = None        # wait_for: the longest wait, from the previous step's time
    on_timeout: str = "fail"               # wait_for: fail | continue
    config: dict[str, int] = field(default_factory=dict)     # config: the parameters set
    switches: dict[str, str] = field(default_factory=dict)   # physical: switch -> position
    prompt: NameTemplate | None = None     # wait_for: a wait for a person, shown this text when it starts

    def count(self, env: dict[str, int]) -> int:
        """How many times the stimulus is given in a race (the cap of an until loop)."""
        return expr.evaluate(self.times, env)


@dataclass(frozen=True)
class Comparison:
    """A check across the races of one scenario: a value of each race (an event's field) is the same
    in all of them, or differs between every two."""

    kind: str                     # same | differ
    event: str                    # the message the value is read from (the unit's verdict, or an event)
    index: int                    # which such event of the race (0: the first)
    field: str
    races: tuple[int, ...]        # the race indices compared (all of the scenario's by default)
    text: str
    line: int


@dataclass
class Expectation:
    when: ast.expr | None = None
    when_text: str = ""
    verdicts: list[dict[str, Matcher | RoleMatcher]] = field(default_factory=list)
    events: list[EventPattern] = field(default_factory=list)
    absent: list[EventPattern] = field(default_factory=list)   # with their field filters
    count: dict[str, Matcher] = field(default_factory=dict)
    latency: dict[str, Matcher] = field(default_factory=dict)
    reaction: dict[str, Matcher] = field(default_factory=dict)
    rig: dict[str, Matcher] = field(default_factory=dict)   # the physical view's figures (harness/rig/views.py)


@dataclass
class Scenario:
    name: str
    file: str
    line: int
    unit: str
    tags: tuple[str, ...]
    seed: int | None
    config: dict[str, int]
    races: list[dict[str, int]]     # one environment of sweep variables per race
    steps: list[Step]
    expectations: list[Expectation]
    end: TimeSpec | None
    timeout_us: int | None          # longest wait for an event; None: the runner's default
    description: str = ""
    timing: str = "any"            # "exact": needs test mode (stimuli at exact device times)
    min_verdicts: int = 0          # wait for at least this many verdicts even with no verdict expectation
    needs: tuple[str, ...] = ()    # capabilities without which the scenario is skipped, saying so
    physical: dict[str, str] = field(default_factory=dict)   # switch -> position at the start of each race
    covers: tuple[str, ...] = ()   # the SPEC decision ids (SD-n, FL-n, LA-n) it exercises
    seed_same: bool = False        # every race draws from rng_seed = seed (not seed + race)
    compare: tuple[Comparison, ...] = ()
    warnings: tuple = ()           # Problems that stop nothing (a step closer to its anchor than a real link honours)

    def race_seed(self, race: int) -> int | None:
        if self.seed is None:
            return None
        return self.seed if self.seed_same else self.seed + race

    def with_races(self, races: list[dict[str, int]]) -> "Scenario":
        return replace(self, races=races)

    @property
    def attended(self) -> bool:
        """Whether a step waits for a person (a prompt): run only when asked (--attended)."""
        return any(st.prompt is not None for st in self.steps)

    @property
    def needs_rig(self) -> str | None:
        """Why it runs only through a rig (it checks the physical view, or a step counts from what the rig sees),
        or None."""
        if any(e.rig for e in self.expectations):
            return "it checks the physical view (expect: rig)"
        seen = next((st.at.anchor for st in self.steps if st.at is not None and st.at.anchor in RIG_ANCHORS[self.unit]),
                    None)
        return None if seen is None else f"a step counts from what the rig sees ({seen})"

    def verdict_count(self, env: dict[str, int]) -> int:
        """How many verdicts a race with the variables env must bring: the most that its expectations ask
        for, counting only the cases whose when holds in it (another case's list is another race's)."""
        return max([self.min_verdicts] + [len(e.verdicts) for e in self.expectations
                                          if e.when is None or expr.evaluate(e.when, env)])

    def parameters_set(self) -> list[str]:
        """The parameters a race changes with CONFIG_SET (so a unit without config_set cannot run it): the
        top-level config's away from the defaults, then each config step's away from what is in force then."""
        in_force = {name: p.default for name, p in cat.PARAMS_BY_NAME.items()}
        wanted = [k for k, v in self.config.items() if v != in_force[k]]
        in_force.update(self.config)
        for st in self.steps:
            if st.action == "config":
                wanted += [k for k, v in st.config.items() if v != in_force[k] and k not in wanted]
                in_force.update(st.config)
        return wanted

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}::{self.name}"
