"""The package as users get it: a wheel installed in a fresh venv, run outside the repo folder."""
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(tmp_path: Path) -> Path:
    """The wheel, built from a copy of the checkout: setuptools writes build/ beside the sources, and two
    builds in one folder at once (two test workers) trip over each other."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info",
                                                                 "__pycache__", "out"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
                   check=True, capture_output=True)
    (wheel,) = wheels.glob("uno_hil-*.whl")
    return wheel


@pytest.mark.slow
def test_a_wheel_outside_the_repo_runs_and_conforms_with_the_shipped_library(tmp_path):
    wheel = build_wheel(tmp_path)
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


FOLDERS = ("protocol", "emulator", "harness")


def test_pyproject_lists_every_package_folder_under_unohil():
    """A new sub-folder with an __init__.py is installed only if pyproject lists it. Besides the code,
    unohil.library: the scenario library as package data, from fixtures/ (no code of its own)."""
    import tomllib
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = {"unohil." + ".".join(init.parent.relative_to(ROOT).parts)
             for folder in FOLDERS for init in (ROOT / folder).rglob("__init__.py")}
    assert listed == found | {"unohil.library"}
    assert setuptools["package-dir"]["unohil.library"] == "fixtures"
    assert not list((ROOT / "fixtures").glob("**/*.py"))


def test_no_module_imports_the_folders_by_their_bare_names():
    """Inside the checkout `protocol` happens to be importable from the repo root; installed it is not:
    every import names unohil.protocol, unohil.harness, unohil.emulator."""
    import ast
    bad = []
    for path in ROOT.glob("*/**/*.py"):
        if path.parts[len(ROOT.parts)] in (".venv", ".git", "build") or "site-packages" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in FOLDERS]
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_the_wheel_installs_one_import_name_and_leaves_a_users_own_modules_alone(tmp_path):
    """A project with its own protocol.py and harness.py, in a venv with uno-hil installed, imports its own
    modules, and `python -m pytest` and plain `pytest` pass there (the plugin is loaded, and harmless)."""
    wheel = build_wheel(tmp_path)
    import zipfile
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"unohil", "uno_hil-0.1.0.dist-info"}, tops     # the library is package data, inside unohil
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = str(env_dir / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", str(wheel), "pytest"], check=True, capture_output=True)
    away = tmp_path / "elsewhere"
    away.mkdir()
    for name in FOLDERS:
        r = subprocess.run([py, "-c", f"import {name}"], cwd=away, capture_output=True, text=True)
        assert r.returncode != 0 and "No module named" in r.stderr, (name, r.stderr)
    user = tmp_path / "users_project"
    user.mkdir()
    (user / "protocol.py").write_text("def catalogue():\n    return 'mine'\n")
    (user / "harness.py").write_text("NAME = 'my harness'\n")
    (user / "test_mine.py").write_text("import harness\nfrom protocol import catalogue\n\n\n"
                                       "def test_my_modules():\n"
                                       "    assert catalogue() == 'mine' and harness.NAME == 'my harness'\n")
    for command in ([py, "-m", "pytest", "-q"], [str(env_dir / "bin" / "pytest"), "-q"]):
        r = subprocess.run(command, cwd=user, capture_output=True, text=True)
        assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr


def _readme_attended_command() -> str:
    """README's command for the bench's attended scenarios, as a user copies it."""
    import re
    m = re.search(r"`(unohil run --attended[^`]*)`", (ROOT / "README.md").read_text())
    assert m and "URL" in m[1], "README shows how to run the attended scenarios"
    return m[1]


@pytest.mark.slow
def test_an_installed_user_finds_the_library_runs_the_attended_set_as_readme_shows_and_reads_no_repo_path(tmp_path):
    """From a wheel in a fresh venv, outside the repository: `unohil library` points inside the venv, README's
    attended command finds the attended scenarios (nobody is at the emulated unit: with --attended its prompt is
    shown and goes unanswered, so the run fails on that; without it they are skipped, saying why), and no
    subcommand's help names a path the wheel lacks."""
    import re
    wheel = build_wheel(tmp_path)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True)
    away = tmp_path / "elsewhere"
    away.mkdir()
    unohil = str(env_dir / "bin" / "unohil")
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def sh(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=away, capture_output=True, text=True, env=env, timeout=300)

    listing = sh("unohil library")
    assert listing.returncode == 0, listing.stderr
    attended = Path(sh("unohil library --path attended").stdout.strip())
    assert attended.is_dir() and attended.is_relative_to(env_dir) and (attended / "bench.yaml").is_file()
    assert f"attended: {attended}" in listing.stdout
    for kind in ("showdown", "flash", "launcher"):
        assert re.search(rf"^  {kind} +\d+ files, \d+ scenarios +{re.escape(str(env_dir))}\S*/{kind}$",
                         listing.stdout, re.M), listing.stdout
    command = _readme_attended_command().replace("URL", "emu://showdown")
    run = sh(command)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "PROMPT a person presses paddle A on green and wins: press paddle A" in run.stdout
    assert "UNANSWERED a person presses paddle A on green and wins" in run.stdout
    unattended = sh(command.replace(" --attended", ""))
    assert unattended.returncode == 0, unattended.stdout + unattended.stderr
    assert re.search(r"^skip +a person presses paddle A on green and wins .* waits for a person \(--attended\)$",
                     unattended.stdout, re.M), unattended.stdout
    commands = re.search(r"\{([a-z,]+)\}", subprocess.run([unohil, "--help"], capture_output=True, text=True).stdout)
    names = commands[1].split(",")
    assert {"run", "conform", "library"} <= set(names)
    import zipfile
    from test_installed_paths import repository_paths
    files = set(zipfile.ZipFile(wheel).namelist())
    for name in names:
        text = " ".join(subprocess.run([unohil, name, "--help"], cwd=away, capture_output=True, text=True).stdout.split())
        assert not [p for p in repository_paths(text) if p not in files], f"unohil {name} --help: {text}"
