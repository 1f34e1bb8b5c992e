"""Runs scenarios on one connected unit: schedules each race's stimuli in device time and
collects what the unit said; run/judge.py decides, run/results.py keeps what was found.

A race: bring the unit to a known state (session/prepare.py), fix a start time on the
device clock, then schedule each step at its device time (INJECT when the device has test
mode; otherwise wait for that time and press with INPUT, measuring how far off the press
landed). Event anchors ("green + 180000") resolve to the latest such event at or before
the previous step's time among those received, or, if there is none yet, to the first one
to come; "next green" resolves to the first green at or after the previous step's time.
"""
from __future__ import annotations

import heapq
import logging
import time
from dataclasses import replace
from typing import Callable

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.errors import (DeviceMismatch, DeviceReset, HarnessError, LateStimulus, LinkError, Nak,
                                   ScheduleError, WaitTimeout)
from unohil.harness.outcome import Outcome, worst
from unohil.harness.run.buttons import beyond_the_unit, unit_names
from unohil.harness.run.hooks import hooks_of
from unohil.harness.run.judge import Anchors, compare_races, judge, pattern_matches
from unohil.harness.run.packed import pack
from unohil.harness.run.prompts import Answer, Prompt, PromptHook, answer_text
from unohil.harness.run.results import RaceResult, ScenarioResult, race_console
from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.lead import REAL_LEAD_US, VIRTUAL_LEAD_US
from unohil.harness.scenarios.model import REP, RoleMatcher, Scenario, Step, TimeMatcher
from unohil.harness.scenarios.units import RIG_ANCHORS, UNITS
from unohil.harness.session.driver import Driver
from unohil.harness.session.events import describe_conflict, describe_lost
from unohil.harness.session.outage import Outage, hung_unit_note
from unohil.harness.session.prepare import prepare
from unohil.harness.text import duration

log = logging.getLogger("unohil.run")


# Beyond the unit's own bound for an event (the catalogue's latest_after_input over the scenario's
# configuration), a wait allows this much more, for what the bound does not count: the unit's
# processing (a timer's event a few ms late is still a right unit: processing is a budget, not a
# verdict), the link (a burst of events ahead of the awaited one: 30 ms at 115200 baud), the clock
# mapping's error over a long wait (100 ppm of a 5 min sleep: 30 ms) and, on a real clock, a loaded
# host's scheduling (tens of ms). 200 ms covers their sum with room, and costs a scenario mistake
# only that much beyond the bound.
WAIT_MARGIN_US = 200_000
STAMP_LAG_US = 2000         # how late a unit may stamp a timer's event (SPEC PR-1: within the 2 ms of a reply)
ROLE_SLACK_US = 1000        # beyond the link's round trip: the host's and the unit's turnaround for one stimulus
# Races run again when a host stall made a stimulus late: one stall is forgiven, a host that is always
# too slow for the schedule still ends in a link error after this many reruns.
LATE_RERUNS = 2


class _Missing(Exception):
    """An event a step or the end waits for never came, though the unit answers: the race fails."""


