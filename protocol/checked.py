"""The catalogue's files as checked data, kept beside the bytecode so the next process skips the check.

Checking messages.yaml and decisions.yaml (schema.py: YAML composed node by node) is most of what importing
the catalogue costs. The data it gives depends only on those files' text and on the checker's code, so it is
kept under a digest of all of them, where Python keeps this package's bytecode (__pycache__, or
PYTHONPYCACHEPREFIX), and written only where Python writes bytecode. A changed file is a new digest, and so
is checked again (and its problems reported at file:line:col as ever). marshal holds the data (dicts, lists,
strings, numbers: what the checker returns) and cannot run code.
"""
from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Callable

_PACKAGE = __package__
# the code the checked data depends on, besides the files themselves
_CHECKER = ("schema.py", "schema_nodes.py", "schema_units.py", "schema_rig.py", "rules.py", "expr.py", "fieldtypes.py",
            "checked.py")


def text(name: str) -> str:
    return resources.files(_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def digest(texts: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for t in (*texts, *(text(name) for name in _CHECKER)):
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def cache_dir() -> Path | None:
    """Where this package's bytecode goes (None when the package is not files, e.g. in a zip)."""
    try:
        return Path(importlib.util.cache_from_source(__file__)).parent
    except (NotImplementedError, TypeError, ValueError):
        return None


def load(stem: str, texts: tuple[str, ...], check: Callable[[], object]) -> object:
    """check()'s result for these texts: the kept one if there is one, else check() run (and kept)."""
    where = cache_dir()
    try:
        key = digest(texts)
    except OSError:
        key = None          # the checker installed without its sources: nothing to key the data by
    if where is None or key is None:
        return check()
    name = f"{stem}.{key}.{sys.implementation.cache_tag}.marshal"
    try:
        return marshal.loads((where / name).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        pass            # not kept yet, or unreadable: checked again
    data = check()
    if not sys.dont_write_bytecode:
        _keep(where, stem, name, data)
    return data


def _keep(where: Path, stem: str, name: str, data: object) -> None:
    """Write the file whole or not at all (other processes may read it meanwhile); drop older ones of this stem."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=f".{stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(data))
            os.replace(tmp, where / name)
        except BaseException:
            os.unlink(tmp)
            raise
        for old in where.glob(f"{stem}.*.{sys.implementation.cache_tag}.marshal"):
            if old.name != name:
                old.unlink(missing_ok=True)
    except OSError:
        pass            # a folder we may not write: every process checks the files itself, as before
