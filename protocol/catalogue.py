"""The message catalogue (messages.yaml) turned into Python objects.

Everything the codec knows about a message comes from here; nothing about a
message's layout is written anywhere else in Python.
"""
from __future__ import annotations

import binascii
import enum
import json
import struct
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Mapping

from . import checked
from .fieldtypes import TYPES
from .rules import CrossRule, EventFilter, ParamBound, TimerRule, parse_filter

_TYPE_CODES = {t: code for t, (code, _lo, _hi) in TYPES.items()}
_TYPE_RANGES = {t: (lo, hi) for t, (_code, lo, hi) in TYPES.items()}

NONE_U8 = 0xFF
NONE_U16 = 0xFFFF
NONE_U32 = 0xFFFFFFFF
NONE_I32 = 0x7FFFFFFF


@dataclass(frozen=True)
class FieldDef:
    name: str
    type: str
    count: int = 1
    enum: str | None = None

    @property
    def size(self) -> int:
        return struct.calcsize("<" + _TYPE_CODES[self.type]) * self.count

    @property
    def range(self) -> tuple[int, int]:
        return _TYPE_RANGES[self.type]


@dataclass(frozen=True)
class Param:
    name: str
    id: int
    units: tuple[str, ...]
    min: int
    max: int
    default: int
    unit: str
    doc: str


class MessageDef:
    """One catalogue entry plus its compiled struct and Python class."""

    def __init__(self, raw: dict):
        self.name: str = raw["name"]
        self.id: int = raw["id"]
        self.kind: str = raw["class"]          # command | reply | event
        self.reply: str | None = raw.get("reply")
        self.capability: str | None = raw.get("capability")    # a command a unit without it answers unsupported
        self.units: tuple[str, ...] = tuple(raw.get("units", ()))
        self.doc: str = raw.get("doc", "")
        self.fields: tuple[FieldDef, ...] = tuple(
            FieldDef(f["name"], f["type"], f.get("count", 1), f.get("enum")) for f in raw.get("fields", ())
        )
        fmt = "<" + "".join(f"{f.count}{_TYPE_CODES[f.type]}" if f.count > 1 else _TYPE_CODES[f.type]
                            for f in self.fields)
        self.struct = struct.Struct(fmt)
        self.size = self.struct.size
        self.has_arrays = any(f.count > 1 for f in self.fields)
        self.cls = _make_class(self)

    def __repr__(self) -> str:
        return f"<MessageDef {self.name} 0x{self.id:02X}>"


def _make_class(mdef: MessageDef):
    names = [f.name for f in mdef.fields]
    defaults = [tuple([0] * f.count) if f.count > 1 else 0 for f in mdef.fields]
    base = namedtuple(mdef.name, names, defaults=defaults)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in zip(self._fields, self)}

    cls = type(mdef.name, (base,), {
        "__slots__": (),
        "NAME": mdef.name,
        "ID": mdef.id,
        "KIND": mdef.kind,
        "DEF": mdef,
        "to_dict": to_dict,
        "__doc__": mdef.doc or f"{mdef.name} message (0x{mdef.id:02X}).",
    })
    return cls


# the decisions every unit kind follows (PR-n) are grouped under this name, decided in these sections
PROTOCOL_GROUP, PROTOCOL_SECTIONS = "protocol", ("1", "2", "3", "4")


def _check(messages: str, decisions: str) -> tuple[dict, dict[str, list[dict]]]:
    """Both files checked (schema.py), as plain data: the catalogue, and the decisions by unit kind."""
    from .schema import load_catalogue, load_decisions
    raw = load_catalogue(messages, "messages.yaml")
    sections = {kind: u["section"] for kind, u in raw["units"].items()} | {PROTOCOL_GROUP: PROTOCOL_SECTIONS}
    return raw, load_decisions(decisions, sections)


