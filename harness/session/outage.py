"""Waiting out a lost link: a ser2net restarted, a USB unit re-enumerating, a TCP server moved.

The link is tried again at once, then after waits that double up to a ceiling, for as long as the
outage budget lasts; each wait is said (what is waited for, and why: the last attempt's error).
The sleep and the clock are injectable, so the schedule is tested exactly without waiting.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from unohil.harness.errors import DeviceMismatch, DeviceURLError, LinkError, WaitTimeout

T = TypeVar("T")

DEFAULT_BUDGET_US = 30_000_000
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|ms|s|min)?\s*")
_US_PER = {"us": 1, "ms": 1000, "s": 1_000_000, "min": 60_000_000, None: 1_000_000}


def parse_budget(text: str) -> int:
    """An outage budget in us from '30s', '500ms', '2min' or '30' (seconds); ValueError if not one."""
    m = _DURATION.fullmatch(str(text))
    if m is None:
        raise ValueError(f"{text!r} is not a duration: give seconds (30), or a number with us, ms, s or min "
                         f"(30s, 500ms)")
    return round(float(m.group(1)) * _US_PER[m.group(2)])


class LinkDown(LinkError):
    """The link could not be had back within the outage budget; the message says why."""


@dataclass
class Outage:
    """The policy: how long to keep trying (budget_us) and how often."""
    budget_us: int = DEFAULT_BUDGET_US
    first_wait_us: int = 50_000
    longest_wait_us: int = 2_000_000
    say: Callable[[str], None] | None = None
    sleep: Callable[[float], None] = time.sleep
    clock_us: Callable[[], int] = lambda: time.monotonic_ns() // 1000

    def ride_out(self, attempt: Callable[[], T]) -> tuple[T, str]:
        """attempt() until it works; returns its result and what the outage was ("" if the first
        try worked). A link that fails or whose URL cannot be opened is an outage; anything else (no
        answer on a working link, another unit answering) is raised at once, and LinkDown when the
        budget is spent."""
        start = self.clock_us()
        wait = self.first_wait_us
        tries = 0
        while True:
            try:
                result = attempt()
            except (DeviceMismatch, WaitTimeout):
                raise       # another unit, or one that does not answer on a working link: no outage to wait out
            except (LinkError, DeviceURLError) as exc:
                cause = str(exc)
            else:
                if not tries:
                    return result, ""
                return result, (f"the link was back after {(self.clock_us() - start) / 1e6:.1f} s and {tries + 1} "
                                f"tries (until then: {cause})")
            tries += 1
            spent = self.clock_us() - start
            left = self.budget_us - spent
            if left <= 0:
                raise LinkDown(f"{cause}; the link was not back within the outage budget of "
                               f"{self.budget_us / 1e6:g} s ({tries} tries)")
            pause = min(wait, left)
            if self.say is not None:
                self.say(f"{cause}; waiting for the link: next try in {pause / 1e6:.2f} s ({spent / 1e6:.1f} s "
                         f"of the outage budget of {self.budget_us / 1e6:g} s spent)")
            self.sleep(pause / 1e6)
            wait = min(2 * wait, self.longest_wait_us)


def hung_unit_note(driver, exc: Exception) -> str:
    """A race cut by a unit that stopped answering (a WaitTimeout on a working link): power-cycled now when
    its link has a lifecycle (harness/links/lifecycle.py), and what was done, for the race's error ("; the
    unit stopped answering: power-cycled (...)"); "" otherwise, and the recovery goes on as it would."""
    if not isinstance(exc, WaitTimeout):
        return ""
    from unohil.harness.links.lifecycle import power_cycle_hung
    note = power_cycle_hung(driver)
    return f"; {note}" if note else ""
