"""Traces that are never lost: one file per connection, and a write error stops that trace, never the run."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from harness.run.runner import Runner
from harness.scenarios.load import loads
from harness.session.driver import Driver
from harness.session.trace import TraceWriter
from test_harness_scenarios import GOOD


def clean_win(name: str, countdown_us: int, races: int) -> str:
    """GOOD (one clean win for A) as an item of a list of scenarios, with its countdown, run races times."""
    text = GOOD.replace("name: clean win", f"name: {name}").replace("2000000", str(countdown_us))
    if races > 1:
        text += f"sweep: {{n: {list(range(races))}}}\n"
    first, *rest = text.strip("\n").splitlines()
    return f"- {first}\n" + "".join(f"  {line}\n" for line in rest)


@pytest.fixture
def full_device(tmp_path) -> Path:
    """A device that fails every write with ENOSPC, as a full disk does: a /dev/full of the test's own
    where it can make one (as root, a harness that renamed over its outputs would replace the
    system's /dev/full), else /dev/full itself."""
    if os.geteuid() != 0:
        return Path("/dev/full")
    node = tmp_path / "full"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    return node


def test_a_trace_write_error_stops_that_trace_never_the_run(tmp_path, full_device):
    """The trace's file fails every write (it is a full device): the races still run and pass, and
    the writer says why its trace stopped."""
    (sc,) = loads(clean_win("many", 2_000_000, 30), "t.yaml")
    with Driver.open("emu://showdown?clock=virtual", trace_dir=tmp_path) as d:
        d.trace._fh.close()
        d.trace._fh = open(full_device, "w", encoding="utf-8", buffering=1 << 16)
        res = Runner(d).run(sc)
        trace = d.trace
    assert res.status == "pass" and len(res.races) == 30
    assert trace.failure.endswith("No space left on device (the trace stopped after "
                                  f"{trace.records} records)") and 0 < trace.records
    assert not trace.path.exists()          # a trace is whole or absent: what was written is in .part


def test_traces_in_one_directory_never_share_a_file(tmp_path):
    a, b = TraceWriter(tmp_path, "unit"), TraceWriter(tmp_path, "unit")
    stale = tmp_path / "other.jsonl.part"       # left by a killed run: not written into
    stale.write_text("old\n")
    c = TraceWriter(tmp_path, "other")
    for w in (a, b, c):
        w.note(1, w.path.name)
        w.close()
    assert [a.path.name, b.path.name, c.path.name] == ["unit.jsonl", "unit-2.jsonl", "other-2.jsonl"]
    assert stale.read_text() == "old\n"
    assert json.loads(b.path.read_text())["text"] == "unit-2.jsonl"