class Runner:
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
        except _Missing as exc:
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

    def _anchor(self, name: str, spec, previous: int, since: int, events: list[Frame], sc: Scenario,
                step: Step | None) -> int:
        """Device time of an event anchor.

        "green": the latest green received so far at or before the previous step's time,
        or, if there is none yet, the first one to come. "next green": the first green at
        or after the previous step's time (for events that happen again). An event still to
        come is waited for until the unit's bound for it after since, the latest step time so far.
        """
        where = "the end" if step is None else f"step at line {step.line}"
        what = f"{name} (anchor of {where} in {sc.name!r})"
        if spec.next:
            for f in events:
                if f.msg.NAME == name and f.dev_us >= previous:
                    return f.dev_us
            f = self._wait_event(lambda f: f.msg.NAME == name and f.dev_us >= previous, self._until(sc, name, since),
                                 what, events)
            return f.dev_us
        best = None
        for f in events:
            if f.msg.NAME == name and f.dev_us <= previous:
                best = f
        if best is not None:
            return best.dev_us
        for f in events:
            if f.msg.NAME == name:
                return f.dev_us
        f = self._wait_event(lambda f: f.msg.NAME == name, self._until(sc, name, since), what, events)
        return f.dev_us

    def _seen(self, step: Step, previous: int, since: int, sc: Scenario) -> int:
        """Unit time of a rig anchor (seen_X): the rig's capture of that watched line going active, chosen as an
        event anchor's event is (the latest at or before the previous step's time, else the first to come; with
        next, the first at or after it). Waited for as long as the unit may take for any of its anchor events."""
        unit = UNITS[sc.unit]
        bound = max(unit.latest_us(e, self._config) for e in unit.anchors.values())
        deadline, how, _ = self._until_bound(sc, bound, "the most the unit takes for any event a step counts from",
                                             since)
        line = RIG_ANCHORS[sc.unit][step.at.anchor]
        try:
            return hooks_of(self.d).seen(line, previous, step.at.next, max(0, deadline - self.d.now_us()))
        except WaitTimeout:
            raise _Missing(f"no {step.at.anchor} (the rig's capture of line {line}, anchor of step at line "
                           f"{step.line} in {sc.name!r}) {how}") from None

    def _until(self, sc: Scenario, event: str, since: int) -> tuple[int, str, int]:
        """Until when (host time) to wait for event, how that was decided (to say if it never comes), and
        the same deadline on the unit's clock (an event stamped by then counts, however late it arrived).

        The unit's own bound for it after the latest step time (the catalogue's latest_after_input over
        the scenario's configuration) plus WAIT_MARGIN_US; a scenario's timeout_us, from now, instead."""
        unit = UNITS[sc.unit]
        if sc.timeout_us is not None:
            return self._until_bound(sc, 0, "", since)
        return self._until_bound(sc, unit.latest_us(event, self._config),
                                 f"{unit.latest_after_input[event].text}, the most it takes the unit", since)

    def _until_bound(self, sc: Scenario, bound: int, why: str, since: int) -> tuple[int, str, int]:
        """The wait's deadline (host time), how it was decided and the deadline in device time: the scenario's
        timeout_us from now, else bound (why it is the bound) after the step time since, plus WAIT_MARGIN_US."""
        d = self.d
        est = d.clock.estimate or d.sync_clock()
        if sc.timeout_us is not None:
            host = d.now_us() + sc.timeout_us
            return host, f"within {duration(sc.timeout_us)} (the scenario's timeout_us)", int(est.to_device(host))
        deadline = since + bound + WAIT_MARGIN_US
        start = self._race_ref.start_dev_us
        return int(est.to_host(deadline)), (
            f"by {duration(deadline - start)}: {duration(bound)} ({why}) after the step time "
            f"{duration(since - start)}, plus a margin of {duration(WAIT_MARGIN_US)}"), deadline
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
                raise _Missing(f"{where} names {role}, but at its anchor ({anchor_t - start} us) the game has no "
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

    def _matching(self, pattern, events: list[Frame], since: int) -> Frame | None:
        """The first event at or after since that matches the pattern (by roles in force just before it)."""
        return next((f for f in events if f.dev_us >= since and self._fits(pattern, f, events)), None)

    def _fits(self, pattern, f: Frame, events: list[Frame]) -> bool:
        """Whether f matches a step's pattern (until, wait_for) as an expectation's would: roles as in
        force just before it, device times from the anchors at it."""
        if f.msg.NAME != pattern.name:
            return False
        unit = UNITS[self.d.kind]
        roles = None
        if unit.roles is not None and any(isinstance(m, RoleMatcher) for m in pattern.fields.values()):
            prior = [e for e in events if e is not f and e.dev_us <= f.dev_us]
            roles = rl.before_each(unit.roles, prior + [f])[-1]
        anchors = None
        if any(isinstance(m, TimeMatcher) for m in pattern.fields.values()):
            known = events if any(e is f for e in events) else events + [f]
            anchors = Anchors(unit, known, self._race_ref.start_dev_us, self._env)
        return pattern_matches(f, pattern, roles, anchors, unit)

    def _came(self, step: Step, first: int, next_t: int, events: list[Frame]) -> bool:
        """Whether a step repeated until an event has seen it, deciding on the repetition due at next_t:
        the runner hears the unit up to the lead that repetition needs, then looks. Hearing up to a device
        time takes until its events can have arrived (the transit margin), so it stops that much earlier."""
        # the STATUS that confirms what came costs a round trip too, before the repetition's INJECT is sent
        hear_until = next_t - self._lead() - self.d.transit_margin_us() - self._confirm_us()
        self._wait_time(hear_until, events)
        self.d.confirm_events(events)
        self._frontier = max(self._frontier, hear_until)
        return self._matching(step.until, events, first) is not None

    def _until_after_cap(self, step: Step, first: int, count: int, last_t: int, events: list[Frame],
                         sc: Scenario) -> None:
        """A loop that gave its stimulus the most times it may: its event still has to come (from the
        last repetition, within the unit's bound for it), or the race fails saying what it waited for."""
        if self._matching(step.until, events, first) is not None:
            return
        pattern = step.until
        what = (f"{pattern.text} (until of the step at line {step.line}, {step.text}, after its {count} "
                f"repetitions, the most its times allows)")
        self._wait_event(lambda f: f.dev_us >= first and self._fits(pattern, f, events),
                         self._until(sc, pattern.name, last_t), what, events)

    def _wait_for(self, step: Step, previous: int, since: int, events: list[Frame], sc: Scenario, env: dict) -> int:
        """A wait_for step: the time of the first matching event at or after the previous step's time;
        one that does not come within the timeout (from previous; by default the unit's bound for it
        after the latest step) fails the race saying what was waited for, or with on_timeout: continue
        the steps after it go on from previous + timeout. A wait for a person shows its prompt first
        and says how it ended."""
        if step.prompt is None:
            return self._await(step, previous, since, events, sc, env, "")[0]
        # the prompt is shown when the wait starts on the unit's clock (in test mode the runner gets
        # here as soon as the steps before it are scheduled), and names the players of the game then
        self._wait_time(previous, events)
        self._frontier = max(self._frontier, previous)
        text = step.prompt.name(env | self._players_named(step, previous, events))
        prompt = Prompt(sc.name, str(sc.file), step.line, env["race"], self.d.url, text,
                        step.awaited.text, previous, self._race_ref.start_dev_us, expr.evaluate(step.timeout, env))
        log.info("%s: %r race %d waits for a person: %s", self.d.name, sc.name, env["race"], prompt.text)
        if self.prompts is not None:
            self.prompts.shown(prompt)
        answer = Answer(prompt, None, f"not answered: the race was cut short waiting for {prompt.awaited}")
        try:
            t, f = self._await(step, previous, since, events, sc, env, f", prompt {prompt.text!r}")
            answer = Answer(prompt, f, answer_text(f, events, sc.unit, prompt.start_dev_us) if f is not None else
                            f"not answered within {duration(prompt.timeout_us)}: no {prompt.awaited}")
            return t
        except _Missing:
            answer = Answer(prompt, None, f"not answered within {duration(prompt.timeout_us)}: no {prompt.awaited}")
            raise
        finally:
            if self.prompts is not None:
                self.prompts.answered(answer)

    def _players_named(self, step: Step, t: int, events: list[Frame]) -> dict[str, int]:
        """The button of each role a prompt names, in the game at device time t (heard up to then)."""
        facts = UNITS[self.d.kind].roles
        used = step.prompt.names() & set(rl.role_words(facts)) if facts is not None else set()
        if not used:
            return {}
        self.d.confirm_events(events)
        roles = rl.at_time(facts, events, t)
        buttons = {r: roles.button(r) if roles is not None else None for r in used}
        missing = sorted(r for r, b in buttons.items() if b is None)
        if missing:
            raise _Missing(f"{self._file}:{step.line}: the prompt of the step at line {step.line} names "
                           f"{', '.join(missing)}, but the game has no such player when the wait starts: "
                           + (roles.describe() if roles is not None else "the unit reported no game"))
        return buttons

    def _await(self, step: Step, previous: int, since: int, events: list[Frame], sc: Scenario, env: dict,
               said: str) -> tuple[int, Frame | None]:
        """The wait of a wait_for step: the time it ends and the event that ended it (None: on_timeout
        continue ran out)."""
        pattern = step.awaited
        f = self._matching(pattern, events, previous)
        if f is not None:
            return f.dev_us, f
        what = f"{pattern.text} (wait_for of the step at line {step.line}{said})"
        if step.timeout is None:
            until = self._until(sc, pattern.name, since)
        else:
            timeout = expr.evaluate(step.timeout, env)
            est = self.d.clock.estimate or self.d.sync_clock()
            until = (int(est.to_host(previous + timeout)),
                     f"within {timeout} us of the previous step (its timeout)", previous + timeout)
            if step.on_timeout == "continue":
                try:
                    f = self._wait_event(lambda f: f.dev_us >= previous and self._fits(pattern, f, events), until,
                                         what, events)
                except _Missing:
                    f = None
                if f is not None and f.dev_us <= previous + timeout:
                    self._frontier = max(self._frontier, f.dev_us)
                    return f.dev_us, f
                self._wait_time(previous + timeout, events)
                self._frontier = max(self._frontier, previous + timeout)
                return previous + timeout, None
        f = self._wait_event(lambda f: f.dev_us >= previous and self._fits(pattern, f, events), until, what, events)
        self._frontier = max(self._frontier, f.dev_us)
        return f.dev_us, f

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
            raise _Missing(f"the step at line {step.line} ({step.text} at {t - race.start_dev_us} us): {exc}") \
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

    def _wait_event(self, pred, until: tuple[int, str, int], what: str, events: list[Frame]) -> Frame:
        """The first event pred accepts, stamped by the deadline on the unit's clock: one that comes later
        (held up on the link, read while the unit was asked how far it got) came too late, as on a clean line."""
        deadline, how, dev_deadline = until
        f = self._first(pred, deadline, what, events)
        if f is not None and f.dev_us <= dev_deadline:
            return f
        return self._missing(pred, what, how, dev_deadline, events)

    def _first(self, pred, deadline: int, what: str, events: list[Frame]) -> Frame | None:
        """The first event pred accepts by the host deadline (None if none came), host-timed presses
        going out as they fall due meanwhile."""
        d = self.d
        while self._queue:
            est = d.clock.estimate or d.sync_clock()
            next_at = self._queue[0][0]
            budget = int(est.to_host(next_at)) - d.now_us()
            if budget > 0:
                try:
                    return d.wait_for(pred, budget, what, collect=events, probe=False)
                except WaitTimeout:
                    pass
            n = len(events)
            self._press_due(next_at, events)
            for f in events[n:]:
                if pred(f):
                    return f
            if d.now_us() > deadline:
                break
        try:
            return d.wait_for(pred, max(0, deadline - d.now_us()), what, collect=events)
        except WaitTimeout:
            return None

    def _missing(self, pred, what: str, how: str, dev_deadline: int, events: list[Frame]) -> Frame:
        """The event has not come by the deadline. Before that is judged, everything the unit says it sent
        is fetched back: an event recovered now but stamped by the deadline (on the unit's clock) came in
        time, and is returned. If it is not among them, that is the race's failure (the unit's, or the
        scenario's), said with the unit's state; if events are lost for good, or the unit does not answer,
        it is the link's."""
        d = self.d
        try:
            st = d.catch_up()
        except DeviceReset:
            raise
        except LinkError:
            raise WaitTimeout(f"{d.url}: no {what} {how}, and the unit does not answer") from None   # the link's
        n = len(events)
        events.extend(d.inbox)
        d.inbox.clear()
        for f in events[n:]:
            if pred(f) and f.dev_us <= dev_deadline:
                self._frontier = max(self._frontier, f.dev_us)
                return f
        lost = d.events.lost[self._lost0:]
        if lost:    # given up now or earlier in the race: the event may be among them
            raise LinkError(f"{d.url}: no {what} {how}, and events that may hold it are lost on the link "
                            f"({describe_lost(lost)})")
        state = cat.enum_name(f"{d.kind}_state", st.state)
        raise _Missing(f"no {what} {how}; the unit is in state {state} (STATUS: "
                       f"{st.pending_injects} stimuli pending, {st.cards} cards)")
