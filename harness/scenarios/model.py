"""A scenario as the runner sees it: validated dataclasses, built by load.py from a YAML file."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.scenarios import expr


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

    def check(self, v: Any, tolerance: int = 0) -> bool:
        """Whether v matches; a number may be off by tolerance (a host-timed press's measured error)."""
        if tolerance and isinstance(v, int):
            if self.kind in ("eq", "any"):
                return any(isinstance(x, int) and abs(v - x) <= tolerance for x in self.values)
            return (self.lo is None or v >= self.lo - tolerance) and (self.hi is None or v <= self.hi + tolerance)
        if self.kind == "eq":
            return v == self.values[0]
        if self.kind == "any":
            return v in self.values
        return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)

    def describe(self) -> str:
        return self.label


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
class EventPattern:
    name: str
    fields: dict[str, Matcher | RoleMatcher]
    text: str


@dataclass
class Step:
    action: str
    input: int | None
    action_edge: str              # press | release | none
    value: int
    at: TimeSpec
    times: int = 1
    every: ast.expr | None = None
    hold_for: ast.expr | None = None
    expect: str | None = None     # acted | reported | refused
    error: int | None = None
    line: int = 0
    text: str = ""
    roles: tuple[str, ...] = ()   # players pressed by role (press/release: the one; hold: besides value's inputs)


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

    def with_races(self, races: list[dict[str, int]]) -> "Scenario":
        return replace(self, races=races)

    @property
    def verdict_count(self) -> int:
        return max([self.min_verdicts] + [len(e.verdicts) for e in self.expectations])

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}::{self.name}"
