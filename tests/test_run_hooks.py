"""The runner's hooks (harness/run/hooks.py): a unit driven directly gets the neutral ones, and any other
implementation is asked what it cannot play and what to collect after each race, by the interface alone."""
import pytest

from unohil.harness import Driver
from unohil.harness.errors import ScheduleError
from unohil.harness.run.hooks import DIRECT, UnitHooks, hooks_of
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads

from samples import GOOD     # one clean win for A: fixtures/samples/clean_win.yaml

#: A scenario asking for the rig's view of its race: the direct path cannot play it.
RIG_EXPECTATION = GOOD.replace("name: clean win", "name: clean win seen by a rig") + """\
  rig:
    timestamp_error_us: {min: -100, max: 100}
"""


class Recording(UnitHooks):
    """A stimulus path of a test's own: refuses scenarios by name and keeps what each race ended with."""

    def __init__(self, refuse: str | None = None):
        self.refuse = refuse
        self.ended: list[tuple[str, int, str]] = []

    def unplayable(self, sc) -> str | None:
        return "this path cannot play it" if sc.name == self.refuse else super().unplayable(sc)

    def after_race(self, sc, race, events, end_us) -> None:
        self.ended.append((sc.name, race.index, str(race.status)))
        assert end_us > race.start_dev_us and events


def test_a_driver_without_hooks_gets_the_direct_path():
    with Driver.open("emu://showdown?clock=virtual") as d:
        assert hooks_of(d) is DIRECT
    (plain,) = loads(GOOD, "good.yaml")
    (rigged,) = loads(RIG_EXPECTATION, "rig.yaml")
    assert DIRECT.unplayable(plain) is None
    assert DIRECT.unplayable(rigged).startswith("needs a rig (--rig URL)")
    with pytest.raises(ScheduleError, match="needs a rig"):
        DIRECT.seen(3, 0, False, 1000)


def test_the_runner_asks_the_drivers_hooks_after_each_race_and_before_each_scenario():
    (sc,) = loads(GOOD, "good.yaml")
    with Driver.open("emu://showdown?clock=virtual") as d:
        d.hooks = hooks = Recording()
        res = Runner(d).run(sc)
        assert res.status == "pass", [r.failures or r.error for r in res.races]
        assert hooks.ended == [("clean win", 0, "pass")]
        hooks.refuse = "clean win"
        skipped = Runner(d).run(sc)
    assert (skipped.status, skipped.error, skipped.applicable) == ("skip", "this path cannot play it", False)
    assert len(hooks.ended) == 1        # a scenario not played ends no race