def _load() -> tuple[dict, dict[str, list[dict]]]:
    texts = (checked.text("messages.yaml"), checked.text("decisions.yaml"))
    return checked.load("catalogue", texts, lambda: _check(*texts))


RAW, _DECISIONS_RAW = _load()
PROTOCOL: dict = RAW["protocol"]
MAJOR: int = PROTOCOL["major"]
MINOR: int = PROTOCOL["minor"]
VERSION_BYTE: int = (MAJOR << 4) | MINOR
HEADER_SIZE: int = PROTOCOL["header_size"]
CRC_SIZE: int = PROTOCOL["crc_size"]
MAX_FRAME: int = PROTOCOL["max_frame"]
MAX_PAYLOAD: int = PROTOCOL["max_payload"]
MAX_ENCODED: int = PROTOCOL["max_encoded"]
EVENT_BUFFER: int = PROTOCOL["event_buffer"]
INJECT_QUEUE: int = PROTOCOL["inject_queue"]
RNG_STREAM: int = PROTOCOL["rng_stream"]

ENUM_VALUES: dict[str, dict[str, int]] = RAW["enums"]
ENUMS: dict[str, type[enum.IntEnum]] = {
    name: enum.IntEnum("".join(p.capitalize() for p in name.split("_")), values)
    for name, values in ENUM_VALUES.items()
}

PARAMS: tuple[Param, ...] = tuple(
    Param(p["name"], p["id"], tuple(p["units"]), p["min"], p["max"], p["default"], p["unit"], p["doc"])
    for p in RAW["params"]
)
PARAMS_BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
PARAMS_BY_ID: dict[int, Param] = {p.id: p for p in PARAMS}

MESSAGES: tuple[MessageDef, ...] = tuple(MessageDef(m) for m in RAW["messages"])
BY_NAME: dict[str, MessageDef] = {m.name: m for m in MESSAGES}
BY_ID: dict[int, MessageDef] = {m.id: m for m in MESSAGES}


def params_for(unit: str) -> tuple[Param, ...]:
    return tuple(p for p in PARAMS if unit in p.units)


@dataclass(frozen=True)
class RoleFacts:
    """Who is who in a game, as the unit reports it (messages.yaml `units.KIND.roles`): the event field
    that lists the game's players, the one that names whose turn it is (the others are the opponents),
    the input that starts a game, each button's input, and the event fields that hold a button or a
    mask of buttons. Fields are (message, field) pairs."""
    players: tuple[str, str]
    current: tuple[str, str]
    started_by: str
    buttons: tuple[str, ...]
    player_fields: frozenset[tuple[str, str]]
    mask_fields: frozenset[tuple[str, str]]


def _field_ref(text: str) -> tuple[str, str]:
    message, _, name = text.partition(".")
    return message, name


