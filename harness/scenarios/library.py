"""The scenario library that ships with uno-hil: `scenarios/<kind>/` (the unattended library, by unit kind)
and `attended/` (the bench's scenarios that wait for a person, run with --attended).

Installed, both are package data of `unohil.library` (pyproject maps it to the checkout's fixtures/), so
they sit beside the code wherever pip put it (a venv, --user, a system prefix); in a checkout they are
fixtures/ itself. `unohil library` says where and what (harness/cli/library.py)."""
from __future__ import annotations

from pathlib import Path

from unohil.harness.errors import HarnessError

SETS = ("scenarios", "attended")


def _roots() -> list[Path]:
    """Where the library may be, in order: the checkout's fixtures/ (an editable install or a source tree),
    then the installed package's library/ beside unohil.harness."""
    package = Path(__file__).resolve().parents[2]       # the checkout, or site-packages/unohil
    return [package / "fixtures", package / "library"]


def library_root() -> Path | None:
    """The folder holding scenarios/ (and attended/); None if there is none."""
    for root in _roots():
        if (root / "scenarios").is_dir() and any((root / "scenarios").rglob("*.yaml")):
            return root
    return None


def library_dir() -> Path | None:
    """The unattended library's folder (one sub-folder per unit kind); None if there is none."""
    root = library_root()
    return None if root is None else root / "scenarios"


def _required() -> Path:
    """The unattended library's folder; raises when it is missing: running nothing must never look like passing."""
    found = library_dir()
    if found is None:
        raise HarnessError("the scenario library is not installed (looked in "
                           f"{' and '.join(str(r) for r in _roots())}): reinstall uno-hil, or give scenario files")
    return found


def library_paths(kind: str | None = None) -> list[str]:
    """The library's folder (or the folder of one unit kind's scenarios)."""
    found = _required()
    if kind is None:
        return [str(found)]
    mine = found / kind
    if not mine.is_dir() or not any(mine.rglob("*.yaml")):
        raise HarnessError(f"the scenario library {found} has no {kind} scenarios: give scenario files")
    return [str(mine)]


def set_path(name: str) -> Path:
    """A part of the library by name: `scenarios` (the unattended library), `attended`, or a unit kind (its
    folder of the unattended library)."""
    root = _required().parent
    path = root / name if name in SETS else root / "scenarios" / name
    if not path.is_dir():
        known = sorted(SETS) + sorted(p.name for p in (root / "scenarios").iterdir() if p.is_dir())
        raise HarnessError(f"the scenario library {root} has no {name!r} (it has {', '.join(known)})")
    return path
