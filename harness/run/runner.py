"""Runs scenarios on one connected unit: schedules each race's stimuli in device time and
collects what the unit said; run/judge.py decides, run/results.py keeps what was found.

A race: bring the unit to a known state (session/prepare.py), fix a start time on the
device clock, then schedule each step at its device time (INJECT when the device has test
mode; otherwise wait for that time and press with INPUT, measuring how far off the press
landed). When the events the steps count from came, and the waits for them, are
run/anchors.py's (a mixin of the Runner); what the unit's stimulus path needs beyond its
Driver (rig mode) comes through its hooks (run/hooks.py).
"""
from __future__ import annotations

import heapq
import logging
import time
from dataclasses import replace
from typing import Callable

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.errors import (DeviceMismatch, DeviceReset, HarnessError, LateStimulus, LinkError, Nak,
                                   ScheduleError)
from unohil.harness.outcome import Outcome, worst
from unohil.harness.run.buttons import beyond_the_unit, unit_names
from unohil.harness.run.hooks import hooks_of
from unohil.harness.run.anchors import Anchoring, EventMissing
from unohil.harness.run.judge import compare_races, judge
from unohil.harness.run.packed import pack
from unohil.harness.run.prompts import PromptHook
from unohil.harness.run.results import RaceResult, ScenarioResult, race_console
from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.lead import REAL_LEAD_US, VIRTUAL_LEAD_US
from unohil.harness.scenarios.model import REP, Scenario, Step
from unohil.harness.scenarios.units import RIG_ANCHORS, UNITS
from unohil.harness.session.driver import Driver
from unohil.harness.session.events import describe_conflict, describe_lost
from unohil.harness.session.outage import Outage, hung_unit_note
from unohil.harness.session.prepare import prepare

log = logging.getLogger("unohil.run")


STAMP_LAG_US = 2000         # how late a unit may stamp a timer's event (SPEC PR-1: within the 2 ms of a reply)
ROLE_SLACK_US = 1000        # beyond the link's round trip: the host's and the unit's turnaround for one stimulus
# Races run again when a host stall made a stimulus late: one stall is forgiven, a host that is always
# too slow for the schedule still ends in a link error after this many reruns.
LATE_RERUNS = 2