@dataclass(frozen=True)
class UnitDef:
    """What the host knows about one unit kind beyond its messages' layout (messages.yaml `units`)."""
    kind: str
    title: str
    section: str
    verdict: str
    outcome_field: str
    anchors: dict[str, str]
    time_fields: frozenset[str]
    cross_rules: tuple[CrossRule, ...]
    capabilities: tuple[str, ...]
    power_on_state: str
    field_enums: dict[tuple[str, str], str]
    situations: dict
    extra_enums: tuple[str, ...] = ()
    # inputs with a position that RESET new_game keeps (LA-7, FL-17): position -> (action, value) that puts the
    # switch there; the first position is the one at boot
    switches: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    # event -> the longest it can take to come after the host's last input, over the parameters
    latest_after_input: dict[str, ParamBound] = field(default_factory=dict)
    # capabilities whose absence (SD-11's landing_sensor) or presence (the Flash's FL-20..FL-22) makes
    # another form of the unit with rules of its own: a scenario written for the other form does not
    # apply, rather than going unchecked
    variants: tuple[str, ...] = ()
    valued_inputs: tuple[str, ...] = ()  # inputs whose INPUT.value means something; others take 0 (PR-3)
    card_capacity: int = 0      # IDENTITY.card_capacity: the cards the unit holds (SD-10, LA-14); 0: it holds none
    # timer event -> the verdict field that carries its scheduled time (PR-1)
    scheduled_times: dict[str, str] = field(default_factory=dict)
    # verdict time field -> the i32 field whose NONE_I32 says it is none (PR-2)
    optional_times: dict[str, str] = field(default_factory=dict)
    roles: RoleFacts | None = None      # a unit whose game has players taking turns (Flash)
    timers: tuple[TimerRule, ...] = ()  # when each timer event is due at the earliest (PR-1)
    drawn_times: tuple[str, ...] = ()   # events whose time a random draw decides (SPEC 6)
    fresh_states: tuple[str, ...] = ()  # states in which nothing of the game before carries over

    @property
    def inputs(self) -> dict[str, int]:
        return ENUM_VALUES[f"{self.kind}_input"]

    @property
    def events(self) -> frozenset[str]:
        return frozenset(m.name for m in MESSAGES if m.kind == "event" and self.kind in m.units)

    @property
    def params(self) -> tuple[Param, ...]:
        return params_for(self.kind)

    @property
    def decisions(self) -> tuple["Decision", ...]:
        """The SPEC decisions a unit of this kind follows: its own (SD-n, FL-n, LA-n), then the
        protocol-level ones (PR-n), in order."""
        return tuple(d for d in DECISIONS.values() if d.unit == self.kind) + \
            tuple(d for d in DECISIONS.values() if d.unit == PROTOCOL_GROUP and self.kind in d.kinds)

    @property
    def enums(self) -> tuple[str, ...]:
        """The enums of this kind (named after it, or listed in its entry), in catalogue order."""
        return tuple(e for e in ENUM_VALUES if e.startswith(self.kind + "_") or e in self.extra_enums)

    def enum_for(self, message: str, field: str) -> str | None:
        return self.field_enums.get((message, field))

    @property
    def boot_positions(self) -> dict[str, str]:
        """Each switch's position at boot."""
        return {name: next(iter(positions)) for name, positions in self.switches.items()}

    def with_defaults(self, config: Mapping[str, int]) -> dict[str, int]:
        """Every parameter of this kind: the value given, else the catalogue default."""
        return {p.name: config.get(p.name, p.default) for p in self.params}

    def latest_us(self, event: str, config: Mapping[str, int]) -> int:
        """The longest event can take to come after the last input, on a unit configured so (config over
        the defaults)."""
        return self.latest_after_input[event].us(self.with_defaults(config))


def _situation(value):
    # (input, action, value) triples are written as YAML lists: a list of scalars is one triple
    if isinstance(value, list):
        return tuple(value) if all(not isinstance(v, list) for v in value) else [tuple(v) for v in value]
    return value


def _unit(kind: str, raw: dict) -> UnitDef:
    spoken = [m for m in MESSAGES if m.kind != "event" or kind in m.units]
    field_enums = {(m.name, f.name): f.enum for m in spoken for f in m.fields if f.enum}
    field_enums.update({(m, f): e for m, fields in raw["field_enums"].items() for f, e in fields.items()})
    return UnitDef(
        kind=kind, title=raw["title"], section=raw["section"], verdict=raw["verdict"],
        outcome_field=raw["outcome_field"], anchors=dict(raw["anchors"]), time_fields=frozenset(raw["time_fields"]),
        cross_rules=tuple(CrossRule.parse(r) for r in raw["cross_rules"]),
        capabilities=tuple(raw["capabilities"]), power_on_state=raw["power_on_state"], field_enums=field_enums,
        situations={k: _situation(v) for k, v in raw["situations"].items()}, extra_enums=tuple(raw["enums"]),
        switches={name: {pos: (a, v) for pos, (a, v) in positions.items()}
                  for name, positions in raw.get("switches", {}).items()},
        latest_after_input={event: ParamBound(str(text)) for event, text in raw["latest_after_input"].items()},
        variants=tuple(raw.get("variants", ())),
        valued_inputs=tuple(raw.get("valued_inputs", ())), card_capacity=raw.get("card_capacity", 0),
        scheduled_times=dict(raw.get("scheduled_times", {})), optional_times=dict(raw.get("optional_times", {})),
        roles=_roles(raw["roles"]) if "roles" in raw else None,
        timers=tuple(_timer(name, t, field_enums) for name, t in raw.get("timers", {}).items()),
        drawn_times=tuple(raw.get("drawn_times", ())), fresh_states=tuple(raw.get("fresh_states", ())),
    )


