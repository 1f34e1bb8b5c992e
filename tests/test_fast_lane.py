"""The fast lane's list (tests/lanes.py) names only tests that exist, and leaves every test file but the
ALL_SLOW ones with tests in the lane, so `pytest -m "not slow"` still touches every part of the project."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lanes import ALL_SLOW, SLOW_TESTS

HERE = Path(__file__).resolve().parent


def _tests(path: Path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")}


@pytest.mark.parametrize("file", sorted(SLOW_TESTS))
def test_every_name_listed_is_a_test_of_its_file(file):
    assert (HERE / file).is_file(), f"{file} is gone: take it off tests/lanes.py"
    unknown = SLOW_TESTS[file] - _tests(HERE / file)
    assert not unknown, f"no such tests in {file} (renamed? mend tests/lanes.py): {unknown}"


def test_every_file_but_the_all_slow_ones_keeps_tests_in_the_fast_lane():
    emptied = {p.name for p in HERE.glob("test_*.py") if _tests(p) and _tests(p) <= SLOW_TESTS.get(p.name, set())}
    assert emptied == ALL_SLOW, f"files with no test in the fast lane: {emptied} (ALL_SLOW says {ALL_SLOW})"


def test_the_marker_is_given(request):
    """conftest.py marks the listed tests slow: this file's own tests are not, the listed ones are."""
    items = request.session.items
    marked = {(i.path.name, i.originalname) for i in items if i.get_closest_marker("slow")}
    assert ("test_fast_lane.py", "test_the_marker_is_given") not in marked
    listed_here = {(i.path.name, i.originalname) for i in items
                   if i.originalname in SLOW_TESTS.get(i.path.name, ())}
    assert listed_here <= marked
