"""unohil conform: the firmware acceptance run, reported by SPEC.md section.

1. Protocol checks, on raw frames (wire.py, not the Driver, because most checks send
   what a well-behaved host never would), one module per SPEC section under checks/,
   each check registered with its section where it is written (registry.py). The unit
   is rebooted (RESET reboot) at the start and at the end. Some checks are global:
   every command sent during the run must get exactly one reply, every device frame
   must decode, header seqs and event_seqs must run without gaps; they are judged over
   everything that came back, so a fault in some corner of the run still fails them.
2. The scenario library of the unit's kind (sections 7-9), through the runner.

The checks assume a clean link (a lost byte is reported as the device's fault); run
conformance on a good cable.
"""
from __future__ import annotations

from unohil.harness.conform.report import CheckResult, Report
from unohil.harness.conform.session import Conformance

__all__ = ["CheckResult", "Conformance", "Report", "run"]


def run(link, *, scenarios: list | None = None, progress=None, quick: bool = False) -> Report:
    return Conformance(link, scenarios=scenarios, progress=progress, quick=quick).run()
