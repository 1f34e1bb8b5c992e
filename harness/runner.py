"""Runs scenarios on a driver and judges them. Reporting lives in report.py.

A race: reset the unit to a new game, apply the scenario's configuration, fix a
start time on the device clock, then schedule each step at its device time
(INJECT when the device has test mode; otherwise wait for that time and press
with INPUT, measuring how far off the press landed). Event anchors ("green +
180000") resolve to the latest such event at or before the previous step's
time among those received, or, if there is none yet, to the first one to come;
"next green" resolves to the first green at or after the previous step's time.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Callable

from protocol import Frame, catalogue as cat, devtime

from . import expr
from .driver import ACTION, Driver
from .errors import DeviceReset, HarnessError, LinkError, Nak, WaitTimeout
from .health import LinkHealth
from .scenario import EventPattern, Expectation, Matcher, Scenario, Step
from .units import UNITS

ERROR_NAMES = {v: k for k, v in cat.ENUM_VALUES["error"].items()}
DISPOSITION_NAMES = {v: k for k, v in cat.ENUM_VALUES["disposition"].items()}
SOURCE = cat.ENUM_VALUES["input_source"]
VIRTUAL_LEAD_US = 1000
REAL_LEAD_US = 30_000

PASS, FAIL, LINK_ERROR, RESET, ERROR = "pass", "fail", "link-error", "reset", "error"
_RANK = {PASS: 0, FAIL: 1, LINK_ERROR: 2, RESET: 3, ERROR: 4, "skipped": -1}


class ScheduleError(HarnessError):
    """The scenario asks for a stimulus at a time that had passed before the host could know it."""


@dataclass
class RaceResult:
    index: int
    env: dict
    status: str = PASS
    failures: list[str] = field(default_factory=list)
    verdicts: list[dict] = field(default_factory=list)
    latency: dict = field(default_factory=dict)
    timing_errors_us: list[int] = field(default_factory=list)
    start_dev_us: int = 0
    health: dict = field(default_factory=dict)
    error: str = ""
    frames: list = field(default_factory=list, repr=False)
    unit: object = field(default=None, repr=False)

    @property
    def events(self) -> list[dict]:
        """The race's events, device times relative to the race start (built when asked for)."""
        if self.unit is None:
            return []
        return [_event_record(f, self.start_dev_us, self.unit) for f in self.frames]

    def as_dict(self, with_events: bool = False) -> dict:
        d = {"index": self.index, "env": {k: v for k, v in self.env.items() if k != "race"}, "status": self.status,
             "failures": self.failures, "verdicts": self.verdicts, "latency": self.latency,
             "timing_errors_us": self.timing_errors_us, "error": self.error}
        if with_events or self.status != PASS:
            d["events"] = self.events
        return d


@dataclass
class ScenarioResult:
    scenario: Scenario
    device: str
    races: list[RaceResult] = field(default_factory=list)
    status: str = PASS
    health: LinkHealth = field(default_factory=LinkHealth)
    mode: str = "test-mode"
    wall_s: float = 0.0
    error: str = ""

    def latency_summary(self) -> dict:
        out = {}
        for key in ("device_us", "inherent_us", "processing_us", "host_us", "host_processing_us"):
            vals = sorted(r.latency[key] for r in self.races if r.latency.get(key) is not None)
            if vals:
                out[key] = {"p50": _pct(vals, 50), "p99": _pct(vals, 99), "min": vals[0], "max": vals[-1],
                            "n": len(vals)}
        errs = sorted(abs(e) for r in self.races for e in r.timing_errors_us)
        if errs:
            out["timing_error_us"] = {"p50": _pct(errs, 50), "p99": _pct(errs, 99), "max": errs[-1], "n": len(errs)}
        return out

    def as_dict(self) -> dict:
        sc = self.scenario
        return {"name": sc.name, "file": sc.file, "line": sc.line, "unit": sc.unit, "tags": list(sc.tags),
                "device": self.device, "mode": self.mode, "status": self.status, "races": len(self.races),
                "failed_races": sum(1 for r in self.races if r.status != PASS), "latency": self.latency_summary(),
                "health": self.health.as_dict(), "wall_s": round(self.wall_s, 6), "error": self.error,
                "results": [r.as_dict() for r in self.races]}


