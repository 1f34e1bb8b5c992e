"""The results store: what run and conform record, read back alike from SQLite and PostgreSQL (a server the
suite starts: tests/postgres_server.py); its migrations; a store that cannot be reached; where the store is
configured."""
from __future__ import annotations

import json

import pytest

from unohil.harness.cli import main
from unohil.harness.store import history as h
from unohil.harness.store.backend import Store, StoreError
from unohil.harness.store.compare import compare
from unohil.harness.store.record import record, stored_run
from unohil.harness.store.schema import MIGRATIONS

LIB = "fixtures/scenarios/showdown"
FILES = [f"{LIB}/first_press.yaml", f"{LIB}/false_start.yaml", f"{LIB}/ties.yaml"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The same scenarios on firmware 0.1.0 and on a 0.2.0 that gives its verdicts 1 ms later."""
    folder = tmp_path_factory.mktemp("runs")
    docs = []
    for name, url in (("a", "emu://showdown?firmware=0.1.0"),
                      ("b", "emu://showdown?firmware=0.2.0&verdict_delay_us=1000")):
        path = folder / f"{name}.json"
        assert main(["run", *FILES, "--device", url, "--json", str(path), "--store", "off", "-q"]) == 0
        docs.append((json.loads(path.read_text()), str(path)))
    return docs


def test_a_run_is_recorded_and_read_back_the_same_on_both_backends(store_url, two_runs):
    (a, path_a), (b, _) = two_runs
    with Store.open(store_url) as store:
        first = record(store, a, "run", path_a)
        second = record(store, b, "run")
        back = stored_run(store, first)
        runs = h.runs(store, h.Filter(kind="showdown"))
        trend = h.trend(store, "processing_us", h.Filter(kind="showdown"))
        only_new = h.runs(store, h.Filter(firmware="0.2.0"))
        story = h.scenario_history(store, "clean win for A", h.Filter())
    assert [r["run"] for r in runs] == [second, first]         # newest first
    assert runs[1]["results_path"] == path_a and runs[1]["passed"] == a["summary"]["passed"]
    assert [r["run"] for r in only_new] == [second]
    assert [(t["firmware"], t["p50"], t["p99"]) for t in trend] == [("0.1.0", 0, 0), ("0.2.0", 1000, 1000)]
    assert trend[0]["n"] == sum(len(s["results"]) for s in a["scenarios"] if s["status"] != "skip")
    assert [(x["firmware"], x["status"]) for x in story] == [("0.1.0", "pass"), ("0.2.0", "pass")]
    # what compare reads is the same from the store as from the file
    assert [(s["name"], s["status"], [r["latency"] for r in s["results"]]) for s in back["scenarios"]] == \
           [(s["name"], s["status"], [r["latency"] for r in s["results"]]) for s in a["scenarios"]]
    assert back["devices"][0]["firmware"] == "0.1.0" and back["devices"][0]["catalog_crc"] == a["devices"][0]["catalog_crc"]


def test_migrations_bring_an_old_store_up_to_date_and_keep_its_runs(store_url, two_runs):
    (a, _), _ = two_runs
    with Store.open(store_url, upto=1) as old:
        assert old.version == 1
        old_run = old.insert("INSERT INTO runs (command, started_unix, status, recorded_unix) VALUES (?, ?, ?, ?)",
                             ("run", 1.0, "pass", 2.0))
        old.commit()
        with pytest.raises(StoreError, match="no such table|does not exist"):
            old.rows("SELECT * FROM checks")
    with Store.open(store_url) as store:
        assert store.version == len(MIGRATIONS)
        assert store.rows("SELECT id, flaky FROM runs") == [(old_run, 0)]
        assert record(store, a, "run") > old_run
    with Store.open(store_url) as again:        # opening an up-to-date store applies nothing twice
        assert [v for v, in again.rows("SELECT version FROM schema_version ORDER BY version")] == \
               list(range(1, len(MIGRATIONS) + 1))


def test_a_store_newer_than_this_unohil_is_refused(store_url):
    with Store.open(store_url) as store:
        store.run("INSERT INTO schema_version (version, applied_unix) VALUES (?, ?)", (len(MIGRATIONS) + 1, 0.0))
        store.commit()
    with pytest.raises(StoreError, match="update unohil"):
        Store.open(store_url)


def test_compare_gives_the_same_answer_from_the_store_as_from_the_files(store_url, two_runs, capsys):
    (a, path_a), (b, path_b) = two_runs
    with Store.open(store_url) as store:
        ids = record(store, a, "run", path_a), record(store, b, "run", path_b)
    assert main(["compare", path_a, path_b]) == 0
    from_files = capsys.readouterr().out.splitlines()[1:]
    assert main(["compare", f"run:{ids[0]}", "firmware:0.2.0", "--store", store_url]) == 0
    from_store = capsys.readouterr().out.splitlines()[1:]
    assert from_store == from_files
    assert any("showdown: processing_us median 0 us -> 1 ms (slower" in x for x in from_store)


def test_conform_records_its_checks_and_coverage(store_url, tmp_path, capsys):
    assert main(["conform", "--device", "emu://showdown", "--no-scenarios", "-q", "--store", store_url]) == 0
    with Store.open(store_url) as store:
        (command, status, passed), = store.rows("SELECT command, status, passed FROM runs")
        checks = store.rows("SELECT name, status FROM checks")
        covered = store.rows("SELECT item, status FROM coverage")
        story = h.check_history(store, checks[0][0], h.Filter(kind="showdown"))
    assert command == "conform" and passed == sum(s == "pass" for _, s in checks) > 10
    assert any(item.startswith("2 Framing") for item, _ in covered)
    assert [x["status"] for x in story] == [checks[0][1]]
    assert "recorded as run 1" in capsys.readouterr().err


def test_a_store_that_cannot_be_reached_costs_the_run_nothing(tmp_path, capsys):
    out = tmp_path / "r.json"
    status = main(["run", f"{LIB}/ties.yaml", "--json", str(out), "-q",
                   "--store", "postgresql://nobody@127.0.0.1:1/none"])
    err = capsys.readouterr().err
    assert status == 0 and json.loads(out.read_text())["summary"]["passed"] > 0
    assert "error: --store: not recorded: store postgresql://nobody@127.0.0.1:1/none: cannot open it" in err
    # a failing run keeps its own status
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: A wins\n  unit: showdown\n  seed: 1\n  config: {countdown_min_us: 3000000, "
                   "countdown_max_us: 3000000}\n  steps:\n    - press: timer\n      at: start + 1000\n"
                   "    - press: paddle_b\n      at: green + 100000\n  expect:\n    verdict: {loser: b}\n")
    assert main(["run", str(bad), "-q", "--store", str(tmp_path)]) == 1
    assert "a directory; give a file" in capsys.readouterr().err


def test_the_store_is_configured_by_environment_or_pyproject(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    from unohil.harness.store.config import configured
    monkeypatch.delenv("UNOHIL_STORE", raising=False)
    assert configured(None) is None
    (tmp_path / "pyproject.toml").write_text('[tool.unohil]\nstore = "lab.sqlite"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert configured(None) == "lab.sqlite"
    monkeypatch.setenv("UNOHIL_STORE", str(tmp_path / "env.sqlite"))
    assert configured(None) == str(tmp_path / "env.sqlite")
    assert configured("given.sqlite") == "given.sqlite"
    assert configured("off") is None
    import os
    assert main(["run", os.path.join(os.path.dirname(__file__), "..", LIB, "ties.yaml"), "-q"]) == 0
    with Store.open(tmp_path / "env.sqlite") as store:
        assert store.rows("SELECT command FROM runs") == [("run",)]


def test_history_lists_runs_and_trends_the_same_on_both_backends(store_url, two_runs, capsys):
    (a, path_a), (b, path_b) = two_runs
    with Store.open(store_url) as store:
        first, second = record(store, a, "run", path_a), record(store, b, "run", path_b)
    assert main(["history", "--store", store_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [x.split()[1] for x in lines] == [str(second), str(first)]
    assert f"run pass: {a['summary']['passed']} passed, 0 failed, {a['summary']['skipped']} skipped  " \
           "[showdown 0.1.0 serial 1]" in lines[1]
    assert main(["history", "--store", store_url, "--firmware", "0.1.0", "--json"]) == 0
    assert [r["run"] for r in json.loads(capsys.readouterr().out)] == [first]
    assert main(["history", "--store", store_url, "--trend", "processing_us", "--kind", "showdown"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"showdown 0.1.0: processing_us p50 0 us, p99 0 us, max 0 us ({len(_races(a))} races)",
        f"showdown 0.2.0: processing_us p50 1000 us, p99 1000 us, max 1000 us ({len(_races(b))} races)"]
    assert main(["history", "--store", store_url, "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == "no stored runs for these units\n"
    assert main(["history", "--store", store_url, "--scenario", "clean win for A"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 pass"


def _races(doc: dict) -> list:
    return [r for s in doc["scenarios"] for r in s["results"] if r["latency"].get("processing_us") is not None]


def test_history_without_a_store_says_how_to_give_one(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("UNOHIL_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["history"]) == 2
    assert "no results store: give --store" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["history", "--since", "yesterday", "--store", "x"])
    assert stop.value.code == 2 and "'yesterday' is not a date YYYY-MM-DD" in capsys.readouterr().err


def test_bench_records_its_samples_as_races(tmp_path, capsys):
    where = str(tmp_path / "s.sqlite")
    out = tmp_path / "b.json"
    assert main(["bench", "--kind", "showdown", "--races", "10", "--json", str(out), "--store", where]) == 0
    unit = json.loads(out.read_text())["units"]["showdown"]
    samples, identity = unit["samples"]["processing_us"], unit["identity"]
    with Store.open(where) as store:
        (trend,) = h.trend(store, "processing_us", h.Filter(kind="showdown"))
        assert store.rows("SELECT command, races FROM runs") == [("bench", 10)]
        assert store.rows("SELECT kind, firmware, serial, boot_id FROM units") == [
            ("showdown", identity["firmware"], identity["serial"], identity["boot_id"])]
    assert identity["firmware"].count(".") == 2     # the unit's own, from its IDENTITY
    assert trend["n"] == len(samples) == 10 and trend["max"] == max(samples)
    assert trend["p50"] == h.quantile(samples, 50)


def test_bench_through_a_rig_records_its_figures_and_the_unit(tmp_path):
    where = str(tmp_path / "s.sqlite")
    out = tmp_path / "b.json"
    assert main(["bench", "--device", "emu://showdown?clock=virtual", "--rig", "emurig://", "--races", "12",
                 "--json", str(out), "--store", where]) == 0
    doc = json.loads(out.read_text())
    figure = next(k for k in doc["samples"] if k.startswith("press_to_") and k.endswith("_less_floor_us"))
    with Store.open(where) as store:
        (trend,) = h.trend(store, figure, h.Filter(kind="showdown"))
        assert store.rows("SELECT kind, serial, boot_id FROM units") == [
            ("showdown", doc["identity"]["serial"], doc["identity"]["boot_id"])]
    assert trend["n"] == len(doc["samples"][figure]) > 0 and trend["max"] == max(doc["samples"][figure])


def test_the_default_store_is_in_the_users_data_folder_and_passwords_are_never_shown(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert main(["run", f"{LIB}/ties.yaml", "-q", "--store", "default"]) == 0
    assert (tmp_path / "data" / "unohil" / "results.sqlite").is_file()
    assert f"in store {tmp_path / 'data' / 'unohil' / 'results.sqlite'}" in capsys.readouterr().err
    assert main(["run", f"{LIB}/ties.yaml", "-q", "--store", "postgresql://lab:s3cret@127.0.0.1:1/x"]) == 0
    err = capsys.readouterr().err
    assert "postgresql://lab:***@127.0.0.1:1/x: cannot open it" in err and "s3cret" not in err


def test_compare_with_the_last_release(store_url, two_runs, capsys):
    (a, path_a), (b, path_b) = two_runs
    with Store.open(store_url) as store:
        first = record(store, a, "run", path_a)
    # b (firmware 0.2.0) against the newest stored run on another firmware before it: a's
    assert main(["compare", "last-release", path_b, "--store", store_url, "--fail-on", "regression"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"run {first} (last release) -> {path_b}:") and "processing_us median 0 us -> 1 ms" in out
    assert main(["compare", "last-release", path_a, "--store", store_url]) == 2       # nothing before a
    assert "last-release: no stored run before B" in capsys.readouterr().err


class _Counted:
    """A connection whose cursors count the statements sent: the store's round trips."""

    def __init__(self, conn):
        self.conn, self.sent = conn, 0

    def cursor(self):
        cur, outer = self.conn.cursor(), self

        class Cursor:
            def execute(self, sql, args=()):
                outer.sent += 1
                return cur.execute(sql, args)

            def executemany(self, sql, rows):
                outer.sent += len(rows)
                return cur.executemany(sql, rows)

            def fetchall(self):
                return cur.fetchall()
        return Cursor()

    def __getattr__(self, name):
        return getattr(self.conn, name)


def test_postgresql_records_a_run_in_a_few_statements_whatever_its_size(store_url, two_runs):
    """A PostgreSQL store on another machine pays a round trip a statement: a run's scenarios, races and figures
    go in one batch each, so a run with twice the races costs no more statements, and reads back the same."""
    (a, _), _ = two_runs
    doubled = {**a, "scenarios": a["scenarios"] * 2}
    sent = []
    with Store.open(store_url) as store:
        store.conn = counted = _Counted(store.conn)
        for doc in (a, doubled, a):
            before = counted.sent
            run_id = record(store, doc, "run")
            sent.append(counted.sent - before)
            back = stored_run(store, run_id)
            assert [[r["latency"] for r in s["results"]] for s in back["scenarios"]] == \
                   [[r["latency"] for r in s["results"]] for s in doc["scenarios"]]
            assert [(s["file"], s["line"], s["error"]) for s in back["scenarios"]] == \
                   [(s.get("file"), s.get("line"), s.get("error") or "") for s in doc["scenarios"]]
    races = sum(len(s["results"]) for s in a["scenarios"])
    if store_url.startswith("postgresql"):
        assert sent[1] == sent[2] <= 10 < races     # the first run also asks the tables' column types once
    else:           # SQLite is in the process: row by row costs no round trips
        assert sent[1] > sent[2] > races
