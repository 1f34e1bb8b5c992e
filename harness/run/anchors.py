"""The runner's anchors and waits: when the events a race's steps count from came (event anchors, a rig's
seen_ anchors through the unit's hooks), wait_for steps and their prompts, and how long to wait for an
event before the race fails saying what it waited for.

A mixin of run/runner.py's Runner, which schedules the stimuli: these methods read its race state (the
frontier of what was heard, the host-timed press queue, the configuration in force) and fire its due
presses while they wait. Event anchors ("green + 180000") resolve to the latest such event at or before
the previous step's time among those received, or, if there is none yet, to the first one to come;
"next green" resolves to the first green at or after the previous step's time.
"""
from __future__ import annotations

import logging

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.errors import DeviceReset, LinkError, WaitTimeout
from unohil.harness.run.hooks import hooks_of
from unohil.harness.run.judge import Anchors, pattern_matches
from unohil.harness.run.prompts import Answer, Prompt, answer_text
from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.model import RoleMatcher, Scenario, Step, TimeMatcher
from unohil.harness.scenarios.units import RIG_ANCHORS, UNITS
from unohil.harness.session.events import describe_lost
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


class EventMissing(Exception):
    """An event a step or the end waits for never came, though the unit answers: the race fails."""


class Anchoring:
    """Anchors and waits of the race the Runner is running (see the module's docstring)."""

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
            raise EventMissing(f"no {step.at.anchor} (the rig's capture of line {line}, anchor of step at line "
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
        except EventMissing:
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
            raise EventMissing(f"{self._file}:{step.line}: the prompt of the step at line {step.line} names "
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
                except EventMissing:
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
        raise EventMissing(f"no {what} {how}; the unit is in state {state} (STATUS: "
                       f"{st.pending_injects} stimuli pending, {st.cards} cards)")

