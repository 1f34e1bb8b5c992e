"""A correct unit behind a slow line, in real time: an emulator process on a pty held to SPEC 10.2's 115,200
baud, and one on TCP delaying the second frame of every burst by 20-40 ms (a bridge without TCP_NODELAY).
`unohil run` of the launcher library's Wild Hit-Fire passes, and `unohil conform` finds 0 failed.

To keep the real time modest each link runs conform's protocol checks with that one scenario (PARTIAL: the
rest of the library is not run) and the scenario with 2 races rather than the library's 10; the whole
library and conform of each kind on both lines are run on the virtual clock by tests/test_link_timing.py
and the commands in docs/faults.md."""
import json
from pathlib import Path

import pytest
import yaml

from unohil.harness import cli

ROOT = Path(__file__).resolve().parent.parent


def wild_hit_fire(tmp_path: Path, races: int = 2) -> Path:
    docs = yaml.safe_load((ROOT / "fixtures" / "scenarios" / "launcher" / "hits.yaml").read_text())
    (sc,) = [d for d in docs if d["name"].startswith("Wild Hit-Fire")]
    sc["repeat"] = races
    path = tmp_path / "wild_hit_fire.yaml"
    path.write_text(yaml.safe_dump([sc], sort_keys=False))
    return path


@pytest.mark.parametrize("line", [("--pty", "--baud", "115200"),
                                  ("--tcp", "127.0.0.1:0", "--split-burst", "20ms..40ms")],
                         ids=["pty-115200-baud", "tcp-split-burst"])
def test_the_launcher_passes_and_conforms_behind_a_slow_line(line, emulator_process, tmp_path, capsys):
    _proc, (url,) = emulator_process("launcher", *line)
    scenario = wild_hit_fire(tmp_path)
    out = tmp_path / "run.json"
    assert cli.main(["run", str(scenario), "--device", url, "--json", str(out), "-q"]) == 0, capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["summary"]["passed"] == 1 and doc["summary"]["failed"] == 0
    conform = tmp_path / "conform.json"
    cli.main(["conform", "--device", url, "--scenarios", str(scenario), "--json", str(conform), "-q"])
    text = capsys.readouterr().out
    checks = json.loads(conform.read_text())["checks"]
    bad = [(c["section"], c["name"], c["detail"]) for c in checks if c["status"] not in ("pass", "skip")]
    assert not bad, text
    assert "0 failed" in text and ("PARTIAL" in text or "CONFORMS" in text)
