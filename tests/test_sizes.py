"""Rooms of one job: no module over MAX_MODULE_LINES lines and no function over MAX_FUNCTION_LINES, in the
code and in the tests. The ones still over are listed by name with their size today: each may only shrink,
and one that comes under its limit must leave the list, so the list shrinks and a new offender fails.
The five largest modules and functions are printed (pytest -s, or -rP) for whoever splits the next."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = ("protocol", "emulator", "harness", "tools", "tests")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: Python files written by a generator rather than by hand (none today: the generators write the SPEC's
#: tables, the C library and the vectors, not Python).
GENERATED: frozenset[str] = frozenset()

#: Modules over MAX_MODULE_LINES today -> their lines: to be split, never to grow (none today).
MODULES_OVER: dict[str, int] = {}
#: Functions over MAX_FUNCTION_LINES today ("path:qualified name") -> their lines (none today).
FUNCTIONS_OVER: dict[str, int] = {}


def _files() -> list[Path]:
    out = []
    for tree in TREES:
        out += [p for p in sorted((ROOT / tree).rglob("*.py")) if p.relative_to(ROOT).as_posix() not in GENERATED]
    return out


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function, methods named Class.method, nested ones outer.inner."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                yield name, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + ".")


def _measure() -> tuple[dict[str, int], dict[str, int]]:
    modules, functions = {}, {}
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        modules[rel] = _lines(text)
        for name, size in _functions(ast.parse(text, rel)):
            functions[f"{rel}:{name}"] = size
    return modules, functions


MODULES, FUNCTIONS = _measure()


def test_the_largest_are_printed_and_none_new_is_over_its_limit():
    for title, sizes in (("modules", MODULES), ("functions", FUNCTIONS)):
        print(f"\nthe five largest {title}:")
        for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:5]:
            print(f"  {size:5d}  {name}")
    new_modules = {m: n for m, n in MODULES.items() if n > MAX_MODULE_LINES and m not in MODULES_OVER}
    new_functions = {f: n for f, n in FUNCTIONS.items() if n > MAX_FUNCTION_LINES and f not in FUNCTIONS_OVER}
    assert not new_modules, f"modules over {MAX_MODULE_LINES} lines: split them by job: {new_modules}"
    assert not new_functions, f"functions over {MAX_FUNCTION_LINES} lines: split them: {new_functions}"


@pytest.mark.parametrize("listed, sizes, limit", [(MODULES_OVER, MODULES, MAX_MODULE_LINES),
                                                  (FUNCTIONS_OVER, FUNCTIONS, MAX_FUNCTION_LINES)],
                         ids=["modules", "functions"])
def test_the_list_of_those_still_over_only_shrinks(listed, sizes, limit):
    grown = {name: (was, sizes[name]) for name, was in listed.items() if sizes.get(name, 0) > was}
    gone = [name for name in listed if sizes.get(name, 0) <= limit]
    assert not grown, f"grew past the size they are allowed while they wait to be split (was, now): {grown}"
    assert not gone, f"no longer over {limit} lines (or no longer there): take them off the list: {gone}"


def test_the_measure_sees_what_it_must():
    """The walk finds this file and its functions, nested names qualified, and counts lines as an editor does."""
    here = Path(__file__).relative_to(ROOT).as_posix()
    assert here in MODULES and f"{here}:_functions" in FUNCTIONS
    found = dict(_functions(ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n")))
    assert found == {"A.f": 3, "A.f.g": 2}
    assert _lines("a\nb\n") == 2 and _lines("a\nb") == 2 and _lines("") == 0
