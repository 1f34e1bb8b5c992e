"""Identity across outages (issue 29, item 7), with real processes on a real clock.

A TCP-served unit is killed in the second race of a run and another emulator process is started on its
port: the run rides out the outage, checks who answers, and goes on only if it is the same unit (its
serial; a new boot id is a reboot). Each race names the serial and boot id it ran on. Assertions are on
outcomes, never on how long anything took.
"""
import json
import signal

import pytest

from test_kills_and_outages import OutageInRaceTwo, Relay, address, quick_races, unohil

FIRST = 101


def _swap_run(emulator_process, tmp_path, second_serial: int):
    """The quick races through a relay to unit FIRST, which is killed at the second race's press and
    replaced, on its own port, by a unit of second_serial. Returns (races by scenario, the JSON, output, rc)."""
    first, (unit_url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0", "--serial", str(FIRST))
    host, port = address(unit_url)

    def kill_the_unit() -> None:
        relay.stop()
        first.send_signal(signal.SIGKILL)
        first.wait(10)

    def start_another() -> None:
        emulator_process("showdown", "--tcp", f"{host}:{port}", "--serial", str(second_serial))
        relay.start()

    outage = OutageInRaceTwo(kill_the_unit, start_another)
    relay = Relay((host, port), outage)
    result = tmp_path / "r.json"
    try:
        run = unohil("run", str(quick_races(tmp_path)), "--device", relay.url, "--json", str(result),
                     "--outage-budget", "20s")
        out, _ = run.communicate(timeout=120)
    finally:
        relay.stop()
    assert outage.restarted.is_set(), out
    doc = json.loads(result.read_text())
    races = {s["name"]: s["results"][0] | {"scenario_status": s["status"]} for s in doc["scenarios"]}
    return races, doc, out, run.returncode


def test_another_unit_on_the_port_after_an_outage_ends_that_devices_run_and_results_stay_the_first_units(
        emulator_process, tmp_path):
    races, doc, out, rc = _swap_run(emulator_process, tmp_path, second_serial=202)
    first = races["quick race 1"]
    assert first["status"] == "pass" and first["serial"] == FIRST and first["boot_id"], out
    assert races["quick race 2"]["status"] == "link-error" and races["quick race 2"]["serial"] == FIRST
    assert "another unit answers here" in races["quick race 2"]["error"], races["quick race 2"]["error"]
    for name in ("quick race 3", "quick race 4"):
        assert races[name]["status"] == "link-error", out
        assert "serial 202" in races[name]["error"] and f"serial {FIRST}" in races[name]["error"]
        assert races[name]["serial"] in (FIRST, None)      # never the unit that was not this run's
    (dev,) = doc["devices"]
    assert dev["serial"] == FIRST and "another unit answers here" in dev["error"]
    assert "another unit answers here" in out and rc == 1, out
    assert all(r["serial"] != 202 for r in races.values())


def test_the_same_unit_back_on_the_port_after_an_outage_goes_on_under_its_new_boot_id(emulator_process, tmp_path):
    races, doc, out, rc = _swap_run(emulator_process, tmp_path, second_serial=FIRST)
    assert {n: r["status"] for n, r in races.items()} == {
        "quick race 1": "pass", "quick race 2": "link-error", "quick race 3": "pass", "quick race 4": "pass"}, out
    assert all(r["serial"] == FIRST for r in races.values())
    before, after = races["quick race 1"]["boot_id"], races["quick race 3"]["boot_id"]
    assert before and after and before != after        # a new process: a new boot, the same unit
    assert races["quick race 4"]["boot_id"] == after
    assert "error" not in doc["devices"][0] and rc == 1
