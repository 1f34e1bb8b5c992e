"""Units apart (issue 29, item 6): one unit's bad handshake never stops the others.

A handshake whose replies are lost on a line that carries the unit's bytes is started again within its
budget; a unit that sends nothing is reported after HELLO's tries. In a run of several units, one that
cannot be opened is reported, its scenarios are link errors naming the cause, and the others run.
Virtual clock throughout.
"""
import json

import pytest

from unohil.harness import Driver
from unohil.harness.errors import CommandTimeout
from unohil.harness.links import open_link

SILENT = "emu://showdown?faults=in.drop=1"      # every byte the host sends is lost: no reply, ever


@pytest.mark.parametrize("seed, lost", [(3, "HELLO"), (11, "HELLO"), (40, "STATUS_GET"), (41, "STATUS_GET")])
def test_a_handshake_whose_replies_are_lost_is_started_again_within_its_budget(seed, lost):
    # these seeds lose every try of one handshake command (HELLO's four, the first STATUS's three)
    url = f"emu://showdown?faults=drop=1e-2,seed={seed}"
    with Driver.open(url) as d:
        assert d.identity is not None and d.kind == "showdown"
        assert d.health.retries >= 3
        assert d.clock.estimate is not None


def test_a_unit_that_sends_nothing_is_reported_after_hellos_own_tries_not_the_whole_budget():
    link = open_link(SILENT)
    d = Driver(link)
    t0 = link.now_us()
    try:
        with pytest.raises(CommandTimeout, match="no reply to HELLO"):
            d.handshake()
        assert link.now_us() - t0 < Driver.HANDSHAKE_BUDGET_US // 2
    finally:
        link.close()


def test_a_unit_that_cannot_be_opened_leaves_the_others_running_and_the_results_written(tmp_path, capsys):
    from unohil.harness.cli import main
    out = tmp_path / "x.json"
    rc = main(["run", "--device", SILENT, "--device", "emu://flash", "--device", "emu://launcher",
               "--json", str(out), "--format", "lines"])
    said = capsys.readouterr().out
    assert rc == 1                      # link errors: not a pass, not a usage error
    doc = json.loads(out.read_text())
    by_kind: dict[str, set] = {}
    for sc in doc["scenarios"]:
        by_kind.setdefault(sc["unit"], set()).add(sc["status"])
    assert by_kind["showdown"] == {"link-error"}
    assert by_kind["flash"] <= {"pass", "skip"} and "pass" in by_kind["flash"]
    assert by_kind["launcher"] <= {"pass", "skip"} and "pass" in by_kind["launcher"]
    gone = [sc for sc in doc["scenarios"] if sc["unit"] == "showdown"]
    assert all("could not open the unit" in sc["error"] and "no reply to HELLO" in sc["error"] for sc in gone)
    assert doc["summary"]["failed"] == 0 and doc["summary"]["link_error"] == len(gone)
    (dev,) = [d for d in doc["devices"] if d["url"] == SILENT]
    assert dev["kind"] == "showdown" and "no reply to HELLO" in dev["error"]
    assert f"{SILENT}: not opened: " in said and "the other units run" in said


def test_with_every_unit_unopened_the_run_is_a_connection_error(tmp_path, capsys):
    from unohil.harness.cli import main
    rc = main(["run", "--device", SILENT, "--device", SILENT.replace("showdown", "flash"),
               "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "no reply to HELLO" in capsys.readouterr().err


def test_a_worker_whose_unit_was_replaced_leaves_its_kinds_items_to_the_others_and_none_is_lost():
    import threading
    from unohil.harness.run.parallel import Workers
    replaced = set()
    other_started = threading.Event()
    took: dict[str, list[int]] = {"a": [], "b": []}

    def work(worker: str, item: int) -> int:
        if worker == "a":
            other_started.wait(5)       # b is serving too: a's unit is replaced during its first item
            replaced.add("a")
        else:
            other_started.set()
        took[worker].append(item)
        return item

    items = list(range(10))
    out = Workers({"showdown": ["a", "b"]}, lambda i: "showdown", retired=lambda w: w in replaced).run(
        items, work, lambda i: None, lambda i, exc: None)
    assert out == items
    assert len(took["a"]) == 1 and sorted(took["a"] + took["b"]) == items


def test_when_every_worker_of_a_kind_is_retired_the_last_still_takes_the_items():
    from unohil.harness.run.parallel import Workers
    out = Workers({"flash": ["a"]}, lambda i: "flash", retired=lambda w: True).run(
        [1, 2, 3], lambda w, i: -i, lambda i: None, lambda i, exc: None)
    assert out == [-1, -2, -3]


def test_a_unit_not_opened_whose_url_does_not_say_its_kind_leaves_no_kind_out(tmp_path, capsys):
    import socket
    from unohil.harness.cli import main
    with socket.socket() as s:          # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        refused = f"socket://127.0.0.1:{s.getsockname()[1]}"
    out = tmp_path / "x.json"
    rc = main(["run", "--device", refused, "--device", "emu://flash", "--json", str(out), "-q"])
    assert rc == 1, capsys.readouterr()
    statuses = {}
    for sc in json.loads(out.read_text())["scenarios"]:
        statuses.setdefault(sc["unit"], set()).add(sc["status"])
    # it may have been a Showdown or a launcher: their scenarios are its link errors, not left out
    assert statuses["showdown"] == statuses["launcher"] == {"link-error"}
    assert "pass" in statuses["flash"] and "link-error" not in statuses["flash"]


def test_a_unit_swapped_behind_a_reconnect_is_sent_no_race_and_no_race_is_its(tmp_path):
    """Virtual clock: the line hangs up in the first scenario's race and the URL, opened again, reaches
    a unit of another serial. Nothing more is run on it; every race names the unit it ran on."""
    from unohil.harness.outcome import Outcome
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.load import loads
    from test_faults import GOOD
    strangers = []

    def reopen(url):
        strangers.append(open_link("emu://showdown?serial=202"))
        return strangers[-1]
    d = Driver(open_link("emu://showdown?faults=disconnect_after=40"), opener=reopen)
    d.handshake()
    first = d.identity
    runner = Runner(d)
    one, two = (runner.run(sc) for sc in loads(GOOD + "---\n" + GOOD.replace("clean win", "again"), "t.yaml"))
    assert strangers, "the line never hung up: the test would show nothing"
    assert [r.status for r in one.races + two.races] == [Outcome.LINK_ERROR, Outcome.LINK_ERROR]
    assert "another unit answers here" in one.races[0].error and "serial 202" in two.races[0].error
    assert (one.races[0].serial, one.races[0].boot_id) == (first.serial, first.boot_id)
    assert d.identity.serial == first.serial
    d.close()
    assert strangers[0].device._inject_id == 0        # the stranger took no stimulus of this run
