"""How far ahead of a race's first stimulus the runner fixes its start, on the unit's clock.

A fact of the runner's scheduling that the scenario validator needs too (a step scheduled closer than
REAL_LEAD_US after the event it waits for cannot be sent in time over a link with transit time), kept
here, below both, so that neither reads it from the other."""
from __future__ import annotations

VIRTUAL_LEAD_US = 1000      # a virtual link with no transit time: past the last reply, room for one INJECT
REAL_LEAD_US = 30_000       # the floor over a link with transit time (the runner adds what the link has shown)
