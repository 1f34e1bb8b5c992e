"""The Flash library follows the base's IDENTITY.players (SPEC 8: 2 to 8 Player buttons, the retail base 6):
every base size passes it, a race that needs buttons the base lacks is skipped saying so, and the first
button the base does not have (player_{unit_players}) must be refused bad_value."""
from __future__ import annotations

import pytest

from unohil.harness import Driver
from unohil.harness.errors import ScenarioError
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import loads, load_paths

from test_conform import _virtual
from mutants_link import Firmware

REFUSAL = "a button the base does not have is refused bad_value and registers nobody"
REFUSAL_OFF = "switched off, a button the base does not have is still refused bad_value"


def run_library(d: Driver) -> dict[str, object]:
    runner = Runner(d)
    return {sc.name: runner.run(sc) for sc in load_paths(library_paths("flash"))}


def said(res) -> list[str]:
    return [f for r in res.races for f in r.failures] + [r.error for r in res.races if r.error] + [res.error]


@pytest.mark.parametrize("players", range(2, 9))
def test_every_base_size_the_spec_allows_passes_the_library(players):
    with Driver.open(f"emu://flash?clock=virtual&players={players}") as d:
        results = run_library(d)
    bad = {name: said(r) for name, r in results.items() if r.status not in ("pass", "skip")}
    assert not bad, bad
    refusal = results[REFUSAL]
    if players < 8:
        assert refusal.status == "pass", said(refusal)
    else:       # a base of 8 has every button: none to refuse
        assert refusal.status == "skip" and not refusal.applicable
        assert "names player_8 on this base of 8 Player buttons" in refusal.error
    # what a base too small for it skips, it skips saying which button it lacks
    for r in results.values():
        if r.status == "skip" and "a button this base does not have" in r.error:
            # the same rules on a bigger base: left unchecked on this one (conform: PARTIAL), not "not applicable"
            assert f"it has {players} Player buttons (IDENTITY.players)" in r.error and r.applicable


def test_a_sweep_runs_the_races_the_base_has_buttons_for():
    with Driver.open("emu://flash?clock=virtual&players=4") as d:
        res = run_library(d)["2 to 6 players register, PLAY/PAUSE starts a game of them all"]
    assert res.status == "pass"
    assert [(r.env["players"], r.status) for r in res.races] == [
        (2, "pass"), (3, "pass"), (4, "pass"), (5, "skip"), (6, "skip")]
    assert "presses player_4, a button this base does not have: it has 4 Player buttons" in res.races[3].error


class SaysSixHasEight(Firmware):
    """A base of 8 buttons whose IDENTITY says 6: it acts on buttons 6 and 7, which it claims not to have."""

    def _hello(self, f, m, t):
        r = super()._hello(f, m, t)
        return r._replace(players=6) if r.NAME == "IDENTITY" else r


def test_a_base_that_acts_on_a_button_beyond_its_count_fails():
    d = Driver(_virtual(SaysSixHasEight, "flash", players=8))
    try:
        d.handshake()
        results = run_library(d)
    finally:
        d.close()
    failed = {name for name, r in results.items() if r.status == "fail"}
    assert failed == {REFUSAL, REFUSAL_OFF}, failed      # switched on and switched off alike (FL-25)
    assert any("press player_{unit_players}" in f and "expected refused, the unit says acted" in f
               for f in said(results[REFUSAL])), said(results[REFUSAL])


def test_unit_players_is_a_flash_name_and_no_sweep_variable():
    flash = """
name: t
unit: flash
SWEEP
steps:
  - press: "player_{unit_players}"
    at: start + 1000
    error: bad_value
expect:
  count: {FL_REGISTERED: 0}
"""
    assert loads(flash.replace("SWEEP", ""), "t.yaml")
    with pytest.raises(ScenarioError) as exc:
        loads(flash.replace("SWEEP", "sweep: {unit_players: [3]}"), "t.yaml")
    assert "'unit_players' cannot name a sweep variable" in str(exc.value)
    showdown = flash.replace("unit: flash", "unit: showdown").replace("player_{unit_players}", "paddle_{unit_players}") \
        .replace("FL_REGISTERED", "SD_VERDICT").replace("SWEEP", "")
    with pytest.raises(ScenarioError) as exc:
        loads(showdown, "t.yaml")
    assert "unknown name(s) unit_players" in str(exc.value)
