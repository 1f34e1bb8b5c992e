"""Judging a race: pure functions from the events a unit sent to a verdict on it, no I/O."""
from __future__ import annotations

import functools

from unohil.protocol import Frame, catalogue as cat, devtime

from unohil.harness.outcome import Outcome
from unohil.harness.run.lateness import Slack, allowed, slack_for
from unohil.harness.scenarios import expr, roles as rl
from unohil.harness.scenarios.model import EventPattern, Expectation, Matcher, RoleMatcher, Scenario, Step, TimeMatcher
from unohil.harness.scenarios.units import UNITS
from unohil.harness.session.clocksync import ClockEstimate
from unohil.harness.session.driver import ACTION

ERROR_NAMES = cat.ENUM_NAMES["error"]
DISPOSITION_NAMES = cat.ENUM_NAMES["disposition"]
SOURCE = cat.ENUM_VALUES["input_source"]
# Latency figures that measure speed (the unit's processing, the link's delivery): timing budgets.
# inherent_us is not one of them: how long the rules make a verdict wait is the unit's function.
BUDGETS = frozenset({"device_us", "processing_us", "host_us", "host_processing_us"})


def judge(sc: Scenario, env: dict, race, events: list[Frame], scheduled: list[tuple[Step, int, int, int]], *,
          host_timed: bool, clock: ClockEstimate | None, configs: list[dict[str, int]] | None = None,
          placement_us: int = 0) -> None:
    """Judge one race from the events it produced and the stimuli it scheduled (step, input,
    edge, device time): fills the race's verdicts, latency, timing errors, failures, status.
    configs: the configurations the race ran under (config steps change it), the first the scenario's.
    placement_us: how far from its time a scheduled stimulus may land (a rig's, mapped through two clocks)."""
    unit = UNITS[sc.unit]
    start = race.start_dev_us
    race.frames = events
    verdict_frames = [f for f in events if f.msg.NAME == unit.verdict]
    race.verdicts = [named_fields(f, unit, start) | {"t_us": f.dev_us - start} for f in verdict_frames]
    if verdict_frames:
        race.latency = latency(verdict_frames[-1], clock)
    seen = [f for f in events if f.msg.NAME == "INPUT_SEEN"]
    if host_timed or placement_us:
        for step, inp, edge, at in scheduled:
            f = _find_input(seen, inp, edge, at, host_timed, placement_us)
            if f is not None:
                race.timing_errors_us.append(f.dev_us - at)
    fails = race.failures
    late = _timer_lateness(events, unit, fails)
    # A timer is early only if it is early under every configuration the race had: each delay grows
    # with its parameters, so the least value each had gives the earliest a timer can be due.
    runs = [unit.with_defaults(c) for c in configs or [sc.config]]
    fails.extend(early_timers(events, unit, {k: min(c[k] for c in runs) for k in runs[0]}))
    fails.extend(early_verdicts(verdict_frames, unit))
    fails.extend(inconsistent_verdicts(verdict_frames, unit))
    fails.extend(followers_before_verdicts(events, unit))
    for step, inp, edge, at in scheduled:
        if step.expect is None:
            continue
        f = _find_input(seen, inp, edge, at, host_timed, placement_us)
        where = f"step at line {step.line} ({step.text} at {at - start} us)"
        if f is None:
            fails.append(f"{where}: the unit never reported the input")
            continue
        got = DISPOSITION_NAMES.get(f.msg.disposition, str(f.msg.disposition))
        if got != step.expect:
            fails.append(f"{where}: expected {step.expect}, the unit says {got}"
                         + (f" ({ERROR_NAMES.get(f.msg.detail, f.msg.detail)})" if got == "refused" else ""))
        elif step.error is not None and f.msg.detail != step.error:
            fails.append(f"{where}: refused with {ERROR_NAMES.get(f.msg.detail, f.msg.detail)}, expected "
                         f"{ERROR_NAMES.get(step.error)}")
    anchors = Anchors(unit, events, start, env)
    # Host-timed presses land where the host managed to put them: a time or reaction counts from the
    # press as it landed, so it may be off by the race's measured timing error, no more.
    host = max((abs(e) for e in race.timing_errors_us), default=0)
    slacks = slack_for(sc, unit, scheduled, host, late, verdict_frames)
    for exp in sc.expectations:
        if exp.when is not None and not expr.evaluate(exp.when, env):
            continue
        prefix = f"[when {exp.when_text}] " if exp.when is not None else ""
        fails.extend(prefix + x for x in _check(exp, unit, events, verdict_frames, race, slacks, anchors))
    if fails:
        race.status = Outcome.FAIL
    race.unit = unit

