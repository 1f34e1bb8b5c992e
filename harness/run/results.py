"""What a run found: a RaceResult per race, a ScenarioResult per scenario on one device."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from unohil.harness.outcome import Outcome, Record
from unohil.harness.run.judge import event_record
from unohil.harness.scenarios.model import Scenario
from unohil.harness.session.health import LinkHealth



def worst_figure(values) -> int | None:
    """The value farthest from zero (the positive one of two equally far), None for none: a rig figure's worst."""
    return max(values, key=lambda x: (abs(x), x), default=None)

@dataclass
class RaceResult:
    index: int
    env: dict
    status: Outcome = Outcome.PASS
    failures: list[str] = field(default_factory=list)
    verdicts: list[dict] = field(default_factory=list)
    latency: dict = field(default_factory=dict)
    timing_errors_us: list[int] = field(default_factory=list)
    budgets: dict[str, dict] = field(default_factory=dict)     # timing budget -> limit, value, met
    start_dev_us: int = 0
    health: dict = field(default_factory=dict)
    error: str = ""
    late: str | None = None           # a stimulus the host got to the unit too late (LateStimulus)
    reruns: list[str] = field(default_factory=list)    # why earlier tries of this race were run again
    # --rerun-failed: the status of each try after this failed one (a pass among them: the race is flaky; its
    # own status stays fail, so a verdict is never retried into a pass)
    retries: list[str] = field(default_factory=list)
    rig: dict | None = None           # rig mode: the rig's view of the race (harness/rig/views.py)
    serial: int | None = None         # the unit it ran on (IDENTITY serial and boot id; None: none answered)
    boot_id: int | None = None
    frames: list = field(default_factory=list, repr=False)
    unit: object = field(default=None, repr=False)
    # the unit's debug console during the race: {"dev_us" (from the race start, through the clock sync),
    # "host_us", "text"}
    console: list[dict] = field(default_factory=list, repr=False)
    # a race read back from a results file: its events as the file tells them (it has no frames)
    told_events: list[dict] | None = field(default=None, repr=False)

    @property
    def flaky(self) -> bool:
        """Failed, then passed when run again."""
        return self.status is Outcome.FAIL and "pass" in self.retries

    @property
    def events(self) -> list[dict]:
        """The race's events, device times relative to the race start (built when asked for)."""
        if self.told_events is not None:
            return self.told_events
        if self.unit is None:
            return []
        return [event_record(f, self.start_dev_us, self.unit) for f in self.frames]

    def as_dict(self, with_events: bool = False) -> dict:
        d = {"index": self.index, "env": {k: v for k, v in self.env.items() if k != "race"}, "status": self.status,
             "failures": self.failures, "verdicts": self.verdicts, "latency": self.latency,
             "timing_errors_us": self.timing_errors_us, "budgets": self.budgets, "error": self.error,
             "serial": self.serial, "boot_id": self.boot_id}
        if self.reruns:
            d["reruns"] = self.reruns
        if self.retries:
            d["retries"] = self.retries
            d["flaky"] = self.flaky
        if self.rig is not None:
            d["rig"] = self.rig
        if self.console:
            d["console"] = self.console
        if with_events or self.status is not Outcome.PASS:
            d["events"] = self.events
        return d


