"""What the three unit adapters share: a Driver, the unit's clock, the mirror of its generator, and
the checks every event goes through.

An adapter turns what a game needs (load three cards and run a showdown between these two players,
press the launcher, end this turn) into stimuli at device times (Driver.inject: the unit's clock is
the judge) and reads the unit's verdicts back. With `reference_rng` it predicts every draw of the
unit from SPEC 6 with the same seed (protocol/algorithms.py) and a different draw fails the game;
without it, only what does not depend on the unit's generator is checked.

Every frame the unit sends between two operations goes through `frames`, so a second verdict for
one showdown, race or press is found even when nobody waits for it.
"""
from __future__ import annotations

from unohil.protocol import catalogue as cat
from unohil.protocol.algorithms import Pcg32

from unohil.harness.errors import Nak

from .table import GameFailure

WAIT_US = 120_000_000          # host time a wait may take: a real-clock Flash idle spell lasts 20 s at most
MODE = cat.ENUM_VALUES["light_mode"]
# PR-1: a timer event (SD_GREEN, FL_TIMEOUT, ...) MAY be stamped later than its scheduled time, within the
# 2 ms of a reply, never earlier; the scheduled times themselves are in the verdicts' payloads
TIMER_LATE_US = 2000
LATE_TRIES = 4                  # an INJECT refused too_late on a real clock goes again up to 3 times
MAX_LEAD_EXTRA_US = 500_000


def lead_us(driver) -> int:
    """How far ahead of the unit's latest time a stimulus goes: what the link's timing asks
    (session/timing.py), and on a lossy line room for a lost reply's retry, which costs nothing on the
    virtual clock (device time only)."""
    lead = max(1000, driver.stimulus_lead_us())
    if driver.link.virtual and getattr(driver.link, "faults", None) is not None:
        lead += 3 * driver.command_timeout_us
    return lead


