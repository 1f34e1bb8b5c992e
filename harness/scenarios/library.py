"""The scenario library that ships with uno-hil: the checkout's fixtures/scenarios, or the copy a
wheel installs under PREFIX/share/uno-hil/scenarios (pyproject's data-files)."""
from __future__ import annotations

import sys
from pathlib import Path

from unohil.harness.errors import HarnessError

SHARE = Path("share") / "uno-hil" / "scenarios"


def library_dir() -> Path | None:
    """The library's folder, wherever the package is installed; None if there is none."""
    checkout = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"
    for candidate in (checkout, Path(sys.prefix) / SHARE, Path(sys.base_prefix) / SHARE):
        if candidate.is_dir() and any(candidate.rglob("*.yaml")):
            return candidate
    return None


def library_paths(kind: str | None = None) -> list[str]:
    """The library's folder (or the folder of one unit kind's scenarios). Raises when it is missing:
    running nothing must never look like passing."""
    found = library_dir()
    if found is None:
        raise HarnessError("the scenario library is not installed (looked beside the package and under "
                           f"{Path(sys.prefix) / SHARE}): reinstall uno-hil, or give scenario files")
    if kind is None:
        return [str(found)]
    mine = found / kind
    if not mine.is_dir() or not any(mine.rglob("*.yaml")):
        raise HarnessError(f"the scenario library {found} has no {kind} scenarios: give scenario files")
    return [str(mine)]
