"""Building clib/ (the C library, its tests, fuzzer and sample firmware) from Python: make in a build
directory of the caller's, never in the tree. Used by the tests and by tools.clib_fuzz."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIB = ROOT / "clib"


class BuildError(RuntimeError):
    """make failed; the message has its output."""


def tool(name: str, env_flag: str) -> tuple[str | None, bool]:
    """(path of the tool or None, whether its absence is an error: CI sets env_flag where it installed it)."""
    return shutil.which(name), bool(os.environ.get(env_flag))


def make(build: Path, *targets: str, cc: str | None = None, timeout: float = 300, **variables: str) -> str:
    """make -C clib BUILD=build targets...; returns its output."""
    args = ["make", "-s", "-C", str(CLIB), f"BUILD={build}"]
    if cc:
        args.append(f"CC={cc}")
    args += [f"{k}={v}" for k, v in variables.items()]
    r = subprocess.run(args + list(targets), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise BuildError(f"make {' '.join(targets)} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout + r.stderr
