"""The one result model: the outcome of a check, race or scenario, and the Record of one reported item (a
JUnit testcase: a scenario of a run's record, report/run_record.py, or a conformance check).

pass and fail are verdicts on the unit. skip says the item could not run here, with the
reason. link-error and reset say the link or a reboot voided the item (never the unit's
fault). error says the harness or the scenario could not run as written. interrupted says a
signal (Ctrl-C, a CI runner's SIGTERM) stopped the run before the item was done: what it had
found by then is kept, and a fail found before the signal stays a fail.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Outcome(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    LINK_ERROR = "link-error"
    RESET = "reset"
    ERROR = "error"
    INTERRUPTED = "interrupted"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @property
    def ok(self) -> bool:
        """Nothing against the unit: it passed, or it was not asked."""
        return self in (Outcome.PASS, Outcome.SKIP)

    @property
    def junit(self) -> str | None:
        """The JUnit element that carries this outcome (None for a pass)."""
        return _JUNIT[self]


_JUNIT = {Outcome.PASS: None, Outcome.FAIL: "failure", Outcome.SKIP: "skipped", Outcome.LINK_ERROR: "error",
          Outcome.RESET: "error", Outcome.ERROR: "error", Outcome.INTERRUPTED: "error"}
# interrupted ranks just above a pass: an item cut short is not a pass, and anything its finished
# parts found (a fail, a link error) is the stronger result
_RANK = {Outcome.SKIP: -1, Outcome.PASS: 0, Outcome.INTERRUPTED: 1, Outcome.FAIL: 2, Outcome.LINK_ERROR: 3,
         Outcome.RESET: 4, Outcome.ERROR: 5}


def worst(outcomes) -> Outcome:
    """The outcome of a whole made of these parts (a pass when there are none)."""
    return max(outcomes, key=_RANK.__getitem__, default=Outcome.PASS)


def tally(outcomes) -> dict[str, int]:
    """How many of each, apart: failed counts verdicts against the unit and nothing else; a link error
    (the link lost what the verdict needed) or a reset is never one, nor is an error (the harness or the
    scenario could not run as written)."""
    out = dict.fromkeys(_TALLY.values(), 0)
    for o in outcomes:
        out[_TALLY[o]] += 1
    return out


def counts_text(counts: dict[str, int]) -> str:
    """'7 passed, 1 failed, 1 skipped', then whichever of the other kinds happened ('2 link errors')."""
    extra = [f"{n} {word}{'s' if n > 1 and plural else ''}" for key, word, plural in _EXTRA
             if (n := counts.get(key))]
    return ", ".join([f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"] + extra)


_TALLY = {Outcome.PASS: "passed", Outcome.FAIL: "failed", Outcome.LINK_ERROR: "link_error", Outcome.RESET: "reset",
          Outcome.SKIP: "skipped", Outcome.ERROR: "error", Outcome.INTERRUPTED: "interrupted"}
_EXTRA = (("link_error", "link error", True), ("reset", "reset", True), ("error", "error", True),
          ("interrupted", "interrupted", False))


@dataclass
class Record:
    """One reported item (a scenario, a conformance check), as JUnit writes it."""
    suite: str                  # the group it is reported in (JUnit testsuite): a SPEC section, a run
    name: str
    outcome: Outcome
    message: str = ""           # one line: why it failed, erred or was skipped
    detail: str = ""            # the whole story
    seconds: float = 0.0
    classname: str = ""
    file: str | None = None
    line: int | None = None
    properties: dict[str, object] = field(default_factory=dict)   # its figures (name -> value)
    output: str = ""            # what a reader of its log wants besides the verdict: the trace excerpt
    device: str = ""            # the URL of the unit it ran on ("" when it ran on none)
