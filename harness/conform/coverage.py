"""What a conformance run proved, stated by SPEC section and by SPEC decision id (protocol/decisions.yaml):
for each, the checks and scenarios that cover it and what came of them.

A section or decision is
- passed: something covering it ran and passed, and nothing covering it failed;
- failed: something covering it failed;
- unchecked: everything covering it was skipped, and some of it applies to this unit (a missing
  capability, a scenario not run): the verdict cannot be CONFORMS;
- n/a: everything covering it was skipped as not applying to this unit (another variant's rule,
  another unit kind's section, the USB binding on a serial link);
- cut by the link: something covering it ended in a link error or a reset, nothing failed: not shown;
- NOT COVERED: nothing this run had covers it: the verdict cannot be CONFORMS either, since nothing
  showed the unit follows it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from unohil.protocol import catalogue as cat

from unohil.harness.conform.registry import CHECKS, SECTIONS
from unohil.harness.outcome import Outcome

PASSED, FAILED, UNCHECKED, NA, NOT_COVERED = "passed", "failed", "unchecked", "n/a", "NOT COVERED"
CUT = "cut by the link"
_CUT = (Outcome.LINK_ERROR, Outcome.RESET)


@dataclass
class Covered:
    key: str                    # a SPEC section ("4.3") or a decision id ("SD-5")
    title: str
    status: str
    checks: list[str] = field(default_factory=list)
    scenarios: list[str] = field(default_factory=list)
    reason: str = ""            # why it is failed, unchecked, n/a or not covered

    @property
    def gap(self) -> bool:
        """Left unshown on a unit it applies to: why a run that failed nothing is PARTIAL."""
        return self.status in (UNCHECKED, NOT_COVERED, CUT)

    def as_dict(self) -> dict:
        return {"id": self.key, "title": self.title, "status": self.status, "checks": self.checks,
                "scenarios": self.scenarios, "reason": self.reason}


def _judge(key: str, title: str, items: list) -> Covered:
    out = Covered(key, title, NOT_COVERED)
    for c in items:
        (out.scenarios if c.scenario else out.checks).append(c.name)
    cut = [c for c in items if c.status in _CUT]
    failed = [c for c in items if not c.status.ok and c not in cut]
    skipped = [c for c in items if c.status is Outcome.SKIP]
    if failed:
        out.status, out.reason = FAILED, f"{len(failed)} failed: {failed[0].name}"
    elif cut:
        out.status, out.reason = CUT, f"{len(cut)} cut by the link: {cut[0].name}"
    elif len(skipped) < len(items):
        out.status = PASSED
    elif skipped:
        gaps = [c for c in skipped if c.gap]
        why = (gaps or skipped)[0]
        out.status = UNCHECKED if gaps else NA
        out.reason = f"{len(skipped)} skipped: {why.detail.splitlines()[0] if why.detail else why.name}"
    return out


def sections(report, kind: str | None) -> list[Covered]:
    """Every SPEC section conformance knows (registry.SECTIONS), with what covered it."""
    unit_sections = {u.section: k for k, u in cat.UNITS.items()}
    out = []
    for key, title in SECTIONS.items():
        cov = _judge(key, title, [c for c in report.checks if c.section == key])
        if cov.status == NOT_COVERED:
            if unit_sections.get(key, kind) != kind:
                cov.status, cov.reason = NA, f"the section of the {unit_sections[key]} unit"
            elif any(c.section == key and c.when is not None for c in CHECKS):
                cov.status, cov.reason = NA, "no check of this section applies to this link"
            elif key in unit_sections:
                cov.reason = "no scenario of the unit was run"
        out.append(cov)
    return out


def decisions(report, kind: str | None) -> list[Covered]:
    """Every decision id of the unit's kind, with the checks and scenarios that name it."""
    if kind is None:
        return []
    out = []
    for d in cat.UNITS[kind].decisions:
        cov = _judge(d.id, d.text, [c for c in report.checks if d.id in c.decisions])
        if cov.status == NOT_COVERED:
            cov.reason = "no check or scenario of this run names it"
        out.append(cov)
    return out


def label(c: Covered) -> str:
    return c.title if c.key in c.title else f"{c.key} {c.title}"


def gaps(report, kind: str | None) -> list[Covered]:
    return [c for c in sections(report, kind) + decisions(report, kind) if c.gap]


def as_dict(report, kind: str | None) -> dict:
    secs, decs = sections(report, kind), decisions(report, kind)
    return {"sections": [c.as_dict() for c in secs], "decisions": [c.as_dict() for c in decs],
            "unchecked": [c.key for c in secs + decs if c.status == UNCHECKED],
            "not_covered": [c.key for c in secs + decs if c.status == NOT_COVERED]}
