"""Reading messages.yaml and decisions.yaml node by node: YAML composed with its marks, and the shapes every
section is made of (a mapping of allowed keys, a list, an integer in range, a name, one of a set), each
failing as a CatalogueError at file:line:col."""
from __future__ import annotations

import re
from typing import NoReturn

import yaml

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_CONSTRUCT = yaml.constructor.SafeConstructor()
_SCALARS = {
    "tag:yaml.org,2002:str": lambda n: n.value,
    "tag:yaml.org,2002:int": _CONSTRUCT.construct_yaml_int,
    "tag:yaml.org,2002:bool": _CONSTRUCT.construct_yaml_bool,
    "tag:yaml.org,2002:null": lambda n: None,
    "tag:yaml.org,2002:float": _CONSTRUCT.construct_yaml_float,
}
# libyaml composes several times faster than the pure-Python parser, and the codec is built at import
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CatalogueError(ValueError):
    """messages.yaml is not a valid catalogue; the message starts with file:line:col."""



def _compose(text: str, file: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise CatalogueError(f"{file}:{line}:{col}: malformed YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{file}:1:1: malformed YAML: {exc}") from None


def _text(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(_scalar(node))


def _scalar(node: yaml.ScalarNode):
    return _SCALARS.get(node.tag, lambda n: n.value)(node)


def _label(node, what: str, i: int) -> str:
    """How to name the i-th entry of a list in a problem: by its name when it has a readable one."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == "name" and isinstance(v, yaml.ScalarNode) and v.value:
                return f"{what} {v.value}"
    return f"{what}s[{i}]"


def _join(names) -> str:
    return ", ".join(str(n) for n in names) or "none"


class NodeReader:
    """The shapes of the catalogue's files; the sections (protocol/schema.py, schema_units.py, schema_rig.py)
    are read with them."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, node: yaml.Node | None, where: str, problem: str, allowed=None) -> NoReturn:
        line, col = (node.start_mark.line + 1, node.start_mark.column + 1) if node is not None else (1, 1)
        tail = f" (allowed: {_join(allowed)})" if allowed is not None else ""
        raise CatalogueError(f"{self.file}:{line}:{col}: {where}: {problem}{tail}")

    # ---- shapes ----

    def mapping(self, node, where: str, keys: dict[str, bool] | None = None) -> dict[str, tuple]:
        """key -> (key node, value node); keys maps each allowed key to whether it is required."""
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, where, f"must be a mapping, not {_text(node)}")
        out: dict[str, tuple] = {}
        for k, v in node.value:
            name = _scalar(k) if isinstance(k, yaml.ScalarNode) else None
            if not isinstance(name, str):
                self.fail(k, where, f"keys must be names, not {_text(k)}")
            if name in out:
                self.fail(k, where, f"duplicate key {name!r}")
            if keys is not None and name not in keys:
                self.fail(k, where, f"unknown key {name!r}", sorted(keys))
            out[name] = (k, v)
        for name, required in (keys or {}).items():
            if required and name not in out:
                self.fail(node, where, f"missing key {name!r}")
        return out

    def seq(self, node, where: str) -> list:
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, where, f"must be a list, not {_text(node)}")
        return node.value

    def value(self, node, where: str, types: tuple, what: str):
        v = _scalar(node) if isinstance(node, yaml.ScalarNode) else node
        if isinstance(v, yaml.Node) or (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
            self.fail(node, where, f"must be {what}, not {_text(node)}")
        return v

    def integer(self, node, where: str, lo: int = 0, hi: int | None = None) -> int:
        v = self.value(node, where, (int,), "an integer")
        if v < lo or (hi is not None and v > hi):
            self.fail(node, where, f"{v} is out of range [{lo}, {hi if hi is not None else '...'}]")
        return v

    def text(self, node, where: str) -> str:
        return self.value(node, where, (str,), "text")

    def name(self, node, where: str) -> str:
        v = self.text(node, where)
        if not _NAME.match(v):
            self.fail(node, where, f"{v!r} is not a name (letters, digits, _)")
        return v

    def one_of(self, node, where: str, allowed, what: str) -> str:
        v = self.text(node, where)
        if v not in allowed:
            self.fail(node, where, f"unknown {what} {v!r}", allowed)
        return v

    def names(self, node, where: str, allowed, what: str) -> list[str]:
        out = []
        for n in self.seq(node, where):
            v = self.one_of(n, where, allowed, what)
            if v in out:
                self.fail(n, where, f"{what} {v!r} named twice")
            out.append(v)
        return out
