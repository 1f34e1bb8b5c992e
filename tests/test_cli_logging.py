"""The CLI's logging options: the harness's records on stderr (-v, -vv, --log-level) and in a file
(--log-file), never on stdout; a log file that cannot be written is a usage error."""
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from unohil.harness.cli.app import main

from test_pytest_plugin import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}"


@pytest.fixture
def scenario(tmp_path) -> Path:
    path = tmp_path / "race.yaml"
    path.write_text(SCENARIOS)
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_v_shows_info_and_vv_debug_on_stderr_only(capsys, scenario):
    status, plain, quiet = run(capsys, "run", str(scenario), "--format", "lines")
    assert status == 0 and "unohil." not in quiet
    status, out, err = run(capsys, "-v", "run", str(scenario), "--format", "lines")
    assert status == 0
    assert re.search(r"^INFO unohil\.run: .*'A wins' race 0: pass", err, re.M)
    assert "DEBUG" not in err
    assert "unohil." not in out and out.splitlines()[0] == plain.splitlines()[0]
    status, out, err = run(capsys, "-vv", "run", str(scenario), "--format", "lines")
    assert re.search(r"^DEBUG unohil\.session: .* tx #\d+ .*HELLO", err, re.M)
    assert "unohil." not in out


def test_log_level_wins_over_v_and_may_follow_the_command(capsys, scenario):
    _, _, err = run(capsys, "-vv", "--log-level", "warning", "run", str(scenario))
    assert "unohil." not in err
    _, _, err = run(capsys, "run", str(scenario), "--log-level", "INFO")
    assert "INFO unohil.run:" in err
    _, _, err = run(capsys, "run", str(scenario), "-v")
    assert "INFO unohil.run:" in err and "DEBUG" not in err
    with pytest.raises(SystemExit) as exc:
        main(["--log-level", "chatty", "run", str(scenario)])
    assert exc.value.code == 2
    assert "'chatty' is not a level: DEBUG, INFO, WARNING, ERROR, CRITICAL" in capsys.readouterr().err


def test_log_file_holds_every_record_with_timestamps(capsys, scenario, tmp_path):
    log = tmp_path / "ci.log"
    status, _, err = run(capsys, "--log-file", str(log), "run", str(scenario))
    assert status == 0 and "unohil." not in err
    text = log.read_text()
    assert re.search(rf"^{STAMP} DEBUG unohil\.session \[\w+\]: .*tx #\d+ .*HELLO", text, re.M)
    assert re.search(rf"^{STAMP} INFO unohil\.run \[[\w-]+\]: .*'A wins' race 0: pass", text, re.M)
    run(capsys, "--log-file", str(log), "--log-level", "INFO", "validate", str(scenario))
    assert log.read_text().startswith(text)                 # appended to, never replaced


def test_a_log_file_that_cannot_be_written_is_one_usage_error(capsys, scenario, tmp_path):
    where = tmp_path / "no-such-folder" / "ci.log"
    status, out, err = run(capsys, "run", str(scenario), "--log-file", str(where))
    assert status == 2 and out == ""
    assert err.splitlines() == [f"error: --log-file {where}: cannot be written (No such file or directory)"]


def test_the_loggers_are_put_back_after_the_command(capsys, scenario, tmp_path):
    logger = logging.getLogger("unohil")
    before = (logger.level, list(logger.handlers))
    run(capsys, "-vv", "--log-file", str(tmp_path / "x.log"), "run", str(scenario))
    assert (logger.level, logger.handlers) == before


def test_records_never_reach_results_written_to_stdout(tmp_path, scenario):
    out = tmp_path / "stdout.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    with open(out, "w") as f:
        r = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "-vv", "run", str(scenario), "-q",
                            "--junit", "/dev/stdout"], cwd=ROOT, stdout=f, stderr=subprocess.PIPE, text=True,
                           env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "DEBUG unohil.session:" in r.stderr
    text = out.read_text()
    assert "unohil.session" not in text and "unohil.run" not in text and "<?xml" in text