def latency(v: Frame, est: ClockEstimate | None) -> dict:
    """A verdict's latency figures: from its decisive input (device_us), from its earliest
    possible moment (processing_us), and to its arrival at the host (host_us)."""
    m = v.msg
    decisive_raw = getattr(m, "decisive_us", None)
    if decisive_raw is None:
        decisive_raw = getattr(m, "press_us", None)
    knowable_raw = getattr(m, "knowable_us", None)
    out: dict = {}
    if decisive_raw is None:
        return out
    # these fields always hold a time, 0xFFFFFFFF included (PR-2: only optional times can be none)
    decisive = v.dev_us + devtime.diff(decisive_raw, v.time_us)
    out["device_us"] = v.dev_us - decisive
    if knowable_raw is not None:
        knowable = v.dev_us + devtime.diff(knowable_raw, v.time_us)
        out["inherent_us"] = knowable - decisive
        out["processing_us"] = v.dev_us - knowable
    if est is not None and v.host_us is not None:
        out["host_us"] = round(v.host_us - est.to_host(decisive))
        if "inherent_us" in out:
            out["host_processing_us"] = round(v.host_us - est.to_host(decisive + out["inherent_us"]))
    return out


def _timer_lateness(events: list[Frame], unit, fails: list[str]) -> list[int]:
    """Per verdict, how late the unit stamped the timer events whose scheduled time that verdict
    carries (PR-1: SD_GREEN against green_us): a unit MAY stamp them late, never early. A stimulus
    anchored on such an event lands that much late, so a reaction may be off by that much."""
    out: list[int] = []
    last: dict[str, Frame] = {}
    for f in events:
        name = f.msg.NAME
        if name in unit.scheduled_times:
            last[name] = f
        elif name == unit.verdict:
            late = 0
            for event, field in unit.scheduled_times.items():
                e = last.pop(event, None)
                if e is None:
                    continue
                scheduled = f.dev_us + devtime.diff(getattr(f.msg, field), f.time_us)
                if e.dev_us < scheduled:
                    fails.append(f"{event} stamped {scheduled - e.dev_us} us before its scheduled time "
                                 f"({unit.verdict}.{field}): a timer event is never early (SPEC PR-1)")
                late = max(late, e.dev_us - scheduled)
            out.append(late)
    return out


