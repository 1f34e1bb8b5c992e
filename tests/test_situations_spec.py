"""The catalogue's conformance situations (messages.yaml `units.KIND.situations`) against the refusals
SPEC.md names in each unit's section: every input the SPEC says is refused bad_value is provoked by
conform (by `refused_value`, or, for a Player button, by the button beyond IDENTITY.players), and a
unit whose SPEC names wrong_state refusals has a `refused` situation refusing one of those inputs."""
from __future__ import annotations

import re

import pytest

from unohil.harness.conform.checks.commands import button_beyond
from unohil.protocol import catalogue as cat
from tools.spec_tables import SPEC_PATH

SPEC = SPEC_PATH.read_text(encoding="utf-8")


def unit_section(section: str) -> str:
    start = SPEC.index(f"\n## {section}. ")
    end = SPEC.find("\n## ", start + 1)
    return SPEC[start:end]


def passages(text: str) -> list[str]:
    """A section as what one rule is said in: each table row, each list item, each paragraph."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("|", "#", "- ")) or not out or out[-1].startswith("|"):
            out.append(line)
        else:
            out[-1] += " " + line.strip()
    return out


def refused_inputs(kind: str, error: str) -> set[str]:
    """The inputs of `kind` that a passage of its section says are refused with `error`: an input is
    named in backticks (a range `player_0`..`player_7` too), as an edge (`load_cards release`) or in a
    state table's row."""
    inputs = set(cat.ENUM_VALUES[f"{kind}_input"])
    said = re.compile(rf"refused[:\s]+(?:as\s+)?`?{error}\b")
    named: set[str] = set()
    for text in passages(unit_section(cat.UNITS[kind].section)):
        if not said.search(text):
            continue
        for first, last in re.findall(r"`(\w+_\d+)`\.\.`(\w+_\d+)`", text):
            stem, lo = first.rsplit("_", 1)
            named |= {f"{stem}_{i}" for i in range(int(lo), int(last.rsplit("_", 1)[1]) + 1)}
        if text.startswith("|"):
            named |= set(re.findall(r"\w+", text))    # a state table's row: its input column
        for quoted, edge in re.findall(r"`(\w+)`|\b(\w+) (?:press|release)\b", text):
            named.add(quoted or edge)
    return named & inputs


KINDS = sorted(cat.UNITS)


def test_the_reader_finds_the_refusals_spec_names():
    assert refused_inputs("flash", "bad_value") == {f"player_{i}" for i in range(8)} | {"speed_switch"}
    assert refused_inputs("showdown", "bad_value") == {"load_cards"}
    assert "play_pause" in refused_inputs("flash", "wrong_state")


@pytest.mark.parametrize("kind", KINDS)
def test_every_bad_value_refusal_the_spec_names_is_provoked(kind):
    situation = cat.UNITS[kind].situations["refused_value"]
    provoked = {situation[-1][0]} if situation else set()
    roles = cat.UNITS[kind].roles
    if roles is not None and button_beyond(kind, 2) is not None:
        provoked |= set(roles.buttons)      # the check presses the first button IDENTITY.players lacks
    missing = refused_inputs(kind, "bad_value") - provoked
    assert not missing, f"SPEC {cat.UNITS[kind].section} refuses {sorted(missing)} as bad_value; " \
                        f"units.{kind}.situations.refused_value provokes none of them"


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrong_state_refusal_the_spec_names_is_provoked(kind):
    named = refused_inputs(kind, "wrong_state")
    situation = cat.UNITS[kind].situations["refused"]
    if named:
        assert situation and situation[-1][0] in named, \
            f"units.{kind}.situations.refused should refuse one of {sorted(named)} (SPEC {cat.UNITS[kind].section})"
