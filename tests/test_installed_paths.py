"""The installed user's paths: the library and its attended set found wherever uno-hil is installed, `unohil
library` saying where and what, help texts naming no path of the repository, and `unohil run` against one
device playing that device's part of the library, with an estimate first when it will take a while. (A wheel
in a fresh venv: tests/test_packaging.py.)"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from unohil.harness.cli import main
from unohil.harness.cli.app import build_parser
from unohil.harness.cli.plan import device_time
from unohil.harness.scenarios.lead import REAL_LEAD_US, VIRTUAL_LEAD_US
from unohil.harness.scenarios.load import loads
from test_harness_scenarios import GOOD

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "fixtures" / "scenarios"
ATTENDED = ROOT / "fixtures" / "attended"


def documents(folder: Path) -> dict[str, int]:
    """Scenarios per unit kind in the YAML files under folder, read as plain YAML (not by the loader under test)."""
    out: dict[str, int] = {}
    for f in sorted(folder.rglob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            for sc in doc if isinstance(doc, list) else [doc]:
                out[sc["unit"]] = out.get(sc["unit"], 0) + 1
    return out


def unohil(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    return subprocess.run([sys.executable, "-m", "unohil.harness.cli", *args], cwd=kw.pop("cwd", ROOT),
                          capture_output=True, text=True, env=env, timeout=300, **kw)


def test_library_says_where_each_part_is_and_how_many_files_and_scenarios_it_holds(capsys):
    assert main(["library"]) == 0
    out = capsys.readouterr().out
    kinds = sorted(p.name for p in LIBRARY.iterdir() if p.is_dir())
    assert kinds == ["flash", "launcher", "showdown"]
    for kind in kinds:
        files = len(list((LIBRARY / kind).glob("*.yaml")))
        n = documents(LIBRARY / kind)[kind]
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(kind + " "))
        assert f"{files} files, {n} scenarios" in line and line.endswith(str(LIBRARY / kind)), line
    attended = documents(ATTENDED)
    assert f"attended: {ATTENDED}" in out
    assert f"{sum(attended.values())} scenarios that wait for a person" in out
    assert ", ".join(f"{k} {n}" for k, n in sorted(attended.items())) in out


@pytest.mark.parametrize("part, expected", [(None, LIBRARY), ("scenarios", LIBRARY), ("attended", ATTENDED),
                                            ("flash", LIBRARY / "flash")])
def test_library_path_prints_one_folder_for_a_shell(capsys, part, expected):
    assert main(["library", "--path", *([part] if part else [])]) == 0
    assert capsys.readouterr().out == f"{expected}\n"


def test_library_path_of_an_unknown_part_is_a_usage_error_naming_the_parts(capsys):
    assert main(["library", "--path", "bench"]) == 2
    err = capsys.readouterr().err
    assert "no 'bench'" in err and "attended" in err and "showdown" in err


PATHLIKE = re.compile(r"(?<![\w:/.$@-])[\w.<>*-]+(?:/[\w.<>*-]+)+/?")


def repository_paths(text: str) -> list[str]:
    """The paths in text that start at a folder or file of the repository's top level: none of them is in the
    wheel, whose one top-level name is unohil."""
    tops = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    return [m.group() for m in PATHLIKE.finditer(text) if m.group().split("/")[0] in tops]


def help_texts() -> dict[str, str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return {"unohil": parser.format_help(), **{name: p.format_help() for name, p in sub.choices.items()}}


def test_no_help_text_names_a_path_of_the_repository():
    texts = help_texts()
    assert {"run", "conform", "library", "emulate"} <= set(texts)
    bad = {name: repository_paths(" ".join(text.split())) for name, text in texts.items()}
    assert not {k: v for k, v in bad.items() if v}, bad
    assert repository_paths("default: fixtures/scenarios/<kind>, see docs/rig.md") == \
        ["fixtures/scenarios/<kind>", "docs/rig.md"]      # what the check above would catch


def test_run_and_conform_help_name_the_installed_library():
    texts = help_texts()
    for name in ("run", "conform"):
        assert "`unohil library` says where it is" in " ".join(texts[name].split()), name


def test_run_against_one_device_plays_its_kinds_part_of_the_library_and_says_what_it_left_out(tmp_path):
    out = tmp_path / "r.json"
    run = unohil("run", "--device", "emu://showdown", "--json", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    counts = documents(LIBRARY)
    left = [ln for ln in run.stdout.splitlines() if ln.startswith("left out ")]
    assert left == [f"left out {counts['flash']} flash and {counts['launcher']} launcher scenario(s) of the library: "
                    f"no flash or launcher device given (the devices are showdown; give scenario files to run them "
                    f"elsewhere)"]
    assert "device given" not in run.stdout.replace(left[0], "")
    scenarios = json.loads(out.read_text())["scenarios"]
    assert len(scenarios) == counts["showdown"] and {s["unit"] for s in scenarios} == {"showdown"}
    assert "estimated duration" not in run.stdout       # the virtual clock: over before it could be read


def test_given_scenario_files_are_all_accounted_for_even_those_no_device_runs(tmp_path):
    """Files the user names are theirs: each shows in the results, a skip saying why."""
    run = unohil("run", "--device", "emu://showdown", str(ATTENDED), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "left out" not in run.stdout
    assert "no flash device given" in run.stdout and "no launcher device given" in run.stdout


def test_a_run_on_a_unit_keeping_real_time_says_how_long_it_will_take_before_it_starts():
    """The whole Showdown library on a real-clock unit (about ten minutes): the estimate comes before the
    first scenario's line; the run is stopped there (SIGINT, as a user would)."""
    proc = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "run", "--device",
                             "emu://showdown?clock=real", "--format", "lines"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if re.match(r"(pass|fail|skip|error|link-error|reset) ", line):
                break
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    estimate = [ln for ln in lines if ln.startswith("estimated duration: about ")]
    assert len(estimate) == 1 and not re.match(r"(pass|fail|skip)", lines[lines.index(estimate[0]) - 1]), lines
    m = re.match(r"estimated duration: about (\d+) min (\d+) s \((\d+) races; .* 1 showdown unit\(s\) keeping real "
                 r"time\)", estimate[0])
    assert m, estimate[0]
    minutes = int(m[1]) + int(m[2]) / 60
    assert 5 < minutes < 20, estimate[0]        # tests/test_bench.py measures it against a real run


def test_a_short_run_on_real_time_prints_no_estimate():
    run = unohil("run", "--device", "emu://showdown?clock=real", "-k", "green and onset")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout and "estimated duration" not in run.stdout


FIXED = "countdown_min_us: 2000000, countdown_max_us: 2000000"
assert FIXED in GOOD          # a clean win: green 2 s after the timer press, paddle A 180 ms after green


@pytest.mark.parametrize("seconds", [3, 20])
def test_the_estimate_is_the_device_time_the_steps_take(seconds):
    """Green at start + 1 ms + the countdown, the press 180 ms later, the verdict once the tie window after it
    has passed: the estimate counts the race's own device time, whatever the countdown, plus the lead a race
    takes on a link with transit time (REAL_LEAD_US)."""
    sc = loads(GOOD.replace(FIXED, f"countdown_min_us: {seconds * 10**6}, countdown_max_us: {seconds * 10**6}"))
    got = device_time(sc, "showdown")[0]
    race = seconds + 0.001 + 0.18 + (REAL_LEAD_US - VIRTUAL_LEAD_US) / 1e6
    assert race <= got <= race + 0.05, got
    assert device_time(sc, "flash") == (0, 0)

