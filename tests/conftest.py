import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _spawn_emulator(*args: str):
    """Start `python -m emulator ...` in its own process; yield (process, first output lines)."""
    proc = subprocess.Popen([sys.executable, "-m", "emulator", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc


@pytest.fixture
def emulator_process():
    """Factory: start an emulator process and return the lines it printed (paths or host:port)."""
    procs = []

    def start(*args: str, count: int = 1):
        proc = _spawn_emulator(*args)
        procs.append(proc)
        lines = []
        deadline = time.monotonic() + 20
        while len(lines) < count:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"emulator exited: {proc.stderr.read()}")
            lines.append(line.strip())
            if time.monotonic() > deadline:
                raise RuntimeError("emulator did not start")
        return proc, lines

    yield start
    for p in procs:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()

pytest_plugins = ["pytester"]