def early_timers(events: list[Frame], unit, config: dict[str, int]) -> list[str]:
    """PR-1 for every timer of the unit (the catalogue's timers): a timer event stamped before the
    earliest time the rules allow it, computed from the events before it and the configuration."""
    out = []
    by_name: dict[str, list[int]] = {}
    for i, f in enumerate(events):
        by_name.setdefault(f.msg.NAME, []).append(i)
    for rule in unit.timers:
        # Only the rule's own events move its state: the rest of the race is skipped unread.
        wanted = sorted(i for name in rule.events for i in by_name.get(name, ()))
        latest: list[Frame | None] = [None] * len(rule.after)
        unarmed = len(rule.after)   # after events not seen yet
        armings: list[list] = []     # [time, the after events, used by an event of this timer] as they came
        frozen_at: int | None = None
        pauses: list[tuple[int, int]] = []              # [from, to) while the timer stood frozen
        for f in [events[i] for i in wanted]:
            m = f.msg
            for i, pattern in enumerate(rule.after):
                if pattern.matches(m):
                    unarmed -= latest[i] is None
                    latest[i] = f
                    if not unarmed:
                        armings.append([max(e.dev_us for e in latest), list(latest), False])
            for event, field in rule.frozen_by:
                if m.NAME == event:
                    if getattr(m, field) and frozen_at is None:
                        frozen_at = f.dev_us
                    elif not getattr(m, field) and frozen_at is not None:
                        pauses.append((frozen_at, f.dev_us))
                        frozen_at = None
            if m.NAME != rule.event or (rule.when and not getattr(m, rule.when)):
                continue
            chain = [a for a in armings if a[0] <= f.dev_us]
            if not chain:
                continue
            base, after, _ = chain[-1]
            due, delay, frozen = _due(rule, base, after, f, config, pauses)
            if f.dev_us >= due:
                chain[-1][2] = True
                continue
            # Stamped before the latest arming's deadline: fine only if an earlier arming not yet used by
            # an event of this timer fell due before the next arming came (deadline first at one instant,
            # SPEC 4.8: the event after a deadline did not move it), and this is its firing, stamped late.
            fired = next((a for a, b in zip(chain, chain[1:])
                          if not a[2] and _due(rule, a[0], a[1], f, config, pauses)[0] <= b[0]), None)
            if fired is not None:
                fired[2] = True
                continue
            chain[-1][2] = True
            trigger = " and ".join(dict.fromkeys(e.msg.NAME for e in after))
            out.append(f"{rule.event} stamped {due - f.dev_us} us before the earliest it can be due ({trigger} + "
                       f"{rule.delay.text} = {delay} us" + (f", + {frozen} us frozen" if frozen else "")
                       + "): a timer event is never early (SPEC PR-1)")
    return out


@functools.cache
def _fields_read(names: frozenset[str], cls) -> tuple[tuple[str, int], ...]:
    """(name, index) of the fields of message class cls that a delay over names reads."""
    return tuple((name, i) for i, name in enumerate(cls._fields) if name in names)


def _due(rule, base: int, after: list[Frame], f: Frame, config: dict[str, int],
         pauses: list[tuple[int, int]]) -> tuple[int, int, int]:
    """When a timer armed at base by the events after is due: (due, its delay, the time it stood frozen)."""
    names = rule.delay_names
    values = {name: config[name] for name in names if name in config}
    for e in (*after, f):       # a field of a later event over an earlier one's, over a parameter
        m = e.msg
        for name, i in _fields_read(names, m.__class__):
            values[name] = m[i]
    delay = rule.delay.us(values)
    frozen = sum(max(0, min(b, f.dev_us) - max(a, base)) for a, b in pauses)
    return base + delay + frozen, delay, frozen


def early_verdicts(verdicts: list[Frame], unit) -> list[str]:
    """A verdict carries the moment it was produced, never before the rules allow it (SPEC 3.1):
    header time >= knowable_us (a window that ended early, a verdict timer that ran fast)."""
    out = []
    for v in verdicts:
        k = getattr(v.msg, "knowable_us", None)
        if k is not None and devtime.diff(v.time_us, k) < 0:
            out.append(f"{unit.verdict} produced {-devtime.diff(v.time_us, k)} us before its knowable_us: a verdict "
                       f"is never earlier than the rules allow (SPEC 3.1)")
    return out


#: The events a verdict brings in the work that produced it (SPEC PR-7): they carry its header time.
VERDICT_FOLLOWERS = frozenset({"STATE", "LIGHT", "SOUND", "LA_EMPTY", "FL_PENALTY"})


def followers_before_verdicts(events: list[Frame], unit) -> list[str]:
    """PR-7: the events that follow a verdict in the same work carry the verdict's header time, its
    production time; one stamped before it carries the timer's scheduled time instead, the reading PR-7
    rules out. The work ends at its STATE (the last event of every verdict's row in SPEC 7-9) or at an
    event of another kind: an input's own events that come next (an input at a deadline's instant,
    SPEC 4.8) carry the input's time."""
    out = []
    for i, v in enumerate(events):
        if v.msg.NAME != unit.verdict:
            continue
        for f in events[i + 1:]:
            if f.msg.NAME not in VERDICT_FOLLOWERS:
                break
            if f.dev_us < v.dev_us:
                out.append(f"{f.msg.NAME} after {unit.verdict} stamped {v.dev_us - f.dev_us} us before it: the events "
                           f"a verdict brings carry the verdict's header time, not the timer's scheduled time "
                           f"(SPEC PR-7)")
                break
            if f.msg.NAME == "STATE":
                break
    return out


