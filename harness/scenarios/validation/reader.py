"""The validator's node reader: every problem found in a file, each at its line and column, and the
helpers that read a mapping, a list or a scalar of the YAML node tree while saying what is wrong."""
from __future__ import annotations

from typing import Any

import yaml

from unohil.harness.errors import Problem

CONSTRUCTOR = yaml.constructor.SafeConstructor()


class Validator:
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
            self.err(node, key, f"must be a mapping, not {describe_node(node)}")
            return {}
        out: dict[str, tuple] = {}
        for k, v in node.value:
            name = CONSTRUCTOR.construct_object(k) if isinstance(k, yaml.ScalarNode) else None
            if not isinstance(name, str):
                self.err(k, key, f"keys must be names, not {describe_node(k)}")
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
            self.err(node, key, f"must be a list, not {describe_node(node)}")
            return []
        return list(node.value)

    def value(self, node: yaml.Node, key: str, types: tuple, what: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.err(node, key, f"must be {what}, not {describe_node(node)}")
            return None
        v = CONSTRUCTOR.construct_object(node)
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


def describe_node(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(CONSTRUCTOR.construct_object(node))


def env_text(env: dict) -> str:
    return ", ".join(f"{k}={val}" for k, val in env.items() if k != "race") or "no sweep"


def sweep_text(races: list[dict[str, int]]) -> str:
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