def _pct(sorted_vals: list, p: float):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100 * (len(sorted_vals) - 1)))))
    return sorted_vals[k]


def worst(statuses) -> str:
    return max(statuses, key=lambda s: _RANK.get(s, 0), default=PASS)


class Runner:
    """Runs scenarios on one connected driver."""

    def __init__(self, driver: Driver, *, host_timed: bool = False,
                 progress: Callable[[Scenario, int], None] | None = None):
        self.d = driver
        self.host_timed = host_timed or not driver.has_cap("test_mode")
        self.progress = progress

    # ---- scenario level ----

    def run(self, sc: Scenario) -> ScenarioResult:
        res = ScenarioResult(sc, self.d.url, mode="host-timed" if self.host_timed else "test-mode")
        health0 = self.d.health.copy()
        t0 = time.perf_counter()
        if self.d.kind != sc.unit:
            res.status, res.error = "skipped", f"{self.d.url} is a {self.d.kind} unit, the scenario needs {sc.unit}"
            return res
        if sc.timing == "exact" and self.host_timed:
            res.status, res.error = "skipped", ("needs test mode: its stimuli must land on exact device "
                                                "microseconds, which host-timed presses cannot promise")
            return res
        for env in sc.races:
            race = self._race_guarded(sc, env)
            res.races.append(race)
            if self.progress is not None:
                self.progress(sc, race.index)
            if race.status in (RESET, LINK_ERROR):
                self._recover()
        res.status = worst(r.status for r in res.races)
        res.health = self.d.health.minus(health0)
        res.wall_s = time.perf_counter() - t0
        return res

    def _recover(self) -> None:
        """After a reset or link error: reconnect so the next race runs on a known unit."""
        try:
            self.d.reconnect()
        except HarnessError:
            pass

    def _race_guarded(self, sc: Scenario, env: dict) -> RaceResult:
        race = RaceResult(env["race"], env)
        h0 = self.d.health.copy()
        aborted = True
        try:
            self._race(sc, env, race)
        except DeviceReset as exc:
            race.status, race.error = RESET, str(exc)
        except LinkError as exc:
            race.status, race.error = LINK_ERROR, str(exc)
        except ScheduleError as exc:
            race.status, race.error = ERROR, str(exc)
        except Nak as exc:
            race.status, race.error = FAIL, str(exc)
            race.failures.append(str(exc))
        else:
            aborted = False
        if aborted:
            self.d.dirty = True
        dh = self.d.health.minus(h0)
        race.health = {k: v for k, v in dh.as_dict().items() if v and k not in ("frames_rx", "frames_tx", "bytes_rx")}
        if race.status == PASS and dh.events_lost:
            race.status = LINK_ERROR
            race.error = f"{dh.events_lost} event(s) lost on the link and not recoverable"
        elif race.status == FAIL and dh.events_lost:
            # A failure judged on an incomplete event stream is the link's fault, not the device's.
            race.status = LINK_ERROR
            race.error = f"{dh.events_lost} event(s) lost on the link; the failure cannot be trusted"
        return race

    # ---- race level ----

    def _prepare(self, sc: Scenario, env: dict) -> int:
        d = self.d
        if d.dirty:
            # A race cut short may have left stimuli pending and switches moved, and RESET new_game
            # keeps both (SPEC 4.9, LA-7, FL-17): start this one from power-on instead.
            d.reboot()
        d.reset("new_game", retries=2)      # a second new game (the first ACK lost) is harmless here
        wanted = {p.name: sc.config.get(p.name, p.default) for p in cat.params_for(sc.unit) if p.name != "rng_seed"}
        d.apply_config(wanted)
        if sc.seed is not None:
            d.config_set("rng_seed", (sc.seed + env["race"]) & 0xFFFFFFFF)
        if d.link.virtual and (d.clock.estimate or d.sync_clock()).best_rtt_us == 0:
            return d.last_reply_dev_us + VIRTUAL_LEAD_US
        # A link with transit time (a virtual one with delay faults, too) needs a real lead.
        return d.device_now() + REAL_LEAD_US

    def _race(self, sc: Scenario, env: dict, race: RaceResult) -> None:
        d = self.d
        d.inbox.clear()
        self._queue: list = []
        self._race_ref = race
        start = self._prepare(sc, env)
        race.start_dev_us = start
        self._frontier = start - 1      # the latest event time the steps so far had to wait for
        self._file = sc.file
        events: list[Frame] = []
        anchors = {"start": start, "previous": start}
        unit = UNITS[sc.unit]
        scheduled: list[tuple[Step, int, int, int]] = []   # step, input, edge, time
        last_t = start
        for step in sc.steps:
            if step.at.anchor in unit.anchors:
                anchors[step.at.anchor] = self._anchor(unit.anchors[step.at.anchor], step.at, anchors["previous"],
                                                       events, sc, step)
                self._frontier = max(self._frontier, anchors[step.at.anchor])
            t = step.at.resolve(anchors, env)
            every = expr.evaluate(step.every, env) if step.every is not None else 0
            for k in range(step.times):
                tk = t + k * every
                for inp, edge, val, at in self._stimuli(step, tk, env):
                    self._apply(step, inp, edge, val, at, events, race)
                    scheduled.append((step, inp, edge, at))
                    last_t = max(last_t, at)
                anchors["previous"] = tk
        n_verdicts = sc.verdict_count
        verdict_name = unit.verdict
        got = [f for f in events if f.msg.NAME == verdict_name]
        deadline_note = f"{n_verdicts} {verdict_name} event(s) of scenario {sc.name!r}"
        while len(got) < n_verdicts:
            f = self._wait_event(lambda f: f.msg.NAME == verdict_name, sc.timeout_us,
                                 f"{verdict_name} ({len(got) + 1} of {deadline_note})", events)
            got.append(f)
        end = last_t
        if got:
            end = max(end, got[-1].dev_us)
        if sc.end is not None:
            if sc.end.anchor in unit.anchors:
                anchors[sc.end.anchor] = self._anchor(unit.anchors[sc.end.anchor], sc.end, anchors["previous"],
                                                      events, sc, None)
            end = max(end, sc.end.resolve(anchors, env))
        elif not n_verdicts:
            end = max(end, anchors["previous"] + 1_000_000)
        self._wait_time(end, events)
        self._wait_time(max((q[0] for q in self._queue), default=end), events)
        # An event lost at the very end has no later event to reveal its gap: ask the device how
        # far it got, so the race is judged on everything it said (or becomes a link error).
        d.confirm_events(events)
        events = [f for f in events if f.dev_us >= start - 1]
        self._judge(sc, env, race, events, scheduled)

    def _anchor(self, name: str, spec, previous: int, events: list[Frame], sc: Scenario, step: Step | None) -> int:
        """Device time of an event anchor.

        "green": the latest green received so far at or before the previous step's time,
        or, if there is none yet, the first one to come. "next green": the first green at
        or after the previous step's time (for events that happen again).
        """
        where = "the end" if step is None else f"step at line {step.line}"
        what = f"{name} (anchor of {where} in {sc.name!r})"
        if spec.next:
            for f in events:
                if f.msg.NAME == name and f.dev_us >= previous:
                    return f.dev_us
            f = self._wait_event(lambda f: f.msg.NAME == name and f.dev_us >= previous, sc.timeout_us, what,
                                 events)
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
        f = self._wait_event(lambda f: f.msg.NAME == name, sc.timeout_us, what, events)
        return f.dev_us

    def _stimuli(self, step: Step, t: int, env: dict):
        if step.action == "wait":
            return []
        if step.action == "hold":
            dur = expr.evaluate(step.hold_for, env)
            inputs = [i for i in range(16) if step.value >> i & 1]
            return [(i, "press", 0, t) for i in inputs] + [(i, "release", 0, t + dur) for i in inputs]
        return [(step.input, step.action_edge, step.value, t)]

    def _apply(self, step: Step, inp: int, edge: str, value: int, at: int, events: list[Frame],
               race: RaceResult) -> None:
        if not self.host_timed:
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
                raise LinkError(f"INJECT too_late: {where} was still ahead when the runner could schedule it, "
                                f"but past when the INJECT arrived; the link is too slow for this schedule"
                                ) from None
            return
        heapq.heappush(self._queue, (at, len(self._queue) + 1_000_000 * race.index, step, inp, edge, value))

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

    def _wait_event(self, pred, timeout_us: int, what: str, events: list[Frame]) -> Frame:
        d = self.d
        deadline = d.now_us() + timeout_us
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
        return d.wait_for(pred, max(0, deadline - d.now_us()), what, collect=events)

    # ---- judging ----

    def _judge(self, sc: Scenario, env: dict, race: RaceResult, events: list[Frame],
               scheduled: list[tuple[Step, int, int, int]]) -> None:
        unit = UNITS[sc.unit]
        start = race.start_dev_us
        race.frames = events
        verdict_frames = [f for f in events if f.msg.NAME == unit.verdict]
        race.verdicts = [_named_fields(f, unit, start) | {"t_us": f.dev_us - start} for f in verdict_frames]
        if verdict_frames:
            race.latency = self._latency(verdict_frames[-1])
        seen = [f for f in events if f.msg.NAME == "INPUT_SEEN"]
        if self.host_timed:
            for step, inp, edge, at in scheduled:
                f = _find_input(seen, inp, edge, at, exact=False)
                if f is not None:
                    race.timing_errors_us.append(f.dev_us - at)
        fails = race.failures
        for step, inp, edge, at in scheduled:
            if step.expect is None:
                continue
            f = _find_input(seen, inp, edge, at, exact=not self.host_timed)
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
        for exp in sc.expectations:
            if exp.when is not None and not expr.evaluate(exp.when, env):
                continue
            prefix = f"[when {exp.when_text}] " if exp.when is not None else ""
            fails.extend(prefix + x for x in _check(exp, unit, events, verdict_frames, race))
        if fails:
            race.status = FAIL
        race.unit = unit

    def _latency(self, v: Frame) -> dict:
        m = v.msg
        decisive_raw = getattr(m, "decisive_us", None)
        if decisive_raw is None:
            decisive_raw = getattr(m, "press_us", None)
        knowable_raw = getattr(m, "knowable_us", None)
        out: dict = {}
        if decisive_raw is None or decisive_raw == cat.NONE_U32:
            return out
        decisive = v.dev_us + devtime.diff(decisive_raw, v.time_us)
        out["device_us"] = v.dev_us - decisive
        if knowable_raw is not None and knowable_raw != cat.NONE_U32:
            knowable = v.dev_us + devtime.diff(knowable_raw, v.time_us)
            out["inherent_us"] = knowable - decisive
            out["processing_us"] = v.dev_us - knowable
        est = self.d.clock.estimate
        if est is not None and v.host_us is not None:
            out["host_us"] = round(v.host_us - est.to_host(decisive))
            if "inherent_us" in out:
                out["host_processing_us"] = round(v.host_us - est.to_host(decisive + out["inherent_us"]))
        return out