class Runner(Anchoring):
    """Runs scenarios on one connected driver."""

    def __init__(self, driver: Driver, *, host_timed: bool = False,
                 progress: Callable[[Scenario, int], None] | None = None,
                 stop: Callable[[], str | None] | None = None, outage: Outage | None = None,
                 attended: bool = False, prompts: PromptHook | None = None, rerun_failed: int = 0):
        self.d = driver
        self.attended = attended    # a person is at the unit: scenarios that wait for one run
        self.prompts = prompts      # shows their prompts (None: a person who needs none, e.g. a test)
        self.host_timed = host_timed or not driver.has_cap("test_mode")
        self.progress = progress
        self.stop = stop        # between races: why to stop now (a signal), or None to go on
        self.outage = outage if outage is not None else Outage()
        self.rerun_failed = rerun_failed    # a failed race is run again this many times, to tell flaky apart

    # ---- scenario level ----

    def run(self, sc: Scenario) -> ScenarioResult:
        res = ScenarioResult(sc, self.d.url, mode="host-timed" if self.host_timed else "test-mode")
        health0 = self.d.health.copy()
        t0 = time.perf_counter()
        skip = self._why_not(sc)
        if skip is not None:
            res.status, (res.error, res.applicable) = Outcome.SKIP, skip
            log.info("%s: skip %r: %s", self.d.name, sc.name, res.error)
            return res
        log.info("%s: scenario %r (%s:%d), %d race(s)", self.d.name, sc.name, sc.file, sc.line, len(sc.races))
        # races written for a base with other buttons: skipped, each saying why; all of them, the scenario
        beyond = {env["race"]: why for env in sc.races if (why := beyond_the_unit(sc, env, self._players()))}
        if beyond and len(beyond) == len(sc.races):
            res.status, (res.error, res.applicable) = Outcome.SKIP, next(iter(beyond.values()))
            return res
        for env in sc.races:
            if self.d.link_down is not None and env["race"] not in beyond:
                self._recover()         # once per race while the link stays down, without waiting
            if env["race"] in beyond:
                race = RaceResult(env["race"], env, status=Outcome.SKIP, error=beyond[env["race"]][0])
            elif self.d.link_down is not None:
                race = RaceResult(env["race"], env, status=Outcome.LINK_ERROR, error=f"not run: {self.d.link_down}")
            else:
                race = self._race_guarded(sc, env)
                for _ in range(LATE_RERUNS):
                    if race.late is None:
                        break
                    # A host stall kept a stimulus from the unit in time: nothing was judged, so the race
                    # runs again rather than counting against anyone; why each earlier try ended is kept.
                    self._recover(race)
                    if self.d.link_down is not None:
                        break           # the link went: the late try stays a link error, saying why
                    before = race.reruns + [race.late]
                    race = self._race_guarded(sc, env)
                    race.reruns = before
                if race.status in (Outcome.RESET, Outcome.LINK_ERROR) and self.d.link_down is None:
                    self._recover(race)
                self._retry_failed(sc, env, race)
            race.frames, race.console = pack(race.frames), race_console(self.d.console_log, race)   # run/packed.py
            res.races.append(race)
            # INFO whatever the outcome: a failed race is a result, not a fault of the harness
            log.info("%s: %r race %d: %s%s",
                    self.d.name, sc.name, race.index, race.status,
                    "".join(f"\n  {x}" for x in ([race.error] if race.error else []) + race.failures))
            if self.progress is not None:
                self.progress(sc, race.index)
            why = self.stop() if self.stop is not None and len(res.races) < len(sc.races) else None
            if why is not None:
                res.status, res.error = worst([Outcome.INTERRUPTED] + [r.status for r in res.races]), why
                break
        else:
            compare_races(sc, res.races)
            res.status = worst(r.status for r in res.races)
        res.health = self.d.health.minus(health0)
        res.wall_s = time.perf_counter() - t0
        return res

    def _retry_failed(self, sc: Scenario, env: dict, race: RaceResult) -> None:
        """--rerun-failed: a failed race run again, up to the count or its first pass; the tries' statuses are
        kept with it and it stays failed (a pass among them makes it flaky, never a pass)."""
        for _ in range(self.rerun_failed if race.status is Outcome.FAIL else 0):
            if self.d.link_down is not None:
                break
            again = self._race_guarded(sc, env)
            race.retries.append(str(again.status))
            if again.status is not Outcome.FAIL:
                break

    def _players(self) -> int | None:
        return self.d.identity.players if self.d.identity is not None else None

    def _why_not(self, sc: Scenario) -> tuple[str, bool] | None:
        """Why this unit cannot run the scenario, and whether the scenario applies to it at all
        (False: it is written for another variant); None if it can run it."""
        d = self.d
        if d.kind != sc.unit:
            return f"{d.url} is a {d.kind} unit, the scenario needs {sc.unit}", True
        if sc.attended and not self.attended:
            return "waits for a person (--attended)", True
        # a bench thing, not the unit's: what it checks is for another bench (counted as not applicable)
        why = hooks_of(d).unplayable(sc)
        if why is not None:
            return why, False
        unmet = [need for need in sc.needs if d.has_cap(need.removeprefix("no ")) == need.startswith("no ")]
        if unmet:
            # written for another form of the unit (SD-11's two kinds of tie), or for a capability
            # this unit lacks, which leaves the scenario's rule unchecked on it
            variant = all(need.removeprefix("no ") in cat.UNITS[d.kind].variants for need in unmet)
            return f"needs a unit with {', '.join(unmet)}; {d.url} is not one", not variant
        if not d.has_cap("config_set"):
            wanted = sc.parameters_set() + (["rng_seed"] if sc.seed is not None else [])
            if wanted:
                return f"needs capability config_set to set {', '.join(wanted)}, which {d.url} does not have", True
        if sc.timing == "exact" and self.host_timed:
            return ("needs test mode: its stimuli must land on exact device microseconds, which host-timed "
                    "presses cannot promise"), True
        placement = d.stimulus_placement_us()
        if sc.timing == "exact" and placement:
            return (f"needs its stimuli on exact device microseconds; through this rig they land within "
                    f"{placement} us of their time (the two clocks' uncertainty)"), True
        return None

    def _recover(self, race: RaceResult | None = None) -> None:
        """After a reset or a link error: a new session, so the next race runs on a known unit.

        A link that is gone is waited for, as long as the outage budget lasts, and what the outage
        was (its cause, how long) is added to the error of the race it cut. Once a budget is spent
        the link is tried once per race, each a link error saying why, until it is back."""
        d = self.d
        if d.replaced is not None:
            return      # another unit answers at the URL: this device's run is over
        try:
            if d.link_down is None:
                _, what = self.outage.ride_out(d.reconnect)
            else:
                d.reconnect()
                what = "the link was back"
            d.link_down = None
        except HarnessError as exc:
            d.link_down = what = str(exc)
            if d.replaced is not None and self.outage.say is not None:
                self.outage.say(d.replaced)
        if race is not None and what:
            race.error = f"{race.error}; {what}" if race.error else what

    def _race_guarded(self, sc: Scenario, env: dict) -> RaceResult:
        race = RaceResult(env["race"], env)
        self._ran_on(race)
        h0 = self.d.health.copy()
        lost0 = self._lost0 = len(self.d.events.lost)
        conflicts0 = len(self.d.events.conflicts)
        aborted = True
        try:
            self._race(sc, env, race)
        except DeviceReset as exc:
            race.status, race.error = Outcome.RESET, str(exc)
        except LateStimulus as exc:
            race.status, race.error, race.late = Outcome.LINK_ERROR, str(exc), str(exc)
        except (LinkError, DeviceMismatch) as exc:     # a mismatch: another unit answers since a reconnect
            race.status, race.error = Outcome.LINK_ERROR, str(exc) + hung_unit_note(self.d, exc)
        except ScheduleError as exc:
            race.status, race.error = Outcome.ERROR, str(exc)
        except Nak as exc:
            race.status, race.error = Outcome.FAIL, str(exc)
            race.failures.append(str(exc))
        except EventMissing as exc:
            race.status = Outcome.FAIL
            race.failures.append(str(exc))
        else:
            aborted = False
        if aborted:
            self.d.dirty = True
        dh = self.d.health.minus(h0)
        race.health = {k: v for k, v in dh.as_dict().items() if v and k not in ("frames_rx", "frames_tx", "bytes_rx")}
        if dh.events_lost and race.status in (Outcome.PASS, Outcome.FAIL):
            which = describe_lost(self.d.events.lost[lost0:])
            # A failure judged on an incomplete event stream is the link's fault, not the device's.
            race.error = (f"{dh.events_lost} event(s) lost on the link and not recoverable ({which})"
                          if race.status is Outcome.PASS else
                          f"{dh.events_lost} event(s) lost on the link ({which}); the failure cannot be trusted")
            race.status = Outcome.LINK_ERROR
        conflicts = self.d.events.conflicts[conflicts0:]
        if conflicts and race.status in (Outcome.PASS, Outcome.FAIL, Outcome.LINK_ERROR):
            # Two payloads under one event_seq are the unit's, whatever the line lost besides.
            race.failures.extend(describe_conflict(*c) for c in conflicts)
            race.status = Outcome.FAIL
        return race

    def _ran_on(self, race: RaceResult) -> None:
        ident = self.d.identity
        if ident is not None:
            race.serial, race.boot_id = ident.serial, ident.boot_id

    # ---- race level ----

    def _start_time(self) -> int:
        """The race's time zero on the device clock: far enough ahead for its first stimulus."""
        d = self.d
        if self._instant_link():
            return d.last_reply_dev_us + VIRTUAL_LEAD_US
        # A link with transit time (a virtual one with delay faults, too) needs a real lead: the most of the
        # floor and what the link has shown (session/timing.py)
        return d.device_now() + max(REAL_LEAD_US, self._lead())

    def _instant_link(self) -> bool:
        """A virtual link that has shown no transit time at all (no delay, no queueing, no split bursts)."""
        d = self.d
        return (d.link.virtual and (d.clock.estimate or d.sync_clock()).best_rtt_us == 0
                and d.timing.worst_round_trip_us() == 0 and d.timing.late_us() == 0)

    def _race(self, sc: Scenario, env: dict, race: RaceResult) -> None:
        """One race: the unit brought to a known state and time zero fixed here, then its steps scheduled
        (_schedule_steps) and what the unit said collected and judged (_collect_race)."""
        d = self.d
        d.inbox.clear()
        self._queue: list = []
        self._injected: list[int] = []      # heap: device times of this race's stimuli that may be pending
        self._race_ref = race
        self._env = env
        prepare(d, sc.config, sc.race_seed(env["race"]), sc.physical)
        self._ran_on(race)      # preparing may have rebooted the unit (a new boot id)
        self._config = dict(sc.config)      # the configuration in force: config steps change it
        self._configs = [dict(self._config)]
        start = self._start_time()
        race.start_dev_us = start
        if d.trace is not None:     # where each race begins, for a trace read back (unohil record --from-trace)
            d.trace.note(d.link.now_us(), "race", scenario=sc.name, file=str(sc.file), line=sc.line,
                         race=env["race"], env={k: v for k, v in env.items() if k != "race"}, start_dev_us=start)
        self._frontier = start - 1      # the latest event time the steps so far had to wait for
        self._file = sc.file
        events: list[Frame] = []
        race.frames = events        # what came so far, kept if an anchor never comes (unohil replay compares it)
        anchors = {"start": start, "previous": start}
        scheduled, last_t = self._schedule_steps(sc, env, race, anchors, events, start)
        self._collect_race(sc, env, race, anchors, events, scheduled, start, last_t)

    def _schedule_steps(self, sc: Scenario, env: dict, race: RaceResult, anchors: dict, events: list[Frame],
                        start: int) -> tuple[list[tuple[Step, int, int, int]], int]:
        """Each step at its device time, its anchors found on the way: (the stimuli scheduled, the last one's time)."""
        unit = UNITS[sc.unit]
        scheduled: list[tuple[Step, int, int, int]] = []   # step, input, edge, time
        last_t = start
        for step in sc.steps:
            if step.action == "wait_for":
                anchors["previous"] = self._wait_for(step, anchors["previous"], max(last_t, anchors["previous"]),
                                                     events, sc, env)
                last_t = max(last_t, anchors["previous"])
                continue
            if step.at.anchor in unit.anchors:
                anchors[step.at.anchor] = self._anchor(unit.anchors[step.at.anchor], step.at, anchors["previous"],
                                                       max(last_t, anchors["previous"]), events, sc, step)
                self._frontier = max(self._frontier, anchors[step.at.anchor])
            elif step.at.anchor in RIG_ANCHORS[sc.unit]:
                anchors[step.at.anchor] = self._seen(step, anchors["previous"], max(last_t, anchors["previous"]), sc)
                self._frontier = max(self._frontier, anchors[step.at.anchor])
            t = step.at.resolve(anchors, env)
            if step.roles:
                step = self._cast(step, anchors[step.at.anchor], t, events, race)
            if step.action == "config":
                self._set_config(step, t, events, race)
                anchors["previous"] = last_t = max(last_t, t)
                continue
            every = expr.evaluate(step.every, env) if step.every is not None else 0
            count = step.count(env)
            for k in range(count):
                tk = t + k * every
                if k and step.until is not None and self._came(step, t, tk, events):
                    break
                stimuli = self._stimuli(step, tk, env | {REP: k})
                for inp, edge, val, at in stimuli:
                    self._apply(step, inp, edge, val, at, events, race)
                    scheduled.append((step, inp, edge, at))
                    last_t = max(last_t, at)
                # previous: the step's last stimulus (a hold's release), a wait's time
                anchors["previous"] = max((at for *_, at in stimuli), default=tk)
            else:
                if step.until is not None:
                    self._until_after_cap(step, t, count, last_t, events, sc)
        return scheduled, last_t

    def _collect_race(self, sc: Scenario, env: dict, race: RaceResult, anchors: dict, events: list[Frame],
                      scheduled: list[tuple[Step, int, int, int]], start: int, last_t: int) -> None:
        """The verdicts and everything the unit said up to the race's end, judged."""
        d = self.d
        unit = UNITS[sc.unit]
        n_verdicts = sc.verdict_count(env)
        verdict_name = unit.verdict
        got = [f for f in events if f.msg.NAME == verdict_name]
        deadline_note = f"{n_verdicts} {verdict_name} event(s) of scenario {sc.name!r}"
        if len(got) < n_verdicts:
            # every verdict is of an input scheduled by now, so one bound after the last covers them all
            until = self._until(sc, verdict_name, max(last_t, anchors["previous"]))
            while len(got) < n_verdicts:
                f = self._wait_event(lambda f: f.msg.NAME == verdict_name, until,
                                     f"{verdict_name} ({len(got) + 1} of {deadline_note})", events)
                got.append(f)
        end = last_t
        if got:
            end = max(end, got[-1].dev_us)
        if sc.end is not None:
            if sc.end.anchor in unit.anchors:
                anchors[sc.end.anchor] = self._anchor(unit.anchors[sc.end.anchor], sc.end, anchors["previous"],
                                                      max(last_t, anchors["previous"]), events, sc, None)
            end = max(end, sc.end.resolve(anchors, env))
        elif not n_verdicts:
            end = max(end, anchors["previous"] + 1_000_000)
        self._wait_time(end, events)
        observed = max((q[0] for q in self._queue), default=end)
        self._wait_time(observed, events)
        # An event lost at the very end has no later event to reveal its gap: ask the device how
        # far it got, so the race is judged on everything it said (or becomes a link error). The
        # unit goes on meanwhile (the more so when STATUS has to be asked again): of what comes now,
        # only what it stamped by the race's end (its timers up to PR-1's lateness) is the race's.
        heard = len(events)
        d.confirm_events(events)
        events[heard:] = [f for f in events[heard:] if f.dev_us <= observed + STAMP_LAG_US]
        # a stimulus at start lands up to its placement earlier (a rig's edge through two clocks)
        placement = d.stimulus_placement_us()
        events = [f for f in events if f.dev_us >= start - 1 - placement]
        judge(sc, env, race, events, scheduled, host_timed=self.host_timed, clock=d.clock.estimate,
              configs=self._configs, placement_us=placement)
        hooks_of(d).after_race(sc, race, events, end)   # e.g. a rig's view beside the unit's

    def _cast(self, step: Step, anchor_t: int, t: int, events: list[Frame], race: RaceResult) -> Step:
        """The step with the players its roles name: the roles in force at its anchor time, as the
        unit reported them up to then. The runner waits for those reports (and asks the unit how far
        it got, so none is missing) before it can schedule the step; on a link with transit time it
        says so when that left too little time to get the stimulus there."""
        d = self.d
        if not events or events[-1].dev_us <= anchor_t:
            self._wait_time(anchor_t, events)
            d.confirm_events(events)
        self._frontier = max(self._frontier, anchor_t)
        unit = UNITS[d.kind]
        roles = rl.at_time(unit.roles, events, anchor_t)
        start = race.start_dev_us
        where = f"{self._file}:{step.line}: the step at line {step.line} ({step.text} at {step.at.text})"
        inputs, cast = [], []
        for role in step.roles:
            button = roles.button(role) if roles is not None else None
            if button is None:
                raise EventMissing(f"{where} names {role}, but at its anchor ({anchor_t - start} us) the game has no "
                               f"such player: " + (roles.describe() if roles is not None else
                                                   f"the unit reported no game ({unit.roles.players[0]})"))
            inputs.append(unit.inputs[unit.roles.buttons[button]])
            cast.append(f"{role} = player {button}")
        est = d.clock.estimate or d.sync_clock()
        if not (d.link.virtual and est.best_rtt_us == 0):
            needed = self._lead()
            lead = t - d.device_now()
            if lead < needed <= t - anchor_t - d.transit_margin_us():
                # the step leaves the time a stimulus needs after its anchor: the reports came late (lost
                # and fetched back), which is the link's doing; the race is run again like any late stimulus
                raise LateStimulus(f"{where} names {', '.join(step.roles)}: the unit's reports up to its anchor "
                                   f"at {anchor_t - start} us came in too late to schedule it ({lead} us before "
                                   f"the step's {t - start} us, less than the {needed} us this link needs)")
            if lead < needed:
                # not the file's fault (a faster link carries it) nor the unit's: this link cannot; running the
                # race again would not help
                raise LinkError(f"the link is too slow for this schedule: {where} names {', '.join(step.roles)}, "
                                f"who is known once the unit has reported everything up to its anchor at "
                                f"{anchor_t - start} us, which left {lead} us before the step's {t - start} us, less "
                                f"than the {needed} us this link needs to get a stimulus there (on this link, "
                                f"anchor the step on an earlier event or give it more time)")
        text = f"{step.text} ({', '.join(cast)})"
        if step.action == "hold":
            return replace(step, value=step.value | sum(1 << i for i in inputs), input=step.input
                           if step.input is not None else inputs[0], roles=(), text=text)
        return replace(step, input=inputs[0], roles=(), text=text)

    def _stimuli(self, step: Step, t: int, env: dict):
        """(input, edge, value, device time) of one repetition of a step; env includes rep, its index."""
        unit = UNITS[self.d.kind]
        if step.action == "wait":
            return []
        if step.action == "physical":
            return [(unit.inputs[name], *unit.switches[name][position], t) for name, position in step.switches.items()]
        named = [unit.inputs[n.name(env | unit_names(self.d.kind, self._players()))] for n in step.names]
        if step.action == "hold":
            dur = expr.evaluate(step.hold_for, env)
            value = step.value | sum(1 << i for i in named)
            inputs = [i for i in range(16) if value >> i & 1]
            return [(i, "press", 0, t) for i in inputs] + [(i, "release", 0, t + dur) for i in inputs]
        return [(named[0] if named else step.input, step.action_edge, step.value, t)]

    def _lead(self) -> int:
        """How far ahead of the device's now a stimulus must be sent to get there in time: on a link with
        transit time its round trip, the clock's uncertainty both ways and the turnaround."""
        d = self.d
        if self._instant_link():
            return VIRTUAL_LEAD_US
        return d.stimulus_lead_us() + ROLE_SLACK_US

    def _confirm_us(self) -> int:
        """What asking the unit how far it got (STATUS) costs before a stimulus can follow: nothing on an
        instant link, else the link's worst round trip and its jitter."""
        t = self.d.timing
        return 0 if self._instant_link() else t.worst_round_trip_us() + t.jitter_us()

    def _set_config(self, step: Step, t: int, events: list[Frame], race: RaceResult) -> None:
        """A config step: CONFIG_SET of its parameters once the device clock reaches its time (a host
        command, not a stimulus: the unit allows it only while idle, SPEC 4.7); later waits count with
        the new values."""
        self._wait_time(t, events)
        try:
            # a unit without config_set runs only a step that changes nothing (_why_not): nothing to send
            if self.d.has_cap("config_set"):
                self.d.apply_config(step.config)
        except Nak as exc:      # the unit's refusal (wrong_state: not idle) fails the race, naming the step
            raise EventMissing(f"the step at line {step.line} ({step.text} at {t - race.start_dev_us} us): {exc}") \
                from None
        self._frontier = max(self._frontier, t)
        self._config.update(step.config)
        self._configs.append(dict(self._config))

    def _apply(self, step: Step, inp: int, edge: str, value: int, at: int, events: list[Frame],
               race: RaceResult) -> None:
        if not self.host_timed:
            self._make_room(at, step, events, race)
            try:
                self.d.inject(at, inp, edge, value)
            except Nak as exc:
                if exc.error != "too_late":
                    raise
                where = f"the step at line {step.line} ({step.text} at {step.at.text})"
                if at <= self._frontier:
                    # Impossible on any link: steps are scheduled in order, and to get to this one the
                    # runner had to see an event at or after its time.
                    raise ScheduleError(f"{self._file}:{step.line}: {where} is at {at - race.start_dev_us} us, "
                                        f"not after the "
                                        f"{self._frontier - race.start_dev_us} us of an event the steps "
                                        f"before it wait for; anchor it on an earlier event or give it "
                                        f"more time") from None
                # Its time was still ahead when the runner could know it: the link or the host was too slow.
                raise LateStimulus(f"INJECT too_late: {where} was still ahead when the runner could schedule it, "
                                f"but past when the INJECT arrived; the link is too slow for this schedule"
                                ) from None
            return
        heapq.heappush(self._queue, (at, len(self._queue) + 1_000_000 * race.index, step, inp, edge, value))

    def _make_room(self, at: int, step: Step, events: list[Frame], race: RaceResult) -> None:
        """INJECT flow control: never more stimuli pending than the unit's queue holds (IDENTITY
        inject_queue); when it is full, wait on the device clock until the earliest has run."""
        depth = self.d.identity.inject_queue if self.d.identity is not None else cat.INJECT_QUEUE
        pending = self._injected
        while len(pending) >= depth:
            first = heapq.heappop(pending)
            if first >= at:
                raise ScheduleError(f"{self._file}:{step.line}: the step at line {step.line} ({step.text}) "
                                    f"needs more than {depth} stimuli pending at once (the unit's inject_queue) "
                                    f"at {at - race.start_dev_us} us; spread them out with 'every'")
            self._wait_time(first, events)
        heapq.heappush(pending, at)

    # Host-timed presses wait in a queue ordered by device time; every wait below fires
    # the ones that fall due while it waits, so presses go out in time order whatever
    # order the steps resolved in.

    def _press_due(self, until: int, events: list[Frame]) -> None:
        q = self._queue
        while q and q[0][0] <= until:
            at, _, step, inp, edge, value = heapq.heappop(q)
            self.d.wait_until(at, collect=events, margin_us=0)
            try:
                self.d.input(inp, edge, value)
            except Nak as exc:
                # The unit also reports the refusal as INPUT_SEEN, which the step's expectation judges.
                if step.expect != "refused":
                    self._race_ref.failures.append(f"step at line {step.line} ({step.text}): {exc}")

    def _wait_time(self, t: int, events: list[Frame]) -> None:
        if self._queue:
            self._press_due(t, events)
        self.d.wait_until(t, collect=events)
