"""A real board's path, end to end, with a stand-in board (tools/standin_board.py: the POSIX sample firmware
behind a serial adapter that outlives it) and labgrid's own drivers: FlashromDriver flashes it (its
flashrom tool the stand-in's programmer), ExternalPowerDriver switches its outlet. What runs is
`unohil run --firmware IMAGE --lifecycle env.yaml#bench --device TTY`, as on a bench with a real board."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from test_lifecycle import labgrid  # noqa: F401  (the fixture: skip, or fail in CI, without labgrid)
from tools.clib_build import ROOT, BuildError, make, tool

BOARD = ROOT / "tools" / "standin_board.py"
RACE = (ROOT / "fixtures" / "samples" / "clean_win.yaml").read_text()


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Two builds of the Showdown firmware told apart by IDENTITY's firmware version: 0.1.0 and 0.1.7."""
    path, required = tool("cc", "UNOHIL_REQUIRE_CC")
    if path is None:
        if required:
            pytest.fail("no cc and UNOHIL_REQUIRE_CC is set")
        pytest.skip("no cc")
    out = {}
    for version, flags in (("0.1.0", "-O2"), ("0.1.7", "-O2 -DFIRMWARE_PATCH=7")):
        build = tmp_path_factory.mktemp("firmware")
        try:
            make(build, "firmware", CFLAGS=flags)
        except BuildError as exc:
            pytest.fail(str(exc))
        out[version] = build / "showdown-posix"
    return out


def board_command(*args: str) -> str:
    r = subprocess.run([sys.executable, str(BOARD), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def bench(labgrid, tmp_path):  # noqa: F811
    """A blank stand-in board serving in tmp_path/board and a labgrid environment whose target `bench` flashes
    it with FlashromDriver and powers it with ExternalPowerDriver; yields (its tty, the environment file,
    the board's directory)."""
    where = tmp_path / "board"
    board = subprocess.Popen([sys.executable, str(BOARD), "serve", str(where), "--serial", "4242"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        tty = board.stdout.readline().strip()
        assert tty.startswith("/dev/"), board.stderr.read()
        env = tmp_path / "env.yaml"
        env.write_text(environment(where))
        yield tty, f"{env}#bench", where
    finally:
        board.terminate()
        board.wait(timeout=30)
    assert board.returncode == 0, board.stderr.read()


def environment(where, programmer_dir=None) -> str:
    power = f"{sys.executable} {BOARD} power"
    return f"""targets:
  bench:
    resources:
      Flashrom:
        programmer: "standin:{programmer_dir or where}"
    drivers:
      FlashromDriver: {{}}
      ExternalPowerDriver:
        cmd_on: "{power} on {where}"
        cmd_off: "{power} off {where}"
        delay: 0.1
tools:
  flashrom: {BOARD}
"""


def started_run(*args) -> subprocess.Popen:
    """unohil run ARGS, started: its output read as it comes."""
    return subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def run(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    """unohil run ARGS, to its end."""
    return subprocess.run([sys.executable, "-m", "unohil.harness.cli", "run", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_firmware_flashes_the_board_through_labgrids_flasher_and_the_unit_runs_that_image(bench, builds, tmp_path):
    """A blank board (silent) gets 0.1.0, then 0.1.7: each run's unit says the version it was given."""
    tty, lifecycle, where = bench
    assert board_command("status", str(where)) == "ok on 0"           # blank: powered, nothing runs
    (tmp_path / "race.yaml").write_text(RACE)
    for version in ("0.1.0", "0.1.7"):
        r = run(str(tmp_path / "race.yaml"), "--device", tty, "--lifecycle", lifecycle, "--firmware",
                str(builds[version]), "--json", str(tmp_path / "r.json"), "-q")
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr
        (device,) = json.loads((tmp_path / "r.json").read_text())["devices"]
        assert (device["firmware"], device["serial"]) == (version, 4242)
        assert (where / "flash").read_bytes() == builds[version].read_bytes()


def test_a_board_that_hangs_mid_run_is_power_cycled_through_labgrids_power_driver(bench, builds, tmp_path):
    """The board's firmware wedged (SIGSTOP) after the first race: the race it cuts is a link error naming the
    power cycle, the board runs a new firmware process, the race after passes."""
    tty, lifecycle, where = bench
    for i in range(3):
        (tmp_path / f"r{i}.yaml").write_text(RACE.replace("name: clean win", f"name: clean win {i}"))
    p = started_run(*(str(tmp_path / f"r{i}.yaml") for i in range(3)), "--device", tty, "--lifecycle", lifecycle,
               "--firmware", str(builds["0.1.0"]), "--format", "lines", "--json", str(tmp_path / "r.json"))
    lines, pid_before = [], None
    try:
        for line in p.stdout:
            lines.append(line)
            if line.startswith("pass") and pid_before is None:
                pid_before = board_command("status", str(where)).split()[2]
                time.sleep(0.5)                 # into the second race's countdown (or just before it)
                assert board_command("hang", str(where)) == "ok"
        p.wait(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
    out = "".join(lines)
    assert p.returncode == 1, out + p.stderr.read()
    races = {s["name"]: s["results"][0] for s in json.loads((tmp_path / "r.json").read_text())["scenarios"]}
    assert races["clean win 0"]["status"] == "pass"
    assert races["clean win 1"]["status"] == "link-error"
    assert "the unit stopped answering: power-cycled (labgrid target bench)" in races["clean win 1"]["error"]
    assert races["clean win 2"]["status"] == "pass", races["clean win 2"]
    assert board_command("status", str(where)).split()[2] not in (pid_before, "0")


def test_a_flasher_that_fails_is_one_error_naming_labgrids_driver(labgrid, builds, tmp_path):  # noqa: F811
    env = tmp_path / "env.yaml"
    env.write_text(environment(tmp_path / "board", programmer_dir=tmp_path / "nowhere"))
    r = run("--device", "emu://showdown", "--lifecycle", f"{env}#bench", "--firmware", str(builds["0.1.0"]),
            timeout=120)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr
    assert f"labgrid target bench: FlashromDriver could not flash {builds['0.1.0']}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
