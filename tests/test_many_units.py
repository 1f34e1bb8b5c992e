"""Many units in one run (issue 36, "every core"): a rack works on at most RACING_AT_ONCE units at a time, the
others waiting for a turn in the order they asked; links of a large rack wait for bytes without kernel slices;
2,000 emulated units pass a scenario in one `unohil run`."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from unohil.harness.run.parallel import Turns, Workers

from test_outputs import scenario_file

CLI = [sys.executable, "-m", "unohil.harness.cli"]


def _waiting(turns: Turns, n: int) -> None:
    """Until n threads wait for a turn (a bound for a loaded host, never asserted on)."""
    done = threading.Event()
    for _ in range(20_000):
        with turns._mutex:
            if len(turns._waiting) >= n:
                return
        done.wait(0.001)
    raise AssertionError(f"{n} threads never waited")


def test_turns_let_at_most_so_many_in_and_the_rest_in_the_order_they_came():
    turns = Turns(2)
    order: list[int] = []
    inside, most = [0], [0]
    leave = [threading.Event() for _ in range(6)]
    entered = threading.Condition()

    def holder(n: int) -> None:
        with turns:
            with entered:
                order.append(n)
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                entered.notify_all()
            leave[n].wait(10)
            with entered:
                inside[0] -= 1

    threads = []
    for n in range(6):
        t = threading.Thread(target=holder, args=(n,))
        t.start()
        threads.append(t)
        if n >= 2:
            _waiting(turns, n - 1)          # each later thread queued behind the ones before it
    assert sorted(order) == [0, 1]          # two in, four waiting
    for n in range(6):                      # one leaves: the longest waiting comes in
        leave[n].set()
        with entered:
            assert entered.wait_for(lambda: len(order) >= min(6, n + 3), 10)
    for t in threads:
        t.join(10)
    assert order[2:] == [2, 3, 4, 5] and most[0] == 2


def test_a_turn_given_back_goes_to_the_longest_waiting_not_to_one_asking_again():
    turns = Turns(1)
    got: list[str] = []
    turns.__enter__()                       # the main thread holds the only turn
    waiter = threading.Thread(target=lambda: (turns.__enter__(), got.append("waiter"), turns.__exit__()))
    waiter.start()
    _waiting(turns, 1)
    turns.__exit__()
    again = threading.Thread(target=lambda: (turns.__enter__(), got.append("again"), turns.__exit__()))
    again.start()
    waiter.join(10)
    again.join(10)
    assert got == ["waiter", "again"]


def test_workers_give_every_unit_a_turn_before_any_takes_a_second_item():
    # one turn at a time, three units: the unit that finished an item queues behind the two waiting
    workers = Workers({"showdown": ["a", "b", "c"]}, lambda i: "showdown", at_once=1)
    seen: list[str] = []

    def work(unit: str, item: int) -> int:
        if not seen:
            _waiting(workers.turns, 2)      # the first holder keeps its turn until the others wait
        seen.append(unit)
        return item * 10

    out = workers.run(list(range(6)), work, lambda i: None, lambda i, exc: None)
    assert out == [0, 10, 20, 30, 40, 50]
    assert seen == ["a", "b", "c", "a", "b", "c"]       # the rack's order, each unit once before any twice


@pytest.mark.slow
def test_two_thousand_emulated_units_pass_a_scenario_each_in_one_run(tmp_path):
    """2,000 in-process emulators on the virtual clock, one process (-j 1): every unit opens, each runs one
    scenario (the dealing gives each unit one), and every race passes."""
    units = 2000
    path = scenario_file(tmp_path, *[(f"s{n}", 500_000, 1) for n in range(units)])
    devices = [a for n in range(units) for a in ("--device", f"emu://showdown?clock=virtual&serial={n + 1}")]
    proc = subprocess.run(CLI + ["run", "-q", "-j", "1", "--format", "lines", "--json", str(tmp_path / "r.json"),
                                 *devices, str(path)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["devices"]) == units and not any(d.get("error") for d in doc["devices"])
    assert doc["summary"]["passed"] == units == doc["summary"]["races"]
    assert len({s["device"] for s in doc["scenarios"]}) == units     # every unit ran its own


def test_what_a_run_holds_before_its_races_is_out_of_the_collectors_walks_only_while_they_run(tmp_path,
                                                                                             monkeypatch):
    import gc

    from unohil.harness.cli import main
    from unohil.harness.run.runner import Runner
    frozen_during: list[int] = []
    real_run = Runner.run

    def run(self, sc, *a, **kw):
        frozen_during.append(gc.get_freeze_count())
        return real_run(self, sc, *a, **kw)

    monkeypatch.setattr(Runner, "run", run)
    path = scenario_file(tmp_path, ("a", 500_000, 1), ("b", 500_000, 1))
    before = gc.get_freeze_count()
    assert main(["run", "-q", "-j", "1", "--device", "emu://showdown?clock=virtual", "--device",
                 "emu://showdown?clock=virtual&serial=2", str(path)]) == 0
    assert len(frozen_during) == 2 and min(frozen_during) > before
    assert gc.get_freeze_count() == before


def test_at_once_bounds_the_units_at_work_and_a_bad_count_is_a_usage_error(tmp_path, monkeypatch, capsys):
    from unohil.harness.cli import main
    from unohil.harness.run.runner import Runner
    at_work, most, units = [0], [0], set()
    lock = threading.Lock()
    real_run = Runner.run

    def run(self, sc, *a, **kw):
        with lock:
            at_work[0] += 1
            most[0] = max(most[0], at_work[0])
            units.add(self.d.url)
        try:
            time.sleep(0.05)        # long enough for every unit free to start: without the bound, 3 at once
            return real_run(self, sc, *a, **kw)
        finally:
            with lock:
                at_work[0] -= 1

    monkeypatch.setattr(Runner, "run", run)
    path = scenario_file(tmp_path, *[(f"s{n}", 500_000, 3) for n in range(6)])
    devices = [a for n in range(3) for a in ("--device", f"emu://showdown?clock=virtual&serial={n + 1}")]
    assert main(["run", "-q", "-j", "1", "--at-once", "2", *devices, str(path)]) == 0
    assert most[0] == 2 and len(units) == 3
    capsys.readouterr()
    for bad in ("0", "-3", "many"):
        try:
            code = main(["run", "--at-once", bad, str(path)])
        except SystemExit as exc:
            code = exc.code
        assert code == 2
        assert "give how many units at work at once, 1 or more" in capsys.readouterr().err
