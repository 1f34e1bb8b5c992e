"""Composition: a scenario file's text to YAML node trees (which keep the line and column of every key),
refusing before anything reads them a file too large, too deep or of too many nodes."""
from __future__ import annotations

import yaml

from unohil.harness.errors import Problem, ScenarioError
from unohil.harness.scenarios.validation.reader import CONSTRUCTOR
from unohil.harness.scenarios.validation.words import MAX_FILE_BYTES, MAX_NESTING, MAX_NODES

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


def check_size(size: int, file: str) -> None:
    if size > MAX_FILE_BYTES:
        raise ScenarioError([Problem(file, 1, 1, "", f"larger than {MAX_FILE_BYTES} bytes, the most a scenario "
                                                     f"file may hold (MAX_FILE_BYTES); split it")])


def compose_docs(text: str, file: str) -> list[yaml.Node]:
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
                    CONSTRUCTOR.construct_yaml_int(node)
                except ValueError:
                    problems.append(Problem(*where, f"an integer of {len(node.value)} characters; no number a "
                                                    f"scenario needs has more than 20 digits"))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((x, depth + 1) for x in node.value)
        else:
            stack.extend((x, depth + 1) for kv in node.value for x in kv)
    if problems:
        raise ScenarioError(problems)
