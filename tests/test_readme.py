"""README is a newcomer's first screen: what uno-hil is, the two set-up commands, a scenario of twelve
lines and what running it prints (run here, so the page cannot drift from the code), a few words
defined, the layout, then every document linked. At most 1,200 words; the rest lives in docs/."""
from __future__ import annotations

import re
from pathlib import Path

from unohil.harness.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SET_UP = ["python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/unohil run",
          "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/pytest -q -n 2"]
#: .md files a document names that the repository does not have, left for their owners to mend (none now)
MISSING_MD_LEFT: set[tuple[str, str]] = set()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


def test_it_is_short():
    assert len(README.split()) <= 1200


def test_the_first_screen_is_what_it_is_then_the_two_commands():
    before = README.split("```sh", 1)[0]
    assert "uno-hil" in before and len(re.findall(r"[.!?](\s|$)", before.split("\n", 1)[1])) == 2, before
    assert _blocks("sh")[0].splitlines() == SET_UP


def test_the_scenario_shown_runs_and_prints_what_is_shown(tmp_path, capsys, monkeypatch):
    scenario, = _blocks("yaml")
    assert len(scenario.splitlines()) == 12
    name = re.search(r"`([\w.-]+\.yaml)`:", README)[1]
    (tmp_path / name).write_text(scenario)
    monkeypatch.chdir(tmp_path)
    shown = re.search(r"^```\n(.*?)^```", README.split(f"unohil run {name}", 1)[1], flags=re.S | re.M)[1].splitlines()
    assert f".venv/bin/unohil run {name}" in README
    assert main(["run", name]) == 0
    printed = capsys.readouterr().out.splitlines()
    # the same lines, but for the wall-clock time the run took
    assert [re.sub(r" in [\d.]+ s$", "", x) for x in printed] == [re.sub(r" in [\d.]+ s$", "", x) for x in shown]


def test_a_glossary_of_five_to_eight_words():
    words = re.search(r"^## Words\n(.*?)^## ", README, flags=re.S | re.M)[1]
    terms = re.findall(r"^- \*\*([a-z ]+)\*\*:", words, flags=re.M)
    assert 5 <= len(terms) <= 8 and {"race", "anchor", "verdict", "unit", "rig"} <= set(terms), terms


def test_the_layout_names_every_top_folder():
    layout = re.search(r"^## Layout\n(.*?)^## ", README, flags=re.S | re.M)[1]
    named = set(re.findall(r"^- `(\w+)/`", layout, flags=re.M))
    assert named == {"protocol", "emulator", "harness", "clib", "fixtures", "tools", "tests"}
    assert all((ROOT / name).is_dir() for name in named)


def test_every_document_is_linked_from_readme_and_says_what_it_is_for():
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", README))
    docs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert docs <= linked, f"not linked from README: {docs - linked}"
    for doc in docs:
        opening = (ROOT / doc).read_text(encoding="utf-8").split("\n\n")[1]
        assert len(opening.split()) >= 10, f"{doc} opens without saying what it is for"


def test_no_document_names_a_markdown_file_the_repository_lacks():
    have = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    named = set()
    for tree in ("docs", "protocol", "emulator", "harness", "tools", "tests", "clib", "fixtures"):
        for path in (ROOT / tree).rglob("*"):
            if path.suffix in (".md", ".py", ".yaml", ".c", ".h") and path.is_file() and path != Path(__file__):
                rel = path.relative_to(ROOT).as_posix()
                named |= {(rel, m) for m in re.findall(r"\b([A-Za-z][\w-]*\.md)\b", path.read_text(errors="replace"))}
    named |= {("README.md", m) for m in re.findall(r"\b([A-Za-z][\w-]*\.md)\b", README)}
    missing = {(rel, m) for rel, m in named if m not in have}
    assert missing == MISSING_MD_LEFT, f"names of missing files (mend them, or the list if one was mended): {missing}"
