"""The package as users get it: a wheel installed in a fresh venv, run outside the repo folder."""
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_a_wheel_outside_the_repo_runs_and_conforms_with_the_shipped_library(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True)
    (wheel,) = wheels.glob("uno_hil-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True)
    away = tmp_path / "elsewhere"
    away.mkdir()
    unohil = str(env_dir / "bin" / "unohil")
    run = subprocess.run([unohil, "run", "-q"], cwd=away, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failed," in run.stdout and " passed" in run.stdout
    conform = subprocess.run([unohil, "conform", "--device", "emu://showdown", "-q"], cwd=away,
                             capture_output=True, text=True)
    assert conform.returncode == 0 and "CONFORMS" in conform.stdout, conform.stdout + conform.stderr
    assert "7 Showdown unit" in conform.stdout