def _find_input(seen: list[Frame], inp: int, edge: str, at: int, exact: bool) -> Frame | None:
    action = ACTION[edge]
    best = None
    for f in seen:
        m = f.msg
        if m.input != inp or m.action != action:
            continue
        if exact:
            if f.dev_us == at and m.source == SOURCE["injected"]:
                return f
        elif m.source == SOURCE["host"] and (best is None or abs(f.dev_us - at) < abs(best.dev_us - at)):
            best = f
    return best


# Fields that carry an absolute device time: shown relative to the race start.
ABS_TIME_FIELDS = {"press_a_us", "press_b_us", "green_us", "decisive_us", "knowable_us", "buzzer_us", "press_us"}


def _named_fields(f: Frame, unit, start: int | None = None) -> dict:
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
        elif (fd.type == "u32" and val == cat.NONE_U32) or (fd.type == "i32" and val == cat.NONE_I32) \
                or (fd.type == "u8" and val == cat.NONE_U8 and fd.name.startswith("landed")):
            out[fd.name] = None
        elif start is not None and fd.name in ABS_TIME_FIELDS:
            out[fd.name] = f.dev_us + devtime.diff(val, f.time_us) - start
        else:
            out[fd.name] = val
    return out


def _event_record(f: Frame, start: int, unit) -> dict:
    return {"t_us": f.dev_us - start, "event": f.msg.NAME, "fields": _named_fields(f, unit, start)}


