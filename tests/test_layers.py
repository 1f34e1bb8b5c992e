"""The layer rules of docs/architecture.md, checked against every import in the tree.

The order is read from the document's ```layers blocks (one for the top-level packages, one for the
harness's packages; a row per layer, top first): a package imports its own modules and the packages of
the rows below its own, never a row above nor a neighbour on its row. Every import counts, at module level
and inside functions (the lazy ones too). What breaks the rule today is listed below by module, each with
why; a new break fails, and so does a listed one that is gone (take it off the list)."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
TOP_LEVEL = ("tools", "harness", "emulator", "protocol")

#: (importing module, imported package) -> why it is allowed for now.
KNOWN = {
    # by design: the harness reaches the emulator only where a URL or a command asks for an emulated unit
    ("harness/links/emu.py", "emulator"): "the emu:// scheme: an in-process emulated unit",
    ("harness/rig/links.py", "emulator"): "the emurig:// pair: an emulated rig wired to an emulated unit",
    ("harness/cli/emulate.py", "emulator"): "the unohil emulate command",
    ("harness/pytest_hil.py", "pytest_plugin"): "the plugin's heavy half shares its light half's names",
    ("harness/store/record.py", "report"): "device_from_identity, a JUnit helper, read by the store",
}


def _layers() -> list[list[list[str]]]:
    """The document's ```layers blocks: each a list of rows, each row the packages on it."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^```layers\n(.*?)^```", text, flags=re.S | re.M)
    return [[line.split("#")[0].split() for line in b.splitlines() if line.split("#")[0].strip()] for b in blocks]


def _rank(rows: list[list[str]]) -> dict[str, int]:
    return {name: i for i, row in enumerate(rows) for name in row}


def _package(rel: str) -> tuple[str, str | None]:
    """(top-level package, harness package or None) of a file of the tree."""
    parts = rel.split("/")
    if parts[0] != "harness" or len(parts) == 1:
        return parts[0], None
    return "harness", parts[1].removesuffix(".py")


def _imported(node: ast.AST) -> list[str]:
    """The unohil modules an import statement names, submodules of a `from X import name` included."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("unohil.")]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("unohil"):
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def _target(module: str) -> tuple[str, str | None] | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None
    top = {"library": "harness"}.get(parts[1], parts[1])
    if top == "harness" and len(parts) > 2:
        return "harness", parts[2]
    return top, None


def _imports_of(rel: str, source: str):
    """(module, line, importer's (top, harness package), imported (top, harness package)) of every import of
    one file, at module level and inside functions."""
    for node in ast.walk(ast.parse(source, rel)):
        for module in _imported(node):
            target = _target(module)
            if target is not None:
                yield rel, node.lineno, _package(rel), target


def _imports():
    """Every import of the tree (_imports_of each file)."""
    for tree in TOP_LEVEL:
        for path in sorted((ROOT / tree).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            yield from _imports_of(rel, path.read_text(encoding="utf-8"))


@functools.cache
def _breaks() -> dict[tuple[str, str], list[str]]:
    return _breaks_among(_imports())


def _breaks_among(imports) -> dict[tuple[str, str], list[str]]:
    """(importing module, imported package) -> where, of the imports that go up or sideways."""
    top_rows, harness_rows = _layers()
    top, inner = _rank(top_rows), _rank(harness_rows)
    out: dict[tuple[str, str], list[str]] = {}
    for rel, line, (mine, my_pkg), (theirs, their_pkg) in imports:
        if mine != theirs:
            ok = top[theirs] > top[mine]
            name = theirs
        elif mine == "harness" and my_pkg is not None and their_pkg is not None and my_pkg != their_pkg:
            if their_pkg not in inner:      # a name imported from the package's __init__, not a package
                continue
            ok = inner[their_pkg] > inner[my_pkg]
            name = their_pkg
        else:
            continue
        where = out.setdefault((rel, name), []) if not ok else []
        if not ok and f"{rel}:{line}" not in where:
            where.append(f"{rel}:{line}")
    return out


def test_the_document_names_every_package_once():
    top_rows, harness_rows = _layers()
    assert sorted(_rank(top_rows)) == sorted(TOP_LEVEL)
    on_disk = {p.name for p in (ROOT / "harness").iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {
        p.stem for p in (ROOT / "harness").glob("*.py") if p.stem != "__init__"}
    named = [n for row in harness_rows for n in row]
    assert len(named) == len(set(named)), "a package on two rows"
    assert set(named) == on_disk, f"not in the document: {on_disk - set(named)}; not on disk: {set(named) - on_disk}"


def test_every_import_goes_down_the_layers():
    new = {k: v for k, v in _breaks().items() if k not in KNOWN}
    assert not new, "imports against docs/architecture.md's layers (a row may import only rows below it): " + \
        "; ".join(f"{', '.join(where)} imports {name}" for (_, name), where in new.items())


def test_the_known_breaks_are_still_there():
    gone = sorted(set(KNOWN) - set(_breaks()))
    assert not gone, f"no longer break the layers: take them off KNOWN: {gone}"


def test_the_check_sees_imports_inside_functions():
    """An upward import inside a method counts as one at module level does; one going down does not."""
    source = ("from unohil.harness.session.driver import Driver\n"
              "class Pool:\n"
              "    def _open(self, url):\n"
              "        from unohil.harness.rig.links import open_rig_unit\n"
              "        return open_rig_unit(url, None)\n")
    found = _breaks_among(_imports_of("harness/run/pool.py", source))
    assert found == {("harness/run/pool.py", "rig"): ["harness/run/pool.py:4"]}


def test_the_runner_names_no_rig_type():
    """Rig mode is an implementation of run/hooks.py's UnitHooks: the runner names none of rig/'s types."""
    text = (ROOT / "harness" / "run" / "runner.py").read_text(encoding="utf-8")
    assert not re.search(r"\bRig[A-Z]\w*", text), re.search(r"\bRig[A-Z]\w*", text).group()
    assert "harness.rig" not in text