def inconsistent_verdicts(verdicts: list[Frame], unit) -> list[str]:
    """A verdict that contradicts itself, whatever the scenario expects of it. PR-2 (SPEC 1.2): press_a_us
    and press_b_us "each is none exactly when its reaction_a_us / reaction_b_us is NONE_I32", told apart
    by _time_is_none as everywhere else; and a reaction that is set counts from the scheduled time the
    verdict carries, "reaction_x_us = press_x_us - green_us" (SPEC 3.1, 7.3), a press at 0xFFFFFFFF too."""
    out = []
    scheduled = next(iter(unit.scheduled_times.values()), None)     # SD_VERDICT.green_us
    for i, v in enumerate(verdicts):
        for press, reaction in unit.optional_times.items():
            p, r = getattr(v.msg, press), getattr(v.msg, reaction)
            if p == cat.NONE_U32 and _time_is_none(v, press, unit):
                continue
            if r == cat.NONE_I32:
                out.append(f"{unit.verdict}[{i}]: {press} {p:#010x} is a time but {reaction} is none: they are none "
                           f"together (SPEC PR-2)")
            elif scheduled is not None and r != devtime.diff(p, getattr(v.msg, scheduled)):
                out.append(f"{unit.verdict}[{i}]: {reaction} {r}, but {press} - {scheduled} = "
                           f"{devtime.diff(p, getattr(v.msg, scheduled))}" + (
                               f" ({press} 0xffffffff with its {reaction} set is a press at that device time, "
                               f"SPEC PR-2)" if p == cat.NONE_U32 else "") + " (SPEC 7.3)")
    return out


def _find_input(seen: list[Frame], inp: int, edge: str, at: int, host_timed: bool, placement_us: int = 0
                ) -> Frame | None:
    """The unit's report of a stimulus scheduled at device time at: a host-timed INPUT's nearest report;
    else an INJECT's, or a rig's edge (rig mode, SPEC 13.3: source physical), within placement_us of at."""
    action = ACTION[edge]
    best = None
    for f in seen:
        m = f.msg
        if m.input != inp or m.action != action:
            continue
        if host_timed:
            ok = m.source == SOURCE["host"]
        else:
            ok = m.source in (SOURCE["injected"], SOURCE["physical"]) and abs(f.dev_us - at) <= placement_us
        if ok and (best is None or abs(f.dev_us - at) < abs(best.dev_us - at)):
            best = f
    return best


def named_fields(f: Frame, unit, start: int | None = None) -> dict:
    out = {}
    for fd in f.msg.DEF.fields:
        if fd.name == "event_seq":
            continue
        val = getattr(f.msg, fd.name)
        en = unit.enum_for(f.msg.NAME, fd.name)
        if en and fd.count == 1:
            name = cat.enum_name(en, val)
            out[fd.name] = "none" if val == cat.NONE_U8 and name == str(val) else name
        elif fd.count > 1:
            out[fd.name] = [None if x == cat.NONE_I32 else x for x in val]
        elif (fd.type == "u32" and val == cat.NONE_U32 and _time_is_none(f, fd.name, unit)) \
                or (fd.type == "i32" and val == cat.NONE_I32) \
                or (fd.type == "u8" and val == cat.NONE_U8 and fd.name.startswith("landed")):
            out[fd.name] = None
        elif start is not None and fd.name in unit.time_fields:
            out[fd.name] = f.dev_us + devtime.diff(val, f.time_us) - start
        else:
            out[fd.name] = val
    return out


