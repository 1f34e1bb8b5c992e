"""The command line's small things: --version, help for every option, where help points, a missing
path's message, and conform's skip reasons on the console."""
import argparse
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from unohil.harness.cli.app import build_parser
from unohil.protocol import catalogue as cat

ROOT = Path(__file__).resolve().parent.parent


def unohil(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-m", "unohil.harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=300)


def test_version_names_the_package_and_the_protocol():
    run = unohil("--version")
    assert run.returncode == 0
    assert run.stdout.strip() == f"unohil {version('uno-hil')}, protocol {cat.MAJOR}.{cat.MINOR}"


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [("unohil", parser)] + [(f"unohil {name}", p) for name, p in sub.choices.items()]


@pytest.mark.parametrize("prog, parser", _commands(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_option_of_every_command_has_help(prog, parser):
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.help and action.help is not argparse.SUPPRESS, f"{prog} {action.option_strings or action.dest}"


def test_emulate_help_points_at_the_faults_document():
    run = unohil("emulate", "--help")
    assert run.returncode == 0
    text = " ".join(run.stdout.split())
    assert "faults.md in the uno-hil docs" in text and "emulator/faults.py" not in text


def test_a_missing_path_says_so_without_an_empty_key():
    run = unohil("validate", "nonexist/")
    assert run.returncode == 2
    assert run.stderr.splitlines()[0] == "nonexist/: no such file or directory"
    run = unohil("run", "nonexist/", "also-missing.yaml")
    assert run.returncode == 2
    assert run.stderr.splitlines()[:2] == ["nonexist/: no such file or directory",
                                           "also-missing.yaml: no such file or directory"]


def test_conform_prints_every_skip_with_its_reason():
    # a base of 8 has no button to refuse: the registration scenario pressing the first one it lacks does not apply
    run = unohil("conform", "--device", "emu://flash?clock=virtual&without=time_sync&players=8",
                 "-k", "refused and registration")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    time_sync = [ln for ln in lines if ln.startswith("skip  4.6 Time sync: ")]
    assert time_sync and all(ln.endswith(": the unit does not have capability time_sync") for ln in time_sync)
    # a skip the SPEC does not count against the unit (no gap) is listed too, with its reason
    skipped = lines.index(next(ln for ln in lines if ln.startswith("skipped (")))
    assert all(": " in ln and not ln.endswith(": ") for ln in lines[skipped + 1:] if ln.startswith("  "))