def _timer(event: str, raw: dict, field_enums: dict) -> TimerRule:
    def resolved(text: str) -> EventFilter:
        name, pairs = parse_filter(text)
        return EventFilter(name, tuple((f, int(v) if v.isdigit() else ENUM_VALUES[field_enums[(name, f)]][v])
                                       for f, v in pairs))
    after = [raw["after"]] if isinstance(raw["after"], str) else raw["after"]
    return TimerRule(event=event, after=tuple(map(resolved, after)), delay=ParamBound(str(raw["delay"])),
                     frozen_by=tuple(tuple(x.split(".")) for x in raw.get("frozen_by", ())), when=raw.get("when"))


def _roles(raw: dict) -> RoleFacts:
    return RoleFacts(players=_field_ref(raw["players"]), current=_field_ref(raw["current"]),
                     started_by=raw["started_by"], buttons=tuple(raw["buttons"]),
                     player_fields=frozenset(map(_field_ref, raw["player_fields"])),
                     mask_fields=frozenset(map(_field_ref, raw["mask_fields"])))


#: the game units, in the order of the unit_kind enum (the rig's kind is not one: see RIG)
UNITS: dict[str, UnitDef] = {kind: _unit(kind, RAW["units"][kind]) for kind in ENUM_VALUES["unit_kind"]
                             if kind in RAW["units"]}


@dataclass(frozen=True)
class WireDef:
    """One line of a rig's reference wiring (messages.yaml `rig.wiring`): what the line is on the unit.
    id and target are numbers here (the unit's enums resolved); target is NONE_U8 for any target. The
    loopback's line (signal loopback, SPEC 13.7) watches the rig's own drive line id, not the unit."""
    line: int
    signal: str                 # rig_signal: input, light, sound, launch, card, loopback
    name: str                   # the input, light or sound name, or the signal's for launch and card
    id: int = 0
    target: int = 0
    polarity: str = "active_low"

    @property
    def drives(self) -> bool:
        return self.signal == "input"


@dataclass(frozen=True)
class SwitchedBy:
    """What moves a watched signal of a rig (messages.yaml `rig.switched_by`): the unit's event, its field naming
    the lamp or sound (None: the event alone), and whether the line follows a level or gives a pulse."""
    event: str
    field: str | None = None
    level: bool = False


@dataclass(frozen=True)
class RigDef:
    """The stimulus-and-capture rig (messages.yaml `rig`, SPEC 13): a device kind that is not a game unit."""
    kind: str
    title: str
    section: str
    lines: int
    power_on_state: str
    capabilities: tuple[str, ...]
    timing: dict[str, int]
    wiring: dict[str, tuple[WireDef, ...]]    # unit kind -> its reference wiring, in line order (loopback included)
    loopback: WireDef | None = None           # the rig's own wire, drive line id -> watched line (SPEC 13.7)
    switched_by: dict[str, "SwitchedBy"] = field(default_factory=dict)     # watched signal -> what moves it

    def line_of(self, unit: str, signal: str, name: str | None = None, target: int | None = None) -> int:
        """The line of the reference wiring of a unit kind that carries this signal (input or light name...)."""
        for w in self.wiring[unit]:
            if w.signal == signal and (name is None or w.name == name) and (target is None or w.target == target):
                return w.line
        raise KeyError(f"the {unit} wiring has no {signal} line {name or ''} {'' if target is None else target}")


