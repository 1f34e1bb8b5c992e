"""Every file or folder the documents name is one the repository has: docs/*.md and README.md, their
`code` spans that look like a path (a name with a file suffix, or ending in /) and their relative links.

A reference resolves against the document's folder, the repository's root, or (written short, as the
package lists of docs/architecture.md do: `run/hooks.py`, `app.py`) the end of some path of the tree.
Absolute paths are the machine's; names with a placeholder in capitals (`KIND.c`, `game-N.yaml`) stand for many files and are not looked up;
files a reader makes or a build writes are listed below with why."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
SUFFIXES = "py|md|yaml|yml|toml|json|jsonl|c|h|ld|elf|ini|txt|cfg|sh|html|vcd|xml|csv"
CODE_PATH = re.compile(rf"`([\w./-]+\.(?:{SUFFIXES})(?:/\.\w+)?|[\w.-]+(?:/[\w.-]+)*/)`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PLACEHOLDER = re.compile(r"(?:^|[^A-Za-z])[A-Z]+(?:[^A-Za-z]|$)")
#: names a document gives to files that are not the repository's: a reader's, or a build's output
NOT_OURS = {
    "pytest.ini": "the reader's own pytest configuration",
    "first.yaml": "the scenario README shows, saved by the reader",
    "showdown-mps2_an385-rx16.elf": "built by make -C clib qemu",
}


def _tree() -> tuple[set[str], set[str]]:
    """Every file and every folder of the repository, as paths from its root."""
    files, folders = set(), set()
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if rel.parts[0].startswith(".") or any(p in ("__pycache__", "node_modules") or p.endswith(".egg-info")
                                               for p in rel.parts):
            continue
        (folders if path.is_dir() else files).add(rel.as_posix())
    return files, folders


FILES, FOLDERS = _tree()


def references(text: str) -> list[str]:
    """The path-like references of a document's text; `x.h/.c` is the pair x.h and x.c."""
    refs = []
    for ref in CODE_PATH.findall(text) + [r for r in LINK.findall(text) if "://" not in r and ":" not in r]:
        stem, pair, other = ref.partition("/.")
        refs += [stem, f"{stem.rsplit('.', 1)[0]}.{other}"] if pair and "/" not in other else [ref]
    return refs


def resolves(ref: str, doc: Path) -> bool:
    if ref.startswith(("/", "~")):
        return True                 # the machine's (/etc/ser2net.yaml), not the repository's
    ref = ref.removeprefix("./")
    known = FOLDERS if ref.endswith("/") else FILES
    ref = ref.rstrip("/")
    for base in (doc.parent, ROOT):
        full = (base / ref).resolve()
        if full.is_relative_to(ROOT) and full.relative_to(ROOT).as_posix() in known:
            return True
    return any(p == ref or p.endswith("/" + ref) for p in known)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_a_document_names_exists(doc):
    text = doc.read_text(encoding="utf-8")
    missing = sorted({r for r in references(text) if not resolves(r, doc) and r.rsplit("/", 1)[-1] not in NOT_OURS
                      and not PLACEHOLDER.search(r.rsplit("/", 1)[-1])})
    assert not missing, f"{doc.relative_to(ROOT)} names what the repository does not have: {missing}"


def test_the_check_finds_a_missing_file_and_reads_pairs_and_placeholders():
    doc = ROOT / "docs" / "architecture.md"
    gone = "NO_SUCH_PAGE" + ".md"      # spelt apart: test_readme looks for .md names in this file's text too
    assert references(f"see `{gone}`, `clib/`, [x](running.md#top) and `uhil_rng.h/.c`") == [
        gone, "clib/", "uhil_rng.h", "uhil_rng.c", "running.md"]
    assert not resolves(gone, doc) and not resolves("harness/nowhere/", doc)
    assert resolves("run/hooks.py", doc) and resolves("running.md", doc) and resolves("clib/", doc)
    assert PLACEHOLDER.search("game-N.yaml") and PLACEHOLDER.search("KIND.c") and not PLACEHOLDER.search("unit.h")


def _module_lists():
    """Packages whose docstring lists their modules (at least three of its own named x.py), with the
    names it gives and the modules the package has."""
    import ast
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        if init.relative_to(ROOT).parts[0].startswith("."):
            continue
        text = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        named = set(re.findall(r"\b(\w+)\.py\b", text))
        have = {p.stem for p in init.parent.glob("*.py")} - {"__init__", "__main__"}
        if len(named & have) >= 3:
            yield init.parent.relative_to(ROOT).as_posix(), named, have


def test_a_package_that_lists_its_modules_lists_every_one():
    lists = list(_module_lists())
    assert {"emulator", "harness/rig", "harness/games"} <= {pkg for pkg, _, _ in lists}
    # the links package names its modules by scheme, not as a list of the package
    short = {pkg: sorted(have - named) for pkg, named, have in lists if have - named and pkg != "harness/links"}
    assert not short, f"modules a package's docstring leaves out of its list: {short}"
