"""What a scenario may say of each unit kind: the catalogue's unit facts (messages.yaml `units`:
inputs, verdict, anchors, device-time fields, field enums) and the scenario language's own step
words and tags."""
from __future__ import annotations

from dataclasses import dataclass, fields

from protocol import catalogue as cat

#: The step words of each kind (docs/scenarios.md); each names inputs of that kind or waits.
#: Every kind also waits for events (wait_for) and changes its configuration and switches mid-race.
_ANY = ("wait", "wait_for", "config", "physical")
STEPS = {
    "showdown": ("load", "unload", "press", "release", *_ANY),
    "flash": ("press", "release", "hold", "speed", "power", *_ANY),
    "launcher": ("load", "press", "release", "door", "power", *_ANY),
}


@dataclass(frozen=True)
class UnitVocab(cat.UnitDef):
    steps: tuple[str, ...] = ()


UNITS: dict[str, UnitVocab] = {
    kind: UnitVocab(**{f.name: getattr(u, f.name) for f in fields(u)}, steps=STEPS[kind])
    for kind, u in cat.UNITS.items()
}

#: The documented tag vocabulary.
TAGS = (
    "first-press", "false-start", "both-early", "tie", "line-tiebreak", "even-split", "no-press", "boundary",
    "sweep", "capacity", "refused", "wrap",
    "registration", "turn", "repeat-player", "timeout", "buzzer", "slowest-tie", "non-presser", "cancel",
    "pause", "sleep", "reset", "speed",
    "launcher", "door", "empty", "burst", "hit", "press-until-cards",
    "config", "compare",
)