@dataclass
class ScenarioResult:
    scenario: Scenario
    device: str
    races: list[RaceResult] = field(default_factory=list)
    status: Outcome = Outcome.PASS
    health: LinkHealth = field(default_factory=LinkHealth)
    mode: str = "test-mode"
    wall_s: float = 0.0
    error: str = ""
    applicable: bool = True     # False: skipped because it is written for another variant of unit
    # set by kept(): the races were written out (run/result_store.py) and only those that did not pass
    # are still in `races`; what the reports need of all of them is here
    summary: RacesSummary | None = field(default=None, repr=False)

    def race_count(self) -> int:
        return self.summary.races if self.summary is not None else len(self.races)

    def passed_count(self) -> int:
        if self.summary is not None:
            return self.summary.passed
        return sum(1 for r in self.races if r.status is Outcome.PASS)

    def verdict_counts(self, text_of) -> dict[str, int]:
        """How many races ended with each verdict (a race's last), as text_of(verdict) names it."""
        if self.summary is not None:
            return self.summary.verdicts
        counts: dict[str, int] = {}
        for r in self.races:
            for v in r.verdicts[-1:]:
                counts[text_of(v)] = counts.get(text_of(v), 0) + 1
        return counts

    def only_race(self) -> RaceResult | None:
        """The race of a one-race scenario."""
        if self.summary is not None:
            return self.summary.only
        return self.races[0] if len(self.races) == 1 else None

    def kept(self, text_of) -> "ScenarioResult":
        """This result as a long run keeps it once its races are written out: the races that did not
        pass (the failures a report tells), the summaries, the JUnit record; not the passing races."""
        if self.summary is not None:
            return self
        summary = RacesSummary(races=len(self.races), passed=self.passed_count(),
                               verdicts=self.verdict_counts(text_of), only=self.only_race(),
                               latency=self.latency_summary(), budgets=self.budget_summary(), rig=self.rig_summary(),
                               record=self.record())
        return replace(self, races=[r for r in self.races if r.status is not Outcome.PASS], summary=summary)

    @property
    def flaky(self) -> bool:
        """Failed, and every race that failed passed when run again (--rerun-failed)."""
        failed = [r for r in self.races if not r.status.ok]
        return self.status is Outcome.FAIL and bool(failed) and all(r.flaky for r in failed)

    @property
    def shown_status(self) -> str:
        return "flaky" if self.flaky else str(self.status)

    def budget_summary(self) -> dict:
        """Per timing budget: its limit, and in how many of the races that measured it it was met."""
        if self.summary is not None:
            return self.summary.budgets
        out: dict[str, dict] = {}
        for r in self.races:
            for name, b in r.budgets.items():
                s = out.setdefault(name, {"limit": b["limit"], "met": 0, "races": 0, "worst": None})
                s["races"] += 1
                s["met"] += b["met"]
                if b["value"] is not None and (s["worst"] is None or b["value"] > s["worst"]):
                    s["worst"] = b["value"]
        return out

    def latency_summary(self) -> dict:
        if self.summary is not None:
            return self.summary.latency
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

    def rig_summary(self) -> dict[str, int]:
        """Rig mode: the worst of each figure of the rig's view over the races (the value farthest from zero)."""
        if self.summary is not None:
            return self.summary.rig
        out: dict[str, list] = {}
        for r in self.races:
            for name, v in (r.rig or {}).get("worst", {}).items():
                out.setdefault(name, []).append(v)
        return {name: worst_figure(vs) for name, vs in out.items()}

    def record(self) -> Record:
        """This scenario as a reported item: why it failed, its failed races, its latency figures."""
        if self.summary is not None:
            return self.summary.record
        sc = self.scenario
        lines = failure_lines(self, max_races=len(self.races), trace_tail=0)
        message = self.error
        if not message and self.status is Outcome.FAIL:
            message = next((x.strip()[2:] for x in lines if x.strip().startswith("- ")), "")
        message = message or str(self.status)
        props = {f"{k}_{stat}": v[stat] for k, v in self.latency_summary().items() for stat in ("p50", "p99")
                 if v.get(stat) is not None}
        props |= {f"rig_{k}_worst": v for k, v in self.rig_summary().items()}
        ran = self.device != "-"
        excerpt = failure_lines(self) if self.status is not Outcome.PASS and self.races else []
        excerpt += console_lines(self.races)
        return Record(suite=self.device if ran else "not run", name=sc.name, outcome=self.status, message=message,
                      detail="\n".join(lines) or self.error, seconds=round(self.wall_s, 6), classname=_classname(sc.file),
                      file=sc.file, line=sc.line, properties=props, output="\n".join(excerpt),
                      device=self.device if ran else "")

    def as_dict(self) -> dict:
        sc = self.scenario
        return {"name": sc.name, "file": sc.file, "line": sc.line, "unit": sc.unit, "tags": list(sc.tags),
                "device": self.device, "mode": self.mode, "status": self.status, "races": self.race_count(),
                "failed_races": self.race_count() - self.passed_count(), "latency": self.latency_summary(),
                "budgets": self.budget_summary(),
                "health": self.health.as_dict(), "wall_s": round(self.wall_s, 6), "error": self.error,
                "applicable": self.applicable, **({"flaky": True} if self.flaky else {}), **({"rig": rig} if (rig := self.rig_summary()) else {}),
                "results": [r.as_dict() for r in self.races]}