def _time_is_none(f: Frame, name: str, unit) -> bool:
    """Whether a u32 field holding NONE_U32 means none (PR-2): a device time is none only where the
    catalogue pairs it with an i32 that is NONE_I32 (press_a_us with reaction_a_us); any other time
    field holding 0xFFFFFFFF holds that device time."""
    if name not in unit.time_fields:
        return True
    pair = unit.optional_times.get(name)
    return pair is not None and getattr(f.msg, pair) == cat.NONE_I32


def event_record(f: Frame, start: int, unit) -> dict:
    return {"t_us": f.dev_us - start, "event": f.msg.NAME, "fields": named_fields(f, unit, start)}


class Anchors:
    """The anchors an expected device time counts from, as judged at one event: start, the race's
    start; an event anchor, the latest such event at or before the judged one (the first if none is)."""

    def __init__(self, unit, events: list[Frame], start: int, env: dict):
        self.unit, self.events, self.start, self.env = unit, events, start, env
        self.index = {id(f): i for i, f in enumerate(events)}

    def time(self, spec, at: Frame) -> int | None:
        if spec.anchor == "start":
            return self.start + expr.evaluate(spec.offset, self.env)
        name = self.unit.anchors[spec.anchor]
        upto = self.index.get(id(at), len(self.events) - 1)
        same = [f for f in self.events if f.msg.NAME == name]
        before = [f for f in self.events[:upto + 1] if f.msg.NAME == name]
        chosen = before[-1] if before else same[0] if same else None
        return None if chosen is None else chosen.dev_us + expr.evaluate(spec.offset, self.env)


def _time_field(f: Frame, name: str, m: TimeMatcher, unit, anchors: Anchors | None, slack: Slack) -> str | None:
    """Why a device-time field does not match a time given from anchors (None if it does)."""
    v = getattr(f.msg, name)
    if v == cat.NONE_U32 and name in unit.optional_times and _time_is_none(f, name, unit):
        return f"{name}: expected {m.describe()}, got none"
    if anchors is None:
        return f"{name}: expected {m.describe()}: no anchors to count from"
    missing = [s.anchor for s in (m.lo, m.hi) if s is not None and anchors.time(s, f) is None]
    if missing:
        return f"{name}: expected {m.describe()}, but the race had no {unit.anchors[missing[0]]} ({missing[0]})"
    lo, hi = m.bounds(lambda s: anchors.time(s, f))
    got = f.dev_us + devtime.diff(v, f.time_us)
    below = slack.time(name, m.lo)[0] if m.lo is not None else 0
    above = slack.time(name, m.hi)[1] if m.hi is not None else 0
    if (lo is not None and got < lo - below) or (hi is not None and got > hi + above):
        want = lo if lo == hi else None
        rel = f" ({got - want:+d} us)" if want is not None else ""
        return (f"{name}: expected {m.describe()}" + allowed(below, above)
                + f", got {got - anchors.start} us from the start{rel}")
    return None


def _match_fields(f: Frame, fields: dict[str, Matcher | RoleMatcher | TimeMatcher], slack: Slack | None = None,
                  unit=None, roles: rl.RoleMap | None = None, anchors: Anchors | None = None) -> list[str]:
    """Fields that do not match; device times and reactions may be off by the verdict's slack (SPEC PR-1,
    harness/run/lateness.py; none for other events); a field given
    by role is matched against the players the roles in force at the event (roles) stand for; a
    device time given from an anchor, against the anchors at the event."""
    bad = []
    slack = slack or Slack()
    for name, m in fields.items():
        v = getattr(f.msg, name)
        if isinstance(m, TimeMatcher):
            why = _time_field(f, name, m, unit, anchors, slack)
            if why is not None:
                bad.append(why)
        elif isinstance(m, RoleMatcher):
            if v not in m.values(roles):
                who = roles.role_of(v) if roles is not None and not m.mask else None
                bad.append(f"{name}: expected {m.describe(roles)}, got {v}" + (f" ({who})" if who else ""))
        elif not m.check(v, tol := slack.reaction(name) if name.startswith("reaction_") else (0, 0),
                         anchors.env if anchors else None):
            bad.append(f"{name}: expected {m.describe(anchors.env if anchors else None)}{allowed(*tol)}, got {v}")
        elif unit is not None and v == cat.NONE_U32 and name in unit.optional_times \
                and not _time_is_none(f, name, unit) and m.kind in ("eq", "any") and cat.NONE_U32 in m.values:
            bad.append(f"{name}: expected {m.describe()}, got a time, {v} (its {unit.optional_times[name]} is set)")
    return bad