def _wire(unit: str, raw: dict) -> WireDef:
    signal = raw["signal"]
    if signal in ("input", "light", "sound"):
        name = raw["id"]
        ident = ENUM_VALUES[f"{unit}_{signal}"][name]
    else:
        name, ident = signal, 0
    target = raw.get("target", NONE_U8 if signal == "light" else 0)
    if isinstance(target, str):
        target = ENUM_VALUES["side"][target]
    return WireDef(raw["line"], signal, name, ident, target, raw.get("polarity", "active_low"))


def _rig(raw: dict) -> RigDef:
    lb = raw.get("loopback")
    loopback = WireDef(lb["line"], "loopback", "loopback", lb["drive"]) if lb else None
    own = (loopback,) if loopback else ()
    return RigDef(kind=raw["kind"], title=raw["title"], section=raw["section"], lines=raw["lines"],
                  power_on_state=raw["power_on_state"], capabilities=tuple(raw["capabilities"]),
                  timing=dict(raw["timing"]),
                  wiring={unit: tuple(sorted([*(_wire(unit, w) for w in ws), *own], key=lambda w: w.line))
                          for unit, ws in raw["wiring"].items()},
                  loopback=loopback,
                  switched_by={signal: SwitchedBy(**spec) for signal, spec in raw.get("switched_by", {}).items()})


RIG: RigDef | None = _rig(RAW["rig"]) if "rig" in RAW else None


@dataclass(frozen=True)
class Decision:
    """One numbered decision of the SPEC (decisions.yaml): what the SPEC decides where the documents are silent."""
    id: str
    unit: str
    section: str        # the SPEC section that decides it ("7.4")
    text: str           # in brief, one line
    kinds: tuple[str, ...] = ()     # the unit kinds that follow it: its own, or those a protocol-level one names


def _decisions() -> dict[str, Decision]:
    every = tuple(RAW["units"])
    return {d["id"]: Decision(d["id"], kind, d["section"], d["text"],
                              tuple(d.get("units", every)) if kind == PROTOCOL_GROUP else (kind,))
            for kind, ds in _DECISIONS_RAW.items() for d in ds}


#: every decision id of the SPEC (SPEC 12 is generated from it), in the SPEC's order
DECISIONS: dict[str, Decision] = _decisions()


def has_capability(caps: int, name: str) -> bool:
    """Whether IDENTITY.caps has the capability bit of that name."""
    return bool(caps >> ENUM_VALUES["capability"][name] & 1)


def enum_name(enum_name_: str, value: int) -> str:
    """Symbolic name of value in an enum, or the number as text when it has none."""
    if enum_name_ == "param":
        p = PARAMS_BY_ID.get(value)
        return p.name if p else str(value)
    name = ENUM_NAMES.get(enum_name_, {}).get(value)
    return name if name is not None else str(value)


#: value -> name per enum (the reverse of ENUM_VALUES, the one such map: every module that names a value
#: reads it here); the first name of a value wins, as in the catalogue's order
ENUM_NAMES: dict[str, dict[int, str]] = {}
for _enum, _values in ENUM_VALUES.items():
    _names = ENUM_NAMES[_enum] = {}
    for _k, _v in _values.items():
        _names.setdefault(_v, _k)
del _enum, _values, _names, _k, _v


def _canonical() -> bytes:
    """The layout-relevant part of the catalogue, for the catalogue CRC in IDENTITY."""
    doc = {
        "protocol": [MAJOR, MINOR],
        "enums": ENUM_VALUES,
        "params": [[p.name, p.id, p.min, p.max, p.default] for p in PARAMS],
        "messages": [[m.name, m.id, m.kind, [[f.name, f.type, f.count] for f in m.fields]] for m in MESSAGES],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


CATALOG_CRC: int = binascii.crc_hqx(_canonical(), 0xFFFF)
