"""Sample scenarios many test files run, kept once in fixtures/samples/ (not shipped: the package ships
fixtures/scenarios/ and fixtures/attended/ only) and read here, not copied from file to file."""
from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "fixtures" / "samples"


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.yaml").read_text(encoding="utf-8")


#: One clean win for A on a fixed 2 s countdown. A blank line first keeps the line numbers the tests were
#: written against (the scenario's name on line 2).
GOOD = "\n" + sample("clean_win")