@dataclass(frozen=True)
class RacesSummary:
    """What the reports of a run need of a scenario's races once they are written out."""
    races: int
    passed: int
    verdicts: dict[str, int]        # a verdict's text -> how many races ended with it
    only: RaceResult | None         # the race of a one-race scenario (its verdict and reactions are shown)
    latency: dict
    budgets: dict
    rig: dict
    record: Record


CONSOLE_LINES = 200      # of a scenario's console in a JUnit system-out; the JSON has them all


def race_console(console_log, race: RaceResult) -> list[dict]:
    """The unit's console lines (Driver.console_log) placed, through the clock sync, at or after the race's
    start, with device times from the race start like its events; none for a race that never started."""
    if not race.start_dev_us:
        return []
    return [{"dev_us": c["dev_us"] - race.start_dev_us, "host_us": c["host_us"], "text": c["text"]}
            for c in console_log if c["dev_us"] is not None and c["dev_us"] >= race.start_dev_us]


def console_lines(races: list[RaceResult]) -> list[str]:
    """The unit's console during each race, for a report's text: 'console, race 2, +1234567 us: text'."""
    out = []
    for r in races:
        for ln in r.console:
            at = f"+{ln['dev_us']} us" if ln.get("dev_us") is not None else f"host {ln['host_us']} us"
            out.append(f"console, race {r.index}, {at}: {ln['text']}")
    return out[:CONSOLE_LINES] + ([f"... {len(out) - CONSOLE_LINES} more console lines"]
                                  if len(out) > CONSOLE_LINES else [])


def _classname(file: str) -> str:
    """A scenario file as a dotted class name: relative to the working directory when under it, never
    starting with a dot (fixtures/scenarios/flash/buzzer.yaml -> fixtures.scenarios.flash.buzzer)."""
    p = Path(file)
    try:
        p = p.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        pass
    return ".".join(part for part in p.with_suffix("").parts if part not in ("/", "\\", "..", ".")).lstrip(".")


def _pct(sorted_vals: list, p: float):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100 * (len(sorted_vals) - 1)))))
    return sorted_vals[k]


def failure_lines(res: ScenarioResult, max_races: int = 3, trace_tail: int = 24, passed_too: bool = False) -> list[str]:
    """The story of a scenario that did not pass, as plain lines: the one renderer of failures
    (the console styles them, pytest and JUnit show them as they are). passed_too: its passing
    races too (a hand-written test's own assertion failed on one)."""
    sc = res.scenario
    lines = [f"{sc.file}:{sc.line}: scenario {sc.name!r} on {res.device}: {res.status}"]
    if res.error:
        lines.append(f"  {res.error}")
    bad = [r for r in res.races if passed_too or r.status is not Outcome.PASS]
    for r in bad[:max_races]:
        env = ", ".join(f"{k}={v}" for k, v in r.env.items() if k != "race")
        lines.append(f"  race {r.index}{' (' + env + ')' if env else ''}: {r.status}")
        if r.error:
            lines.append(f"    {r.error}")
        lines += [f"    - {f}" for f in r.failures]
        events = r.events if trace_tail else []
        if events:
            lines.append("    trace (device us from race start):")
            for e in events[-trace_tail:]:
                fields = " ".join(f"{k}={v}" for k, v in e["fields"].items())
                lines.append(f"      {e['t_us']:>10}  {e['event']:<18} {fields}")
    if len(bad) > max_races:
        lines.append(f"  ... {len(bad) - max_races} more failed race(s)")
    return lines
