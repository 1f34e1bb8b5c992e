"""What each unit kind offers a scenario: its inputs, step words, anchors, verdict."""
from __future__ import annotations

from dataclasses import dataclass, field

from protocol import catalogue as cat


@dataclass(frozen=True)
class UnitVocab:
    kind: str
    inputs: dict[str, int]
    verdict: str                    # the message that ends a race
    anchors: dict[str, str]         # anchor name -> event message name
    field_enums: dict[tuple[str, str], str] = field(default_factory=dict)   # (message, field) -> enum
    steps: tuple[str, ...] = ()

    @property
    def events(self) -> set[str]:
        return {m.name for m in cat.MESSAGES if m.kind == "event" and self.kind in m.units}

    def enum_for(self, message: str, field_name: str) -> str | None:
        e = self.field_enums.get((message, field_name))
        if e:
            return e
        return _FIELD_ENUMS.get((message, field_name))


_FIELD_ENUMS = {(m.name, f.name): f.enum for m in cat.MESSAGES for f in m.fields}


def _common_enums(kind: str, target_enum: str | None) -> dict:
    out = {
        ("LIGHT", "light"): f"{kind}_light",
        ("SOUND", "sound"): f"{kind}_sound",
        ("STATE", "state"): f"{kind}_state",
        ("STATE", "previous"): f"{kind}_state",
        ("INPUT_SEEN", "input"): f"{kind}_input",
        ("INPUT_SEEN", "detail"): "error",
    }
    if target_enum:
        out[("LIGHT", "target")] = target_enum
    return out


UNITS: dict[str, UnitVocab] = {
    "showdown": UnitVocab(
        kind="showdown",
        inputs=cat.ENUM_VALUES["showdown_input"],
        verdict="SD_VERDICT",
        anchors={"countdown_start": "SD_COUNTDOWN", "green": "SD_GREEN", "launch": "SD_LAUNCH",
                 "landing": "SD_LANDING", "beep": "SD_BEEP", "verdict": "SD_VERDICT"},
        field_enums=_common_enums("showdown", "side"),
        steps=("load", "unload", "press", "release", "wait"),
    ),
    "flash": UnitVocab(
        kind="flash",
        inputs=cat.ENUM_VALUES["flash_input"],
        verdict="FL_BUZZER_VERDICT",
        anchors={"game_start": "FL_GAME_START", "selected": "FL_SELECTED", "turn_end": "FL_TURN_END",
                 "timeout": "FL_TIMEOUT", "buzzer": "FL_BUZZER", "verdict": "FL_BUZZER_VERDICT",
                 "cancel": "FL_BUZZER_CANCEL", "pause": "FL_PAUSE", "sleep": "FL_SLEEP", "reset": "FL_RESET",
                 "penalty": "FL_PENALTY", "registered": "FL_REGISTERED"},
        field_enums=_common_enums("flash", None),
        steps=("press", "release", "hold", "speed", "power", "wait"),
    ),
    "launcher": UnitVocab(
        kind="launcher",
        inputs=cat.ENUM_VALUES["launcher_input"],
        verdict="LA_RESULT",
        anchors={"door": "LA_DOOR", "loaded": "LA_LOADED", "ding": "LA_DING", "card": "LA_CARD",
                 "result": "LA_RESULT", "empty": "LA_EMPTY"},
        field_enums=_common_enums("launcher", None),
        steps=("load", "press", "release", "door", "power", "wait"),
    ),
}

#: The documented tag vocabulary.
TAGS = (
    "first-press", "false-start", "both-early", "tie", "line-tiebreak", "even-split", "no-press", "boundary",
    "sweep", "capacity", "refused", "wrap",
    "registration", "turn", "repeat-player", "timeout", "buzzer", "slowest-tie", "non-presser", "cancel",
    "pause", "sleep", "reset", "speed",
    "launcher", "door", "empty", "burst", "hit", "press-until-cards",
)
