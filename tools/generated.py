"""What every generator of checked-in files under tools/ shares: checking the files against fresh
output, writing them, and the --write / --check command line."""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Callable


def stale(outputs: dict[Path, str]) -> list[str]:
    """One problem per file that is missing or differs from its fresh text (with a diff excerpt)."""
    problems = []
    for path, fresh in outputs.items():
        if not path.exists():
            problems.append(f"{path} is missing")
            continue
        old = path.read_text(encoding="utf-8")
        if old != fresh:
            diff = list(difflib.unified_diff(old.splitlines(), fresh.splitlines(), f"{path.name} (on disk)",
                                             f"{path.name} (from the catalogue)", lineterm="", n=1))
            problems.append(f"{path} is stale:\n" + "\n".join(diff[:60]))
    return problems


def write(outputs: dict[Path, str]) -> None:
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"{path}: written")
        else:
            print(f"{path}: up to date")


def cli(argv: list[str] | None, prog: str, doc: str, outputs: Callable[[], dict[Path, str]],
        check: Callable[[], list[str]], what: Path) -> int:
    """python -m PROG --write | --check over the files outputs() gives; check() lists the problems."""
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=doc.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help=f"regenerate {what}")
    g.add_argument("--check", action="store_true", help=f"exit 1 if {what} is stale")
    args = ap.parse_args(argv)
    if args.write:
        write(outputs())
        return 0
    problems = check()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"run: python -m {prog} --write", file=sys.stderr)
        return 1
    print(f"{what}: up to date")
    return 0
