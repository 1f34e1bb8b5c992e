"""A conformance run on one link: the unit identified, every registered check run phase by phase
(each on the raw wire), then the unit's scenario library through the runner (SPEC 7-9)."""
from __future__ import annotations

import time
from dataclasses import replace

from unohil.protocol import Frame, catalogue as cat, msg

from unohil.harness.conform import checks as _checks  # noqa: F401  (registers every check)
from unohil.harness.conform import quick
from unohil.harness.conform.recipes import KIND_SECTION, RECIPES
from unohil.harness.conform.registry import END, MAIN, OVERALL, START, Check, checks
from unohil.harness.conform.report import CheckResult, Report
from unohil.harness.conform.wire import ACTION, KIND_NAMES, REPLY_TIMEOUT_US, Fail, Wire, expect, show
from unohil.harness.errors import ConformError, DeviceMismatch, LinkClosed, LinkError
from unohil.harness.links import claim
from unohil.harness.outcome import Outcome


class Conformance:
    def __init__(self, link, *, scenarios: list | None = None, progress=None, quick: bool = False, stop=None):
        self.link = link
        self.w = Wire(link)
        self.report = Report(link.url)
        self.scenarios = scenarios
        self.quick = quick          # run only a few scenarios per decision (quick.py); the rest is reported not run
        self.progress = progress
        self.stop = stop            # between checks and between races: why to stop now (a signal), or None
        self.current: tuple[CheckResult, float] | None = None   # the item in progress and its start, kept if a
                                                                # signal cuts it short
        self.ident = None
        self.kind: str | None = None
        self.recipe: dict = {}
        self.boot_seed = 0
        self.syncs: list[tuple[int, int, int, int]] = []        # t1, t2, t3, t4 (t2, t3 raw u32)
        self.driver = None          # the scenario library's driver, once it runs: its clock sync stamps the console
        self._console_cursor = 0    # the unit's console lines handed to checks so far (ConsoleReader.after)
        self._clock: tuple[int, object] = (0, None)     # the console's clock: (syncs it was fitted on, estimate)

    # ---- the run ----
    def run(self) -> Report:
        """The whole run. Raises ConformError when the unit cannot even be identified."""
        t0 = time.perf_counter()
        try:
            self._identify()
            self._phase(START)
            self.report.identity = self.ident._asdict() | {"kind_name": self.kind}
            if callable(self.scenarios):
                self.scenarios = self.scenarios(self.kind)
            self._phase(MAIN)
            self._phase(END)
            self.w.quiet()
            self._phase(OVERALL)
            if self.scenarios is not None:
                self._scenarios()
        except LinkClosed as exc:
            self.report.aborted = str(exc)
        except _Stopped as exc:
            self.report.interrupted = str(exc)
        except BaseException as exc:
            if isinstance(exc, Exception):
                raise
            self._cut_short(exc)    # a second signal or Ctrl-C: the item in progress is kept, marked
            raise
        finally:
            self.report.wall_s = time.perf_counter() - t0
            times = sorted(self.w.reply_times_us)
            if times:
                self.report.stats.update({"commands": len(self.w.sent), "round_trip_us_p50": times[len(times) // 2],
                                          "round_trip_us_max": times[-1]})
        return self.report

    def _identify(self) -> None:
        w = self.w
        w.link.write(b"\x00")
        seq = w.send(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR))
        r = w.reply(seq, 2 * REPLY_TIMEOUT_US)
        if r is None:
            swapped = sum(1 for e in w.stream_errors if e.kind == "bad_crc" and e.crc_swapped)
            crc = sum(1 for e in w.stream_errors if e.kind == "bad_crc")
            echo = [f.msg.cmd_seq for f in w.frames if f.msg.NAME == "IDENTITY"]
            why = ("frames arrive, but their CRC is sent big-endian (SPEC 2 wants little-endian)" if swapped else
                   f"{crc} frame(s) arrive but fail their CRC" if crc else
                   f"IDENTITY arrives naming cmd_seq {echo[0]}, not {seq}: the unit does not echo cmd_seq"
                   if echo else "is it a unit, and is it running? (`unohil ports` probes what is attached)")
            raise ConformError(f"{self.link.url}: no answer to HELLO within {2 * REPLY_TIMEOUT_US // 1000} ms: "
                               + why)
        if r.msg.NAME != "IDENTITY":
            raise ConformError(f"{self.link.url}: HELLO answered with {show(r)}, not IDENTITY")
        kind = KIND_NAMES.get(r.msg.kind)
        if kind not in RECIPES:
            raise ConformError(f"{self.link.url}: IDENTITY.kind {r.msg.kind} is not a unit kind of protocol "
                               f"{cat.MAJOR}.{cat.MINOR}")
        claim.identified(self.link, kind, r.msg.serial, r.msg.boot_id)     # refused if another route holds this unit
        self.kind, self.ident, self.recipe = kind, r.msg, RECIPES[kind]

    def _phase(self, phase: str) -> None:
        for c in checks(phase):
            if c.when is None or c.when(self):
                self._stop_point()
                self._check(c)

    def _stop_point(self) -> None:
        why = self.stop() if self.stop is not None else None
        if why is not None:
            raise _Stopped(why)

    def _cut_short(self, exc: BaseException) -> None:
        # Interrupted says its signal's name; a KeyboardInterrupt is Python's own SIGINT
        why = f"interrupted by {exc or 'SIGINT'}"
        self.report.interrupted = self.report.interrupted or why
        if self.current is not None:
            c, t0 = self.current
            self._record(replace(c, status=Outcome.INTERRUPTED, detail=f"{why}: cut short",
                                 seconds=time.perf_counter() - t0))

    def _check(self, c: Check) -> CheckResult:
        res = CheckResult(c.section, c.name, decisions=c.decisions)
        self.current = res, time.perf_counter()
        missing = [cap for cap in c.needs if not self.has(cap)]
        if missing:
            res.status, res.detail = Outcome.SKIP, f"the unit does not have capability {', '.join(missing)}"
            self._record(res)
            return res
        t0 = time.perf_counter()
        try:
            detail = c.run(self)
            if isinstance(detail, tuple) and detail and detail[0] in ("skip", "n/a"):
                # "n/a": the SPEC asks nothing of this unit here; "skip": it does, and it went unchecked
                res.status, res.detail, res.gap = Outcome.SKIP, detail[1], detail[0] == "skip"
            elif detail:
                res.detail = str(detail)
        except Fail as exc:
            res.status, res.detail = Outcome.FAIL, str(exc)
            self._recover()
        except LinkClosed:
            raise
        except LinkError as exc:
            res.status, res.detail = Outcome.LINK_ERROR, str(exc)
        res.seconds = time.perf_counter() - t0
        self._record(res)
        return res

    def _record(self, res: CheckResult) -> None:
        self.current = None
        res.console = self._console_lines()
        self.report.checks.append(res)
        if self.progress is not None:
            self.progress(res)

    def _console_lines(self) -> list[dict]:
        """The unit's console lines since the last check was recorded (a check owns what the unit printed
        while it ran and while the harness recovered after it), each stamped in host µs at its read and in
        device µs through the clock sync (None before the time sync check has run)."""
        console = getattr(self.link, "console", None)
        if console is None:
            return []
        lines, self._console_cursor = console.after(self._console_cursor)
        est = self._estimate()
        out = []
        for ln in lines:
            dev = int(est.to_device(ln.host_us)) if est is not None else None
            # before the clock's zero: read before the boot the clock sync belongs to (a reboot since), no time
            out.append({"host_us": ln.host_us, "dev_us": dev if dev is not None and dev >= 0 else None,
                        "text": ln.text})
        return out

    def _estimate(self):
        """The host-to-device mapping: the scenario driver's once it runs, before that a fit through the time
        sync check's exchanges (the unit's raw µs: within a 71-minute epoch of the clock, as a run is)."""
        if self.driver is not None and self.driver.clock.estimate is not None:
            return self.driver.clock.estimate
        if self.syncs and self._clock[0] != len(self.syncs):
            from unohil.harness.session.clocksync import ClockSync, SyncSample
            clock = ClockSync()
            for t1, t2, t3, t4 in self.syncs:
                clock.add(SyncSample(t1, t2, t3, t4))
            self._clock = (len(self.syncs), clock.estimate)
        return self._clock[1]

    def _recover(self) -> None:
        """After a failed check, so that the next one starts clean: no stimuli, a new game."""
        if self.ident is None:
            return
        try:
            if self.has("test_mode"):
                self.w.command(msg.INJECT_CANCEL())
            self.new_game()
            self.w.quiet(self.w.burst_us())
        except Fail:
            pass

    # ---- what checks use ----
    def has(self, cap: str) -> bool:
        return cat.has_capability(self.ident.caps, cap)

    def params(self):
        return cat.params_for(self.kind)

    def input_id(self, name: str) -> int:
        return cat.ENUM_VALUES[f"{self.kind}_input"][name]

    def state_id(self, name: str) -> int:
        return cat.ENUM_VALUES[f"{self.kind}_state"][name]

    def new_game(self) -> None:
        self.w.command(msg.RESET(mode=0), expect="ACK")

    def apply(self, steps) -> Frame:
        """INPUT each step; all but the last must be ACKed. Returns the last reply."""
        r = None
        for i, (name, action, value) in enumerate(steps):
            r = self.w.command(msg.INPUT(input=self.input_id(name), action=ACTION[action], value=value))
            if i < len(steps) - 1:
                expect(r.msg.NAME == "ACK", f"INPUT {name} {action} {value} (preparing): {show(r)}")
        return r

    # ---- sections 7-9: the scenario library ----
    def _draws(self, runner, section: str, seeded: list) -> str | None:
        """Before seeded scenarios on a unit that says it has SPEC 6.0's generator, its first draws against
        the generator's (draws.py); what to add to a seeded failure when they differ, else None."""
        if not seeded or not runner.d.has_cap("reference_rng"):
            return None
        from unohil.harness.conform import draws
        t0 = time.perf_counter()
        status, detail = draws.compare(runner, self.kind)
        # a skip is no gap: the seeded scenarios it comes before are skipped too, each saying why
        self._record(CheckResult(section, draws.CHECK, status, detail, time.perf_counter() - t0, gap=False))
        return f"  (not the rule: {detail.split(':')[0]}; see '{draws.CHECK}')" if status is Outcome.FAIL else None

    def _scenarios(self) -> None:
        from unohil.harness.run.runner import Runner
        from unohil.harness.session.driver import Driver
        section = KIND_SECTION[self.kind]
        mine = [s for s in self.scenarios if s.unit == self.kind]
        if not mine:
            self._record(CheckResult(section, "scenario library", Outcome.SKIP, f"no {self.kind} scenarios selected"))
            return
        self.w.quiet(self.w.burst_us())
        drv = self.driver = Driver(self.link)
        try:
            drv.hello(expect_kind=self.kind)
        except DeviceMismatch as exc:       # an IDENTITY no scenario can run on (the protocol checks say why)
            self._record(CheckResult(section, "scenario library", Outcome.FAIL, f"not run: {exc}"))
            return
        drv.sync_clock()
        runner = Runner(drv, stop=self.stop)
        seeded = sum("reference_rng" in sc.needs for sc in mine)
        self.report.stats["reference_rng"] = {"scenarios": len(mine), "depend": seeded,
                                              "unit_has_it": drv.has_cap("reference_rng")}
        left: list = []
        if self.quick:
            chosen = quick.choose(mine, self.kind, lambda sc: runner._why_not(sc) is None)
            mine, left = chosen, [sc for sc in mine if sc not in chosen]
        differ = self._draws(runner, section, [sc for sc in mine if "reference_rng" in sc.needs])
        for sc in mine:
            self._stop_point()
            t0 = time.perf_counter()
            item = f"{sc.name} ({sc.file}:{sc.line})"
            self.current = CheckResult(section, item, decisions=sc.covers, scenario=True), t0
            res = runner.run(sc)
            lines = []
            for r in res.races:
                if r.status is not Outcome.PASS:
                    lines.append(f"race {r.index}: {r.status}" + (f": {r.error}" if r.error else ""))
                    lines += [f"  {x}" for x in r.failures[:5]]
            # a link error or a reset stays what it is: cut by the link, no verdict on the unit (report.CUT);
            # a scenario a signal cut short is kept as interrupted
            status = res.status
            detail = res.error if status is Outcome.SKIP else "\n".join(lines[:12])
            if status is Outcome.INTERRUPTED:
                detail = "\n".join([f"{res.error} after {len(res.races)} of {len(sc.races)} races"] + lines[:12])
            if differ and status is Outcome.FAIL and "reference_rng" in sc.needs:
                detail += f"\n{differ}"
            budgets = self.report.stats.setdefault("timing_budgets", {"met": 0, "measured": 0, "missed": []})
            for name, b in res.budget_summary().items():
                budgets["met"] += b["met"]
                budgets["measured"] += b["races"]
                if b["met"] < b["races"]:
                    budgets["missed"].append(f"{sc.name}: {name} {b['limit']} us missed in "
                                             f"{b['races'] - b['met']} of {b['races']} (worst {b['worst']} us)")
            self._record(CheckResult(section, item, status, detail,
                                     time.perf_counter() - t0, gap=res.applicable, decisions=sc.covers, scenario=True))
            if status is Outcome.INTERRUPTED:
                raise _Stopped(res.error)
        if left:
            self.report.quick = f"quick run: {len(left)} scenarios not run"
            self._record(CheckResult(
                section, self.report.quick, Outcome.SKIP,
                "left out by --quick: " + "; ".join(sc.name for sc in left),
                decisions=tuple(sorted({d for sc in left for d in sc.covers}, key=list(cat.DECISIONS).index)),
                scenario=True))


class _Stopped(Exception):
    """A signal asked the run to stop at its next safe point (between checks, between races)."""