class _Roles:
    """The roles in force over a race's events, for a unit with roles (None for one without)."""

    def __init__(self, unit, events: list[Frame], start: int):
        self.facts = unit.roles
        self.start = start
        # a unit without roles (most races) pays nothing for them
        self.before = rl.before_each(self.facts, events) if self.facts is not None else [None] * len(events)
        self.index = {id(f): i for i, f in enumerate(events)} if self.facts is not None else {}
        self.after = rl.follow(self.facts, self.before[-1], events[-1]) if self.facts and events else None

    def at(self, f: Frame) -> rl.RoleMap | None:
        return self.before[self.index[id(f)]] if self.facts is not None else None

    def history(self) -> str:
        return rl.history([*self.before, self.after], self.start)


def _uses_roles(fields) -> bool:
    return any(isinstance(m, RoleMatcher) for m in fields.values())


def _check(exp: Expectation, unit, events: list[Frame], verdicts: list[Frame], race, slacks: list[Slack],
           anchors: Anchors | None = None) -> list[str]:
    out: list[str] = []
    roles = _Roles(unit, events, race.start_dev_us)
    if exp.verdicts:
        if len(verdicts) != len(exp.verdicts):
            out.append(f"expected {len(exp.verdicts)} {unit.verdict} event(s), got {len(verdicts)}")
        for i, (want, f) in enumerate(zip(exp.verdicts, verdicts)):
            bad = _match_fields(f, want, slacks[i], unit, roles.at(f), anchors)
            for b in bad:
                out.append(f"verdict[{i}].{_describe_named(b, f, unit)}")
            if bad and _uses_roles(want):
                out.append(f"verdict[{i}]: roles at it: {_describe_roles(roles.at(f))}")
    if exp.events:
        i = 0
        for p in exp.events:
            while i < len(events) and not pattern_matches(events[i], p, roles.before[i], anchors, unit):
                i += 1
            if i == len(events):
                out.append(f"event {_pattern_text(p, race.env)} not seen (in order after the previous expected event)"
                           + (f"; roles in the race: {roles.history()}" if _uses_roles(p.fields) else ""))
                break
            i += 1
    for p in exp.absent:
        hits = [f for f in events if pattern_matches(f, p, roles.at(f), anchors, unit)]
        if hits:
            out.append(f"{_pattern_text(p, race.env)} must not happen; it did at "
                       f"{hits[0].dev_us - race.start_dev_us} us"
                       + (f" ({_describe_roles(roles.at(hits[0]))})" if _uses_roles(p.fields) else ""))
    for name, m in exp.count.items():
        n = sum(1 for f in events if f.msg.NAME == name)
        if not m.check(n, env=race.env):
            out.append(f"count of {name}: expected {m.describe(race.env)}, got {n}")
    for name, m in exp.latency.items():
        v = race.latency.get(name)
        if name in BUDGETS:
            # How fast the unit and the link were: a measurement with limits, never a functional fail
            # (a busy host must not turn a correct unit into a failing one).
            race.budgets[name] = {"limit": m.describe(race.env), "value": v,
                                  "met": v is not None and m.check(v, env=race.env)}
        elif v is None:
            out.append(f"latency.{name}: not measurable in this race")
        elif not m.check(v, env=race.env):
            out.append(f"latency.{name}: expected {m.describe(race.env)} us, got {v} us")
    if exp.reaction and verdicts:
        v = verdicts[-1].msg
        at_verdict = roles.at(verdicts[-1])
        for who, m in exp.reaction.items():
            key, who = _cast_reaction(who, at_verdict)
            val = _reaction(v, key) if key is not None else None
            if key is None:
                out.append(f"reaction.{who}: the game has no such player ({_describe_roles(at_verdict)})")
            elif val is None:
                out.append(f"reaction.{who}: the verdict has no such reaction time")
            elif not m.check(val, tol := slacks[-1].reaction(f"reaction_{key}_us"), race.env):
                out.append(f"reaction.{who}: expected {m.describe(race.env)} us{allowed(*tol)}, got {val} us")
    elif exp.reaction:
        out.append("reaction times expected but no verdict arrived")
    return out


