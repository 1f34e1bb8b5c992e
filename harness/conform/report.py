"""What a conformance run found: a CheckResult per check or scenario, grouped by SPEC section."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from unohil.harness.conform import coverage
from unohil.harness.conform.registry import SECTIONS
from unohil.harness.outcome import Outcome, Record, tally


# What the link (or a reboot it cannot tell from one) cut short: neither a pass nor a fail of the unit
CUT = (Outcome.LINK_ERROR, Outcome.RESET)


@dataclass
class CheckResult:
    section: str
    name: str
    status: Outcome = Outcome.PASS
    detail: str = ""
    seconds: float = 0.0
    gap: bool = True        # a skip leaves part of the SPEC unchecked (False: nothing there applies to this unit)
    decisions: tuple[str, ...] = ()     # the SPEC decision ids it covers (a check's decisions=, a scenario's covers)
    scenario: bool = False              # a scenario of the library, not a protocol check
    # the unit's debug console while it ran: {"host_us", "dev_us" (the unit's clock through the clock sync,
    # None before there is one), "text"}, as run's races carry theirs
    console: list[dict] = field(default_factory=list, repr=False)

    @property
    def title(self) -> str:
        return SECTIONS.get(self.section, self.section)

    def as_dict(self) -> dict:
        return {"section": self.title, "name": self.name, "status": self.status, "detail": self.detail,
                "seconds": round(self.seconds, 6), "unchecked": self.status is Outcome.SKIP and self.gap,
                "decisions": list(self.decisions)} | ({"console": self.console} if self.console else {})

    def record(self) -> Record:
        return Record(suite=self.title, name=self.name, outcome=self.status, message=self.detail.split("\n")[0],
                      detail=self.detail, seconds=self.seconds, classname=f"conform.{self.title}",
                      output="\n".join(console_text(self.console)))


CONSOLE_LINES = 200     # of a check's console in a JUnit system-out; the JSON has them all


def console_text(lines: list[dict]) -> list[str]:
    """A check's console lines for a report's text: 'console, device 1234567 us (host 89 us): text'."""
    out = [f"console, {'device ' + str(ln['dev_us']) + ' us' if ln.get('dev_us') is not None else 'device time unknown'}"
           f" (host {ln['host_us']} us): {ln['text']}" for ln in lines]
    return out[:CONSOLE_LINES] + ([f"... {len(out) - CONSOLE_LINES} more console lines"]
                                  if len(out) > CONSOLE_LINES else [])


@dataclass
class Report:
    device: str
    identity: dict = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    aborted: str = ""
    wall_s: float = 0.0
    stats: dict = field(default_factory=dict)
    quick: str = ""         # "quick run: N scenarios not run" after --quick left some out
    interrupted: str = ""   # "interrupted by SIGTERM": a signal stopped the run; what finished is all kept

    @property
    def passed(self) -> bool:
        """Nothing failed (some of the SPEC may still be unchecked: see verdict)."""
        return not self.aborted and all(c.status.ok or c.status is Outcome.INTERRUPTED for c in self.checks)

    @property
    def cut(self) -> list[CheckResult]:
        """The checks and scenarios the link cut short: while there is one, the unit is not judged."""
        return [c for c in self.checks if c.status in CUT]

    @property
    def unchecked(self) -> list[CheckResult]:
        """What the run skipped that the SPEC asks of this unit: why the verdict is PARTIAL."""
        return [c for c in self.checks if c.status is Outcome.SKIP and c.gap]

    @property
    def kind(self) -> str | None:
        return self.identity.get("kind_name")

    @property
    def gaps(self) -> list:
        """The SPEC sections and decision ids nothing passing showed (coverage.py): each makes the verdict PARTIAL."""
        return coverage.gaps(self, self.kind)

    @property
    def verdict(self) -> str:
        """CONFORMS: everything required was checked and passed, every SPEC section and decision of the
        unit covered. PARTIAL: nothing failed, but some was not checked (a missing optional capability,
        a scenario selection, a quick run, a decision nothing covered). NOT JUDGED: the link cut checks
        short (or failed during the run): the checks assume a clean link, so on one that lost what they
        needed neither a pass nor a fail is the unit's. Else DOES NOT CONFORM."""
        if self.aborted or self.cut:
            return "NOT JUDGED"
        if not self.passed:
            return "DOES NOT CONFORM"
        return "PARTIAL" if self.unchecked or self.gaps or self.interrupted else "CONFORMS"

    @property
    def verdict_line(self) -> str:
        """The verdict as the console says it: NOT JUDGED says by how much."""
        if self.verdict != "NOT JUDGED":
            return self.verdict
        if self.aborted:
            return "NOT JUDGED: the link failed during the run"
        return f"NOT JUDGED: {len(self.cut)} check(s) cut by the link"

    def sections(self) -> list[tuple[str, list[CheckResult]]]:
        order = list(SECTIONS)
        keys = sorted({c.section for c in self.checks}, key=lambda s: order.index(s) if s in order else 99)
        return [(k, [c for c in self.checks if c.section == k]) for k in keys]

    def records(self) -> list[Record]:
        out = [replace(c.record(), device=self.device) for _, checks in self.sections() for c in checks]
        if self.aborted:
            out.append(Record(suite="connection", name="link", outcome=Outcome.ERROR, message=self.aborted,
                              detail=self.aborted, classname="conform.connection", device=self.device))
        return out

    def as_dict(self) -> dict:
        return {"device": self.device, "identity": self.identity, "verdict": self.verdict, "passed": self.passed,
                "unchecked": len(self.unchecked), "cut": len(self.cut), "aborted": self.aborted, "quick": self.quick,
                "interrupted": self.interrupted,
                "wall_s": round(self.wall_s, 3), "stats": self.stats,
                "sections": [{"section": SECTIONS.get(k, k), "checks": len(cs),
                              "failed": tally(c.status for c in cs)["failed"],
                              "cut": sum(c.status in CUT for c in cs),
                              "error": tally(c.status for c in cs)["error"],
                              "skipped": tally(c.status for c in cs)["skipped"]} for k, cs in self.sections()],
                "checks": [c.as_dict() for c in self.checks],
                "coverage": coverage.as_dict(self, self.kind)}