class UnitAdapter:
    kind = ""
    verdict = ""               # the event that closes one showdown, buzzer race or press
    # the events in which the unit says how a showdown, race, press or turn ended, and why (a live view
    # shows the latest): the verdict, and for the Flash its selections and penalties too
    outcomes: tuple[str, ...] = ()

    def __init__(self, driver, seed: int, config: dict[str, int]):
        self.d = driver
        self.reference = driver.has_cap("reference_rng")
        self.seed = seed
        self.config = dict(config)
        self.m: Pcg32 | None = None
        self.where = lambda event: event      # the game sets this: "game 3 round 2 turn 40: <event>"
        self.verdicts_expected = 0             # verdicts asked for so far in this game
        self.verdicts_seen = 0
        self.lights: dict[tuple[int, int], int] = {}   # (light, target) -> mode, as the unit last reported
        self.now = 0
        self.on_outcome = None                 # called with every frame of `outcomes` (a live view)
        self.stimuli: list[tuple[int, str, str, int]] = []   # (device us from the game's start, input, action, value)
        self.origin_us = 0                     # the device time the game started at
        self.lead = lead_us(driver)
        self.lead_extra = 0                    # added on a real clock after a stimulus came too late
        self.stats = None                      # the game's statistics (the game sets them)
        self.clean = driver.link.virtual and getattr(driver.link, "faults", None) is None

    # ---- a new game ----
    def new_game(self) -> None:
        d = self.d
        d.cancel_injections()
        d.reset("new_game")
        d.apply_config(self.config)
        d.config_set("rng_seed", self.seed)     # always sent: setting it is what seeds the generator
        if self.reference:
            self.m = Pcg32(self.seed)        # setting rng_seed seeds the unit's generator (SPEC 6)
        self.lights.clear()
        self.verdicts_expected = self.verdicts_seen = 0
        d.confirm_events()
        self.now = self.origin_us = d.last_reply_dev_us
        self.stimuli.clear()
        self.setup()

    def setup(self) -> None:
        """The unit's own part of a new game (Flash: registration and start)."""

    # ---- time ----
    def at(self, delay_us: int = 0) -> int:
        """A device time far enough ahead for a stimulus sent now."""
        base = max(self.now, self.d.last_reply_dev_us)
        if not self.d.link.virtual:
            # a real clock ran on since the unit last spoke (the host dealt, chose, waited): from its now, and
            # with the lead the link's latest round trips ask
            base = max(base, self.d.device_now())
            self.lead = lead_us(self.d) + self.lead_extra
        return base + self.lead + delay_us

    def inject(self, at_us: int, name: str, action: str = "press", value: int = 0) -> int:
        """The input at at_us, or as soon as the link allows when a slow link made at_us too close (a
        player who presses late): the time it was scheduled at, which every prediction then uses.

        On a real clock a busy host can take longer than the lead between reading the clock and the
        INJECT's arrival: the unit refuses it (too_late) and nothing happened, so it goes again later
        with twice the lead, a few times; the game's statistics count these."""
        for attempt in range(LATE_TRIES):
            at_us = max(at_us, self.at())
            try:
                self.d.inject(at_us, name, action, value)
                break
            except Nak as exc:
                if exc.error != "too_late" or self.d.link.virtual or attempt == LATE_TRIES - 1:
                    raise
                self.lead_extra = min(MAX_LEAD_EXTRA_US, max(self.lead, 1000))     # the lead, about doubled
                if self.stats is not None:
                    self.stats.count("stimuli sent again (too_late on a busy host)")
        self.stimuli.append((at_us - self.origin_us, name, action, value))
        return at_us

    # ---- reading ----
    def wait(self, name: str, what: str, pred=None):
        """Frames until the first `name` event (pred true), each through `frame`."""
        got = []

        def match(f):
            got.append(f)
            self.frame(f)
            return f.msg.NAME == name and (pred is None or pred(f))
        f = self.d.wait_for(match, WAIT_US, what)
        self.now = max(self.now, f.dev_us)
        return f

    def settle(self, until_us: int) -> None:
        """Every frame up to device time until_us, each through `frame`."""
        frames: list = []
        self.d.wait_until(until_us, collect=frames)
        if not self.clean:                  # a lost event is fetched back before anything is judged
            self.d.confirm_events(collect=frames)
        for f in frames:
            self.frame(f)
        self.now = max(self.now, until_us)

    def frame(self, f) -> None:
        e = f.msg
        if self.on_outcome is not None and e.NAME in self.outcomes:
            self.on_outcome(f)
        if e.NAME == "LIGHT":
            self.lights[(e.light, e.target)] = e.mode
        elif e.NAME == self.verdict:
            self.verdicts_seen += 1
            if self.verdicts_seen > self.verdicts_expected:
                raise GameFailure(self.where(f"{e.NAME} at {f.dev_us}"), "one verdict per "
                                  f"{'showdown' if self.kind == 'showdown' else 'race or press'}",
                                  f"verdict {self.verdicts_seen}", f"{self.verdicts_expected} asked for")
        self.observe(f)

    def observe(self, f) -> None:
        """A kind's own checks of every frame."""

    def expect_verdict(self) -> None:
        self.verdicts_expected += 1

    def expect(self, event: str, what: str, got, expected) -> None:
        if got != expected:
            raise GameFailure(self.where(event), what, got, expected)

    def expect_timer(self, event: str, what: str, stamped: int, scheduled: int) -> None:
        """A timer event's header time: its scheduled time, or up to TIMER_LATE_US later (PR-1)."""
        if not 0 <= stamped - scheduled <= TIMER_LATE_US:
            raise GameFailure(self.where(event), what + f" (PR-1: stamped at its scheduled time or up to "
                              f"{TIMER_LATE_US} us later)", stamped, scheduled)

    def lit(self, light: int, target: int) -> int:
        return self.lights.get((light, target), MODE["off"])
