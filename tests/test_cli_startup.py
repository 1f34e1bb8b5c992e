"""`unohil --version` and `unohil --help` build no command's parser and import no command's module; the
parser built for one command gives the same help as the whole one; the catalogue's checked data is kept
and used again (protocol/checked.py)."""
import argparse
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from unohil.harness.cli import commands
from unohil.harness.cli.app import build_parser
from unohil.protocol import catalogue, checked

ROOT = Path(__file__).resolve().parent.parent


def _sub(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_each_commands_help_line_is_the_one_its_module_gives():
    full = _sub(build_parser())
    assert {a.dest: a.help for a in full._choices_actions} == commands.COMMANDS
    assert [a.dest for a in full._choices_actions] == list(commands.COMMANDS)


def test_the_parser_for_one_command_helps_as_the_whole_one():
    whole = build_parser()
    assert build_parser(["--help"]).format_help() == whole.format_help()
    for name in commands.COMMANDS:
        lazy = build_parser([name, "--help"])
        assert _sub(lazy).choices[name].format_help() == _sub(whole).choices[name].format_help(), name


@pytest.mark.parametrize("argv, name", [
    (["run", "x.yaml"], "run"),
    (["-v", "--log-level", "INFO", "validate", "run"], "validate"),
    (["--log-file", "run", "hello"], "hello"),          # `run` is the file's name here
    (["--log-file=run", "hello"], "hello"),
    (["--version"], None),
    (["nonsense", "run"], None),
])
def test_the_chosen_command_is_the_first_word_naming_one(argv, name):
    assert commands.chosen(build_parser([]), argv) == name


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=120)


IMPORTED_BY_VERSION = """\
    import sys
    from unohil.harness.cli.app import main
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    print(" ".join(sorted(sys.modules)))
    """


def test_version_imports_no_command_and_after_one_check_no_yaml(tmp_path):
    """With bytecode written (here under a prefix of the test's own), the first process checks the catalogue
    and keeps the result; the next one reads it and loads neither yaml nor the checker."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    first = _python(IMPORTED_BY_VERSION, env)
    assert first.returncode == 0, first.stderr
    assert "unohil.protocol.schema" in first.stdout.split()
    second = _python(IMPORTED_BY_VERSION, env)
    assert second.returncode == 0, second.stderr
    modules = set(second.stdout.split())
    assert second.stdout.startswith("unohil ") and ", protocol " in second.stdout
    assert not {f"unohil.harness.cli.{name}" for name in commands.COMMANDS} & modules
    assert not {"yaml", "rich", "unohil.protocol.schema", "unohil.harness.session.driver"} & modules


# ---- the kept catalogue data ----

@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setattr(checked, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path


def test_checked_data_is_kept_and_used_again_until_a_text_changes(kept):
    calls = []

    def check(value):
        calls.append(value)
        return {"value": value, "list": [1, None, True, "x"]}

    assert checked.load("t", ("a",), lambda: check(1)) == {"value": 1, "list": [1, None, True, "x"]}
    assert checked.load("t", ("a",), lambda: check(2))["value"] == 1       # kept: not checked again
    assert checked.load("t", ("b",), lambda: check(3))["value"] == 3       # another text
    assert calls == [1, 3]
    assert len(list(kept.glob("t.*.marshal"))) == 1                        # the older one dropped


def test_a_changed_checker_is_a_new_digest(monkeypatch):
    before = checked.digest(("a",))
    real = checked.text
    monkeypatch.setattr(checked, "text", lambda name: real(name) + ("#" if name == "schema.py" else ""))
    assert checked.digest(("a",)) != before


def test_an_unreadable_kept_file_is_checked_again_and_an_unwritable_folder_is_no_error(kept, monkeypatch):
    checked.load("t", ("a",), lambda: 1)
    (path,) = kept.glob("t.*.marshal")
    path.write_bytes(b"\x00garbage")
    assert checked.load("t", ("a",), lambda: 2) == 2
    assert checked.load("t", ("a",), lambda: 3) == 2
    blocked = kept / "file"
    blocked.write_text("")
    monkeypatch.setattr(checked, "cache_dir", lambda: blocked / "sub")
    assert checked.load("t", ("a",), lambda: 4) == 4


def test_a_checker_without_its_sources_checks_every_time(kept, monkeypatch):
    def missing(name):
        raise FileNotFoundError(name)
    monkeypatch.setattr(checked, "text", missing)
    assert checked.load("t", ("a",), lambda: 1) == 1
    assert checked.load("t", ("a",), lambda: 2) == 2
    assert list(kept.iterdir()) == []


def test_nothing_is_kept_where_python_writes_no_bytecode(kept, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert checked.load("t", ("a",), lambda: 1) == 1
    assert list(kept.iterdir()) == []


def test_the_catalogue_is_what_the_checker_gives_for_its_files():
    """Whether this process checked the files or read the kept data, the catalogue and decisions are the same."""
    fresh = catalogue._check(checked.text("messages.yaml"), checked.text("decisions.yaml"))
    assert (catalogue.RAW, catalogue._DECISIONS_RAW) == fresh