def _cast_reaction(who: str, roles: rl.RoleMap | None) -> tuple[str | None, str]:
    """(the reaction key, how to name it): a role becomes player_N of the player it stands for."""
    if not rl.looks_like_role(who):
        return who, who
    button = roles.button(who) if roles is not None else None
    return (None, who) if button is None else (f"player_{button}", f"{who} (player {button})")


def _describe_roles(roles: rl.RoleMap | None) -> str:
    return roles.describe() if roles is not None else "no game started"


def _reaction(v, who: str):
    if hasattr(v, f"reaction_{who}_us"):
        return getattr(v, f"reaction_{who}_us")
    if who.startswith("player_") and hasattr(v, "reaction_us"):
        i = int(who.split("_")[1])
        return v.reaction_us[i] if 0 <= i < len(v.reaction_us) else None
    return None


def _describe_named(bad: str, f: Frame, unit) -> str:
    name, _, rest = bad.partition(":")
    en = unit.enum_for(f.msg.NAME, name)
    if en:
        got = getattr(f.msg, name)
        return f"{name}:{rest.rsplit('got', 1)[0]}got {cat.enum_name(en, got) if got != cat.NONE_U8 else 'none'}"
    return bad


def pattern_matches(f: Frame, p: EventPattern, roles: rl.RoleMap | None = None, anchors: Anchors | None = None,
                    unit=None) -> bool:
    """Whether an event matches a pattern (an expectation's, a step's until or wait_for)."""
    return f.msg.NAME == p.name and not _match_fields(f, p.fields, roles=roles, anchors=anchors, unit=unit)


def compare_races(sc: Scenario, races: list) -> None:
    """The scenario's comparisons across its races (compare:): each race's value of the field, equal
    in all (same) or different between every two (differ). A failure is put on the last race compared,
    naming the races and their values; races not judged (link errors, resets) are left out, said."""
    if not sc.compare:
        return
    by_index = {r.index: r for r in races}
    unit = UNITS[sc.unit]
    for c in sc.compare:
        judged = [by_index[i] for i in c.races if i in by_index and by_index[i].status in (Outcome.PASS, Outcome.FAIL)]
        if len(judged) < 2:
            continue
        values = {}
        for r in judged:
            frames = [f for f in r.frames if f.msg.NAME == c.event]
            if c.index >= len(frames):
                values[r.index] = None
                continue
            f = frames[c.index]
            values[r.index] = f.dev_us - r.start_dev_us if c.field == "t_us" else \
                named_fields(f, unit, r.start_dev_us)[c.field]
        shown = ", ".join(f"race {i}: {'no ' + c.event if v is None else v}" for i, v in values.items())
        vals = list(values.values())
        if None in vals:
            bad = f"{c.event}[{c.index}] missing in a race"
        elif c.kind == "same":
            bad = None if len(set(map(repr, vals))) == 1 else "not the same in every race"
        else:
            bad = None if len(set(map(repr, vals))) == len(vals) else "the same in two races"
        if bad is not None:
            last = judged[-1]
            last.failures.append(f"compare (line {c.line}) {c.text}: {bad} ({shown})")
            last.status = Outcome.FAIL


def _pattern_text(p: EventPattern, env: dict | None = None) -> str:
    """The pattern as a failure names it; a value from an expression with what it is in the race."""
    if not p.fields:
        return p.name
    return p.name + "{" + ", ".join(f"{k}={m.describe(env) if isinstance(m, Matcher) else m.label}"
                                    for k, m in p.fields.items()) + "}"
