"""What a scenario may say of each unit kind: the catalogue's unit facts (messages.yaml `units`:
inputs, verdict, anchors, device-time fields, field enums) and the scenario language's own step
words and tags."""
from __future__ import annotations

from dataclasses import dataclass, fields

from unohil.protocol import catalogue as cat

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

def rig_anchors(kind: str) -> dict[str, int]:
    """Anchors on what a rig sees of a unit (rig mode, docs/rig.md): seen_NAME, and seen_NAME_TARGET for a lamp
    per target, for each watched line of the kind's reference wiring (messages.yaml rig.wiring) -> that line.
    The time is the line's capture going active, in unit time."""
    if cat.RIG is None:
        return {}
    unit = UNITS[kind]
    target_enum = unit.enum_for("LIGHT", "target")
    out = {}
    for w in cat.RIG.wiring[kind]:
        if w.drives or w.signal == "loopback":
            continue
        name = f"seen_{w.name}"
        if w.signal == "light" and w.target != cat.NONE_U8:
            name += "_" + (cat.enum_name(target_enum, w.target) if target_enum else str(w.target))
        out[name] = w.line
    return out


RIG_ANCHORS: dict[str, dict[str, int]] = {kind: rig_anchors(kind) for kind in UNITS}

#: The documented tag vocabulary.
TAGS = (
    "first-press", "false-start", "both-early", "tie", "line-tiebreak", "even-split", "no-press", "boundary",
    "sweep", "capacity", "refused", "wrap",
    "registration", "turn", "repeat-player", "timeout", "buzzer", "slowest-tie", "non-presser", "cancel",
    "pause", "sleep", "reset", "speed",
    "launcher", "door", "empty", "burst", "hit", "press-until-cards",
    "config", "compare",
)
