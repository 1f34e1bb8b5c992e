"""Which store a command records into: its --store, else UNOHIL_STORE, else `store` in the [tool.unohil]
table of the nearest pyproject.toml (so CI turns recording on once); none of them: no store. --store off
(or UNOHIL_STORE=off) turns it off whatever the configuration says."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "UNOHIL_STORE"
OFF = ("off", "none", "")


def add_store_argument(p, what: str = "record the run in") -> None:
    p.add_argument("--store", metavar="WHERE",
                   help=f"{what} a results store: a SQLite file, `default` (a file in the user's data "
                        f"folder), or postgresql://user@host/db; `off`: none (default: ${ENV}, else "
                        "`store` under [tool.unohil] in pyproject.toml)")


def configured(given: str | None) -> str | None:
    """The store the command is to use, or None."""
    for value in (given, os.environ.get(ENV), _from_pyproject()):
        if value is not None:
            return None if value.strip().lower() in OFF else value
    return None


def _from_pyproject(start: Path | None = None) -> str | None:
    try:
        import tomllib
    except ImportError:         # Python 3.10: no TOML reader in the standard library; the variable still works
        return None
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            try:
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("unohil", {})
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return None
            value = table.get("store") if isinstance(table, dict) else None
            return str(value) if value is not None else None
    return None


def record_into(where: str | None, doc_of, command: str, results_path: str | None = None) -> int | None:
    """Record a command's results document (doc_of(): built only when there is a store) and say where; a store
    that cannot be reached is said on stderr and changes nothing else (the results files are written already,
    and the command's exit status stays its own). The stored run's id, or None."""
    if where is None:
        return None
    from unohil.harness.store.backend import Store, StoreError, shown
    from unohil.harness.store.record import record
    try:
        with Store.open(where) as store:
            run_id = record(store, doc_of(), command, os.path.abspath(results_path) if results_path else None)
    except StoreError as exc:
        print(f"error: --store: not recorded: {exc}", file=sys.stderr)
        return None
    print(f"recorded as run {run_id} in store {shown(store.where)}", file=sys.stderr)
    return run_id