def _match_fields(f: Frame, fields: dict[str, Matcher]) -> list[str]:
    bad = []
    for name, m in fields.items():
        v = getattr(f.msg, name)
        if not m.check(v):
            bad.append(f"{name}: expected {m.describe()}, got {v}")
    return bad


def _check(exp: Expectation, unit, events: list[Frame], verdicts: list[Frame], race: RaceResult) -> list[str]:
    out: list[str] = []
    if exp.verdicts:
        if len(verdicts) != len(exp.verdicts):
            out.append(f"expected {len(exp.verdicts)} {unit.verdict} event(s), got {len(verdicts)}")
        for i, (want, f) in enumerate(zip(exp.verdicts, verdicts)):
            for b in _match_fields(f, want):
                out.append(f"verdict[{i}].{_describe_named(b, f, unit)}")
    if exp.events:
        i = 0
        for p in exp.events:
            while i < len(events) and not _pattern_ok(events[i], p):
                i += 1
            if i == len(events):
                out.append(f"event {_pattern_text(p)} not seen (in order after the previous expected event)")
                break
            i += 1
    for name in exp.absent:
        hits = [f for f in events if f.msg.NAME == name]
        if hits:
            out.append(f"{name} must not happen; it did at {hits[0].dev_us - race.start_dev_us} us")
    for name, m in exp.count.items():
        n = sum(1 for f in events if f.msg.NAME == name)
        if not m.check(n):
            out.append(f"count of {name}: expected {m.describe()}, got {n}")
    for name, m in exp.latency.items():
        v = race.latency.get(name)
        if v is None:
            out.append(f"latency.{name}: not measurable in this race")
        elif not m.check(v):
            out.append(f"latency.{name}: expected {m.describe()} us, got {v} us")
    if exp.reaction and verdicts:
        v = verdicts[-1].msg
        for who, m in exp.reaction.items():
            val = _reaction(v, who)
            if val is None:
                out.append(f"reaction.{who}: the verdict has no such reaction time")
            elif not m.check(val):
                out.append(f"reaction.{who}: expected {m.describe()} us, got {val} us")
    elif exp.reaction:
        out.append("reaction times expected but no verdict arrived")
    return out


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


def _pattern_ok(f: Frame, p: EventPattern) -> bool:
    return f.msg.NAME == p.name and not _match_fields(f, p.fields)


def _pattern_text(p: EventPattern) -> str:
    if not p.fields:
        return p.name
    return p.name + "{" + ", ".join(f"{k}={m.describe()}" for k, m in p.fields.items()) + "}"
