"""What a valid messages.yaml is: its text checked node by node, into plain data or a CatalogueError at file:line:col.

Every key is checked against the keys its place allows, every value against its type, and every
name one entry gives (an enum, a message, a parameter, an input) against the entries that define
it, so a typo fails at import with the line to fix instead of vanishing or failing far away.
"""
from __future__ import annotations

import re
from typing import NoReturn

import yaml

from . import expr
from .fieldtypes import TYPES
from .rules import CrossRule, parse_filter

_SIZES = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "i8": 1, "i16": 2, "i32": 4}
#: type ids by message class (SPEC 4.1)
ID_RANGES = {"command": (0x01, 0x3F), "reply": (0x40, 0x5F), "event": (0x60, 0xBF)}
_ARTICLE = {"command": "a command", "reply": "a reply", "event": "an event"}
SITUATIONS = ("report", "stimulus", "refused", "refused_value", "busy_config", "busy", "reset_busy")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOP = {"protocol": True, "enums": True, "params": True, "messages": True, "units": True, "rig": False}
_PROTOCOL = dict.fromkeys(("major", "minor", "header_size", "crc_size", "max_frame", "max_payload",
                           "max_encoded", "event_buffer", "inject_queue", "rng_stream"), True)
_PARAM = {"name": True, "id": True, "units": True, "min": True, "max": True, "default": True,
          "unit": False, "doc": False}
_MESSAGE = {"name": True, "id": True, "class": True, "reply": False, "capability": False, "units": False, "doc": False,
            "fields": False}
_FIELD = {"name": True, "type": True, "count": False, "enum": False, "doc": False}
_DECISION = {"id": True, "section": True, "text": True, "units": False}
_DECISION_ID = re.compile(r"([A-Z]{2})-([1-9][0-9]*)\Z")
_UNIT = {"title": True, "section": True, "verdict": True, "outcome_field": True, "power_on_state": True,
         "capabilities": True, "enums": False, "anchors": True, "time_fields": True, "cross_rules": False,
         "field_enums": True, "situations": True, "switches": False, "latest_after_input": True,
         "variants": False, "valued_inputs": False,
         "scheduled_times": False, "optional_times": False, "roles": False, "timers": False,
         "drawn_times": False, "fresh_states": False, "card_capacity": False}
_TIMER = {"after": True, "delay": True, "frozen_by": False, "when": False}
_RIG = {"kind": True, "title": True, "section": True, "lines": True, "power_on_state": True, "capabilities": True,
        "timing": True, "wiring": True, "loopback": False, "switched_by": False}
_SWITCHED_BY = {"event": True, "field": False, "level": False}
RIG_TIMING = ("resolution_us", "drive_error_us", "capture_error_us", "line_skew_us", "fairness_bound_us")
_WIRE = {"line": True, "signal": True, "id": False, "target": False, "polarity": False}
_LOOPBACK = {"line": True, "drive": True}
# signal -> the unit enum its id names (by suffix) and whether a target names a side / a value
_WIRE_ID = {"input": "input", "light": "light", "sound": "sound"}
_ROLES = {"players": True, "current": True, "started_by": True, "buttons": True, "player_fields": True,
          "mask_fields": True}

_CONSTRUCT = yaml.constructor.SafeConstructor()
_SCALARS = {
    "tag:yaml.org,2002:str": lambda n: n.value,
    "tag:yaml.org,2002:int": _CONSTRUCT.construct_yaml_int,
    "tag:yaml.org,2002:bool": _CONSTRUCT.construct_yaml_bool,
    "tag:yaml.org,2002:null": lambda n: None,
    "tag:yaml.org,2002:float": _CONSTRUCT.construct_yaml_float,
}
# libyaml composes several times faster than the pure-Python parser, and the codec is built at import
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CatalogueError(ValueError):
    """messages.yaml is not a valid catalogue; the message starts with file:line:col."""


def load_catalogue(text: str, file: str = "messages.yaml") -> dict:
    """The catalogue in text as plain data (what yaml.safe_load gives), once every rule holds."""
    return _Reader(file).catalogue(_compose(text, file))


def load_decisions(text: str, units: dict[str, str], file: str = "decisions.yaml") -> dict[str, list[dict]]:
    """The decision index (decisions.yaml) as plain data, unit kind -> its decisions, once every rule holds;
    units maps each unit kind to its SPEC section (from the catalogue's units)."""
    return _Reader(file).decisions(_compose(text, file), units)


def _compose(text: str, file: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise CatalogueError(f"{file}:{line}:{col}: malformed YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{file}:1:1: malformed YAML: {exc}") from None


def _text(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(_scalar(node))


def _scalar(node: yaml.ScalarNode):
    return _SCALARS.get(node.tag, lambda n: n.value)(node)


def _label(node, what: str, i: int) -> str:
    """How to name the i-th entry of a list in a problem: by its name when it has a readable one."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == "name" and isinstance(v, yaml.ScalarNode) and v.value:
                return f"{what} {v.value}"
    return f"{what}s[{i}]"


def _join(names) -> str:
    return ", ".join(str(n) for n in names) or "none"


class _Reader:
    def __init__(self, file: str):
        self.file = file

    def fail(self, node: yaml.Node | None, where: str, problem: str, allowed=None) -> NoReturn:
        line, col = (node.start_mark.line + 1, node.start_mark.column + 1) if node is not None else (1, 1)
        tail = f" (allowed: {_join(allowed)})" if allowed is not None else ""
        raise CatalogueError(f"{self.file}:{line}:{col}: {where}: {problem}{tail}")

    # ---- shapes ----

    def mapping(self, node, where: str, keys: dict[str, bool] | None = None) -> dict[str, tuple]:
        """key -> (key node, value node); keys maps each allowed key to whether it is required."""
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, where, f"must be a mapping, not {_text(node)}")
        out: dict[str, tuple] = {}
        for k, v in node.value:
            name = _scalar(k) if isinstance(k, yaml.ScalarNode) else None
            if not isinstance(name, str):
                self.fail(k, where, f"keys must be names, not {_text(k)}")
            if name in out:
                self.fail(k, where, f"duplicate key {name!r}")
            if keys is not None and name not in keys:
                self.fail(k, where, f"unknown key {name!r}", sorted(keys))
            out[name] = (k, v)
        for name, required in (keys or {}).items():
            if required and name not in out:
                self.fail(node, where, f"missing key {name!r}")
        return out

    def seq(self, node, where: str) -> list:
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, where, f"must be a list, not {_text(node)}")
        return node.value

    def value(self, node, where: str, types: tuple, what: str):
        v = _scalar(node) if isinstance(node, yaml.ScalarNode) else node
        if isinstance(v, yaml.Node) or (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
            self.fail(node, where, f"must be {what}, not {_text(node)}")
        return v

    def integer(self, node, where: str, lo: int = 0, hi: int | None = None) -> int:
        v = self.value(node, where, (int,), "an integer")
        if v < lo or (hi is not None and v > hi):
            self.fail(node, where, f"{v} is out of range [{lo}, {hi if hi is not None else '...'}]")
        return v

    def text(self, node, where: str) -> str:
        return self.value(node, where, (str,), "text")

    def name(self, node, where: str) -> str:
        v = self.text(node, where)
        if not _NAME.match(v):
            self.fail(node, where, f"{v!r} is not a name (letters, digits, _)")
        return v

    def one_of(self, node, where: str, allowed, what: str) -> str:
        v = self.text(node, where)
        if v not in allowed:
            self.fail(node, where, f"unknown {what} {v!r}", allowed)
        return v

    def names(self, node, where: str, allowed, what: str) -> list[str]:
        out = []
        for n in self.seq(node, where):
            v = self.one_of(n, where, allowed, what)
            if v in out:
                self.fail(n, where, f"{what} {v!r} named twice")
            out.append(v)
        return out

    # ---- sections ----

    def catalogue(self, root) -> dict:
        if root is None:
            self.fail(None, "catalogue", "the file is empty")
        top = self.mapping(root, "catalogue", _TOP)
        self.raw: dict = {"protocol": self.protocol(top["protocol"][1])}
        self.raw["enums"] = self.enums(top["enums"][1])
        self.raw["params"] = self.params(top["params"][1])
        self.raw["messages"] = self.messages(top["messages"][1])
        rig_kind = self.rig_kind(top["rig"][1]) if "rig" in top else None
        self.raw["units"] = self.units(top["units"][1], rig_kind)
        if "rig" in top:
            self.raw["rig"] = self.rig(top["rig"][1])
        return self.raw

    def protocol(self, node) -> dict:
        m = self.mapping(node, "protocol", _PROTOCOL)
        out = {k: self.integer(v, f"protocol {k}", 0, 0xFFFFFFFF if k == "rng_stream" else 0xFFFF)
               for k, (_, v) in m.items()}
        for k in ("major", "minor"):
            if out[k] > 15:
                self.fail(m[k][1], f"protocol {k}", f"{out[k]} does not fit the version byte's 4 bits")
        if out["header_size"] + out["max_payload"] + out["crc_size"] != out["max_frame"]:
            self.fail(m["max_frame"][1], "protocol max_frame", "must equal header_size + max_payload + crc_size")
        return out

    def enums(self, node) -> dict:
        out = {}
        for name, (k, v) in self.mapping(node, "enums").items():
            self.name(k, "enums")
            values = {}
            for member, (mk, mv) in self.mapping(v, f"enum {name}").items():
                values[self.name(mk, f"enum {name}")] = self.integer(mv, f"enum {name} {member}", 0, 0xFF)
            if not values:
                self.fail(v, f"enum {name}", "has no members")
            out[name] = values
        self.enum_names = set(out) | {"param"}
        return out

    def params(self, node) -> list:
        kinds = self.raw["enums"].get("unit_kind")
        if kinds is None:
            self.fail(node, "params", "the enums have no unit_kind, which params and units name")
        out, ids, names = [], {}, set()
        for i, n in enumerate(self.seq(node, "params")):
            m = self.mapping(n, _label(n, "param", i), _PARAM)
            name = self.name(m["name"][1], f"params[{i}] name")
            where = f"param {name}"
            if name in names:
                self.fail(m["name"][1], where, "name already used by another parameter")
            names.add(name)
            p = {"name": name, "id": self.integer(m["id"][1], f"{where} id", 0, 0xFF)}
            if p["id"] in ids:
                self.fail(m["id"][1], f"{where} id", f"0x{p['id']:02X} is already the id of {ids[p['id']]}")
            ids[p["id"]] = name
            p["units"] = self.names(m["units"][1], f"{where} units", list(kinds), "unit kind")
            if not p["units"]:
                self.fail(m["units"][1], f"{where} units", "names no unit kind", list(kinds))
            for k in ("min", "max", "default"):
                p[k] = self.integer(m[k][1], f"{where} {k}", 0, 0xFFFFFFFF)
            if not p["min"] <= p["default"] <= p["max"]:
                self.fail(m["default"][1], f"{where} default", f"must lie in [min, max] = [{p['min']}, {p['max']}]")
            p["unit"] = self.text(m["unit"][1], f"{where} unit") if "unit" in m else ""
            p["doc"] = self.text(m["doc"][1], f"{where} doc") if "doc" in m else ""
            out.append(p)
        return out

    def messages(self, node) -> list:
        out, ids, by_name, replies = [], {}, {}, []
        max_payload = self.raw["protocol"]["max_payload"]
        for i, n in enumerate(self.seq(node, "messages")):
            m = self.mapping(n, _label(n, "message", i), _MESSAGE)
            name = self.name(m["name"][1], f"messages[{i}] name")
            where = f"message {name}"
            if name in by_name:
                self.fail(m["name"][1], where, "name already used by another message")
            cls = self.one_of(m["class"][1], f"{where} class", list(ID_RANGES), "class")
            lo, hi = ID_RANGES[cls]
            mid = self.integer(m["id"][1], f"{where} id", 0, 0xFF)
            if not lo <= mid <= hi:
                self.fail(m["id"][1], f"{where} id", f"0x{mid:02X} is outside the {cls} ids 0x{lo:02X}..0x{hi:02X}")
            if mid in ids:
                self.fail(m["id"][1], f"{where} id", f"0x{mid:02X} is already the id of {ids[mid]}")
            ids[mid] = name
            raw = {"name": name, "id": mid, "class": cls}
            if cls == "command":
                if "reply" not in m:
                    self.fail(n, where, "a command needs a reply")
                raw["reply"] = self.name(m["reply"][1], f"{where} reply")
                replies.append((m["reply"][1], where, raw["reply"]))
            elif "reply" in m:
                self.fail(m["reply"][0], where, f"only commands have a reply, not {_ARTICLE[cls]}")
            if "capability" in m:
                if cls != "command":
                    self.fail(m["capability"][0], where, f"only commands need a capability, not {_ARTICLE[cls]}")
                raw["capability"] = self.one_of(m["capability"][1], f"{where} capability",
                                                list(self.raw["enums"].get("capability", ())), "capability")
            if cls == "event":
                if "units" not in m:
                    self.fail(n, where, "an event needs units (the unit kinds that send it)")
                raw["units"] = self.names(m["units"][1], f"{where} units", list(self.raw["enums"]["unit_kind"]),
                                          "unit kind")
            elif "units" in m:
                self.fail(m["units"][0], where, f"only events have units, not {_ARTICLE[cls]}")
            if "doc" in m:
                raw["doc"] = self.text(m["doc"][1], f"{where} doc")
            raw["fields"] = self.fields(m["fields"][1] if "fields" in m else None, where, cls, n)
            size = sum(_SIZES[f["type"]] * f.get("count", 1) for f in raw["fields"])
            if size > max_payload:
                self.fail(n, where, f"payload {size} bytes > max_payload {max_payload}")
            by_name[name] = raw
            out.append(raw)
        for node_, where, reply in replies:
            if by_name.get(reply, {}).get("class") != "reply":
                self.fail(node_, f"{where} reply", f"{reply!r} is not a reply message",
                          [r["name"] for r in out if r["class"] == "reply"])
        self.by_name = by_name
        return out

    def fields(self, node, where: str, cls: str, message_node) -> list:
        out, names = [], set()
        for n in self.seq(node, f"{where} fields") if node is not None else ():
            m = self.mapping(n, _label(n, f"{where} field", len(out)), _FIELD)
            name = self.name(m["name"][1], f"{where} field name")
            fw = f"{where} field {name}"
            if name in names:
                self.fail(m["name"][1], fw, "name already used by another field")
            names.add(name)
            f = {"name": name, "type": self.one_of(m["type"][1], f"{fw} type", list(TYPES), "type")}
            if "count" in m:
                f["count"] = self.integer(m["count"][1], f"{fw} count", 1, 255)
            if "enum" in m:
                f["enum"] = self.one_of(m["enum"][1], f"{fw} enum", sorted(self.enum_names), "enum")
            if "doc" in m:
                f["doc"] = self.text(m["doc"][1], f"{fw} doc")
            out.append(f)
        first = {"event": "event_seq", "reply": "cmd_seq"}.get(cls)
        if first and (not out or out[0]["name"] != first or out[0]["type"] != "u16"):
            self.fail(node if node is not None else message_node, where,
                      f"the first field must be {first} (u16), as in every {cls}")
        return out

    def units(self, node, rig_kind: str | None = None) -> dict:
        # every kind of the enum is a game unit here, but the rig's (it has its own section)
        kinds = [k for k in self.raw["enums"]["unit_kind"] if k != rig_kind]
        m = self.mapping(node, "units", dict.fromkeys(kinds, True))
        return {kind: self.unit(kind, m[kind][0], m[kind][1]) for kind in kinds}

    def unit(self, kind: str, key_node, node) -> dict:
        where = f"unit {kind}"
        enums = self.raw["enums"]
        for suffix in ("input", "state"):
            if f"{kind}_{suffix}" not in enums:
                self.fail(key_node, where, f"the enums have no {kind}_{suffix}")
        m = self.mapping(node, where, _UNIT)
        events = {name: raw for name, raw in self.by_name.items() if raw["class"] == "event" and kind in raw["units"]}
        spoken = {name: raw for name, raw in self.by_name.items() if raw["class"] != "event" or name in events}
        params = [p["name"] for p in self.raw["params"] if kind in p["units"]]
        out = {"title": self.text(m["title"][1], f"{where} title"),
               "section": self.text(m["section"][1], f"{where} section")}
        out["verdict"] = self.one_of(m["verdict"][1], f"{where} verdict", list(events), "event")
        out["outcome_field"] = self.one_of(m["outcome_field"][1], f"{where} outcome_field",
                                           [f["name"] for f in events[out["verdict"]]["fields"]], "field")
        out["power_on_state"] = self.one_of(m["power_on_state"][1], f"{where} power_on_state",
                                            list(enums[f"{kind}_state"]), "state")
        out["capabilities"] = self.names(m["capabilities"][1], f"{where} capabilities",
                                         list(enums.get("capability", ())), "capability")
        if "variants" in m:
            out["variants"] = self.names(m["variants"][1], f"{where} variants", out["capabilities"],
                                         "capability of this unit")
        out["enums"] = self.names(m["enums"][1], f"{where} enums", list(enums), "enum") if "enums" in m else []
        if "switches" in m:
            out["switches"] = self.switches(m["switches"][1], where, kind)
        if "card_capacity" in m:
            out["card_capacity"] = self.integer(m["card_capacity"][1], f"{where} card_capacity", 1, 254)
        if "valued_inputs" in m:
            out["valued_inputs"] = self.names(m["valued_inputs"][1], f"{where} valued_inputs",
                                              list(enums.get(f"{kind}_input", ())), "input")
        out["anchors"] = {}
        for name, (k, v) in self.mapping(m["anchors"][1], f"{where} anchors").items():
            self.name(k, f"{where} anchors")
            out["anchors"][name] = self.one_of(v, f"{where} anchor {name}", list(events), "event")
        out["latest_after_input"] = self.latest(m["latest_after_input"][1], where, out, list(events), params)
        times = sorted({f["name"] for e in events.values() for f in e["fields"] if f["type"] == "u32"})
        out["time_fields"] = self.names(m["time_fields"][1], f"{where} time_fields", times, "u32 event field")
        verdict_fields = {f["name"]: f for f in events[out["verdict"]]["fields"]}
        if "scheduled_times" in m:
            out["scheduled_times"] = {}
            for name, (k, v) in self.mapping(m["scheduled_times"][1], f"{where} scheduled_times").items():
                self.one_of(k, f"{where} scheduled_times", list(events), "event")
                out["scheduled_times"][name] = self.one_of(v, f"{where} scheduled_times {name}",
                                                           out["time_fields"], "time field")
        if "fresh_states" in m:
            out["fresh_states"] = self.names(m["fresh_states"][1], f"{where} fresh_states",
                                             list(enums[f"{kind}_state"]), "state")
        if "drawn_times" in m:
            out["drawn_times"] = self.names(m["drawn_times"][1], f"{where} drawn_times", list(events), "event")
        if "optional_times" in m:
            out["optional_times"] = {}
            for name, (k, v) in self.mapping(m["optional_times"][1], f"{where} optional_times").items():
                self.one_of(k, f"{where} optional_times", [n for n in out["time_fields"] if n in verdict_fields],
                            "time field of the verdict")
                out["optional_times"][name] = self.one_of(v, f"{where} optional_times {name}",
                                                          [n for n, f in verdict_fields.items() if f["type"] == "i32"],
                                                          "i32 field of the verdict")
        if "roles" in m:
            out["roles"] = self.roles(m["roles"][1], f"{where} roles", events, list(self.raw["enums"][f"{kind}_input"]))
        out["cross_rules"] = []
        for n in self.seq(m["cross_rules"][1], f"{where} cross_rules") if "cross_rules" in m else ():
            text = self.text(n, f"{where} cross_rules")
            try:
                rule = CrossRule.parse(text)
            except ValueError as exc:
                self.fail(n, f"{where} cross_rules", str(exc))
            for p in rule.params:
                if p not in params:
                    self.fail(n, f"{where} cross_rules", f"unknown parameter {p!r}", params)
            out["cross_rules"].append(text)
        out["field_enums"] = {}
        for message, (k, v) in self.mapping(m["field_enums"][1], f"{where} field_enums").items():
            if message not in spoken:
                self.fail(k, f"{where} field_enums", f"unknown message {message!r} (or not one of this unit's)",
                          list(spoken))
            fields = [f["name"] for f in spoken[message].get("fields", ())]
            out["field_enums"][message] = {}
            for field, (fk, fv) in self.mapping(v, f"{where} field_enums {message}").items():
                if field not in fields:
                    self.fail(fk, f"{where} field_enums {message}", f"unknown field {field!r}", fields)
                out["field_enums"][message][field] = self.one_of(fv, f"{where} field_enums {message}.{field}",
                                                                 sorted(self.enum_names), "enum")
        out["situations"] = self.situations(m["situations"][1], where, kind, params)
        if "timers" in m:
            out["timers"] = self.timers(m["timers"][1], f"{where} timers", events, params, out["field_enums"])
        return out

    # ---- the rig (SPEC 13) ----

    def rig_kind(self, node) -> str:
        m = self.mapping(node, "rig", _RIG)
        return self.one_of(m["kind"][1], "rig kind", list(self.raw["enums"]["unit_kind"]), "unit kind")

    def rig(self, node) -> dict:
        m = self.mapping(node, "rig", _RIG)
        enums = self.raw["enums"]
        for name in ("rig_signal", "rig_polarity", "rig_origin", "rig_state"):
            if name not in enums:
                self.fail(node, "rig", f"the enums have no {name}")
        out = {"kind": self.one_of(m["kind"][1], "rig kind", list(enums["unit_kind"]), "unit kind"),
               "title": self.text(m["title"][1], "rig title"), "section": self.text(m["section"][1], "rig section"),
               "lines": self.integer(m["lines"][1], "rig lines", 1, 0xFF)}
        out["power_on_state"] = self.one_of(m["power_on_state"][1], "rig power_on_state", list(enums["rig_state"]),
                                            "state")
        out["capabilities"] = self.names(m["capabilities"][1], "rig capabilities", list(enums.get("capability", ())),
                                         "capability")
        t = self.mapping(m["timing"][1], "rig timing", dict.fromkeys(RIG_TIMING, True))
        out["timing"] = {k: self.integer(v, f"rig timing {k}", 0, 1_000_000) for k, (_, v) in t.items()}
        out["wiring"] = {}
        for kind, (k, v) in self.mapping(m["wiring"][1], "rig wiring").items():
            self.one_of(k, "rig wiring", list(self.raw["units"]), "game unit kind")
            out["wiring"][kind] = self.wiring(v, f"rig wiring {kind}", kind, out["lines"])
        if "loopback" in m:
            out["loopback"] = self.loopback(m["loopback"][1], out["lines"], out["wiring"])
        if "switched_by" in m:
            out["switched_by"] = self.switched_by(m["switched_by"][1], out["wiring"])
        return out

    def switched_by(self, node, wiring: dict) -> dict:
        """What moves each watched signal: an event message, its field naming the line's id, level or pulse;
        every signal a reference wiring watches is moved by one."""
        events = {msg["name"]: [f["name"] for f in msg.get("fields", ())] for msg in self.raw["messages"]
                  if msg.get("class") == "event"}
        watched = sorted({w["signal"] for wires in wiring.values() for w in wires if w["signal"] != "input"})
        out = {}
        for signal, (k, v) in self.mapping(node, "rig switched_by").items():
            self.one_of(k, "rig switched_by", watched, "watched signal")
            m = self.mapping(v, f"rig switched_by {signal}", _SWITCHED_BY)
            entry = {"event": self.one_of(m["event"][1], f"rig switched_by {signal} event", list(events), "event")}
            if "field" in m:
                entry["field"] = self.one_of(m["field"][1], f"rig switched_by {signal} field", events[entry["event"]],
                                             f"field of {entry['event']}")
            if "level" in m:
                entry["level"] = self.value(m["level"][1], f"rig switched_by {signal} level", (bool,), "true or false")
            out[signal] = entry
        missing = [sig for sig in watched if sig not in out]
        if missing:
            self.fail(node, "rig switched_by", f"nothing moves the watched signal {missing[0]}")
        return out

    def loopback(self, node, lines: int, wiring: dict) -> dict:
        """The rig's own wire from a drive line to a watched line (SPEC 13.7): two lines no wiring uses."""
        m = self.mapping(node, "rig loopback", _LOOPBACK)
        out = {k: self.integer(m[k][1], f"rig loopback {k}", 0, lines - 1) for k in _LOOPBACK}
        if out["line"] == out["drive"]:
            self.fail(m["drive"][1], "rig loopback drive", "a loopback joins two lines, not one to itself")
        for k in _LOOPBACK:
            for kind, wires in wiring.items():
                if any(w["line"] == out[k] for w in wires):
                    self.fail(m[k][1], f"rig loopback {k}", f"line {out[k]} is wired to the {kind} unit")
        return out

    def wiring(self, node, where: str, kind: str, lines: int) -> list[dict]:
        enums = self.raw["enums"]
        out, used = [], set()
        for i, n in enumerate(self.seq(node, where)):
            m = self.mapping(n, f"{where}[{i}]", _WIRE)
            line = self.integer(m["line"][1], f"{where}[{i}] line", 0, lines - 1)
            if line in used:
                self.fail(m["line"][1], f"{where}[{i}] line", f"line {line} is wired twice")
            used.add(line)
            signal = self.one_of(m["signal"][1], f"{where}[{i}] signal",
                                 [s for s in enums["rig_signal"] if s not in ("none", "loopback")], "signal")
            entry = {"line": line, "signal": signal}
            here = f"{where} line {line}"
            if signal in _WIRE_ID:
                table = enums.get(f"{kind}_{_WIRE_ID[signal]}", {})
                if "id" not in m:
                    self.fail(n, here, f"a {signal} line names its {signal}", list(table))
                entry["id"] = self.one_of(m["id"][1], f"{here} id", list(table), f"{kind} {signal}")
            elif "id" in m:
                self.fail(m["id"][0], here, f"a {signal} line has no id")
            if "target" in m:
                tn = m["target"][1]
                raw = _scalar(tn) if isinstance(tn, yaml.ScalarNode) else None
                if signal == "light" and isinstance(raw, str):
                    entry["target"] = self.one_of(tn, f"{here} target", list(enums.get("side", ())), "side")
                elif signal == "light":
                    entry["target"] = self.integer(tn, f"{here} target", 0, 0xFF)
                else:
                    self.fail(m["target"][0], here, f"a {signal} line has no target")
            if "polarity" in m:
                entry["polarity"] = self.one_of(m["polarity"][1], f"{here} polarity", list(enums["rig_polarity"]),
                                                "polarity")
            out.append(entry)
        return out

    def timers(self, node, where: str, events: dict, params: list[str], field_enums: dict) -> dict:
        """timer event -> {after: [EVENT(field=value, ...)], delay: expression, frozen_by: [EVENT.field],
        when: field}: when each of the unit's timer events is due at the earliest (PR-1)."""
        def fields_of(event: str) -> dict[str, dict]:
            return {f["name"]: f for f in events[event].get("fields", ())}

        out = {}
        for name, (k, v) in self.mapping(node, where).items():
            self.one_of(k, where, list(events), "event")
            here = f"{where} {name}"
            t = self.mapping(v, here, _TIMER)
            after_node = t["after"][1]
            items = self.seq(after_node, f"{here} after") if isinstance(after_node, yaml.SequenceNode) else [after_node]
            after, named = [], {name}
            for n in items:
                text = self.text(n, f"{here} after")
                try:
                    event, pairs = parse_filter(text)
                except ValueError as exc:
                    self.fail(n, f"{here} after", str(exc))
                if event not in events:
                    self.fail(n, f"{here} after", f"unknown event {event!r} (or not one of this unit's)", list(events))
                fields = fields_of(event)
                for field, value in pairs:
                    if field not in fields:
                        self.fail(n, f"{here} after {event}", f"unknown field {field!r}", list(fields))
                    enum = field_enums.get(event, {}).get(field) or fields[field].get("enum")
                    if enum is not None and value not in self.raw["enums"][enum]:
                        self.fail(n, f"{here} after {event}.{field}", f"unknown {enum} {value!r}",
                                  list(self.raw["enums"][enum]))
                    if enum is None and not value.isdigit():
                        self.fail(n, f"{here} after {event}.{field}", f"{value!r} is not an integer")
                after.append(text)
                named.add(event)
            raw = self.value(t["delay"][1], f"{here} delay", (int, str), "an expression")
            try:
                tree = expr.parse(str(raw))
            except expr.ExprError as exc:
                self.fail(t["delay"][1], f"{here} delay", str(exc))
            for word in sorted(expr.names(tree)):
                owners = [e for e in sorted(named) if word in fields_of(e)] + (["parameters"] if word in params else [])
                if not owners:
                    self.fail(t["delay"][1], f"{here} delay", f"{word!r} is neither a parameter nor a field of "
                                                             f"{', '.join(sorted(named))}")
                if len(owners) > 1:
                    self.fail(t["delay"][1], f"{here} delay", f"{word!r} is ambiguous: {', '.join(owners)}")
            entry = {"after": after if isinstance(after_node, yaml.SequenceNode) else after[0], "delay": raw}
            if "frozen_by" in t:
                entry["frozen_by"] = []
                for n in self.seq(t["frozen_by"][1], f"{here} frozen_by"):
                    event, dot, field = self.text(n, f"{here} frozen_by").partition(".")
                    if event not in events or field not in fields_of(event):
                        self.fail(n, f"{here} frozen_by", f"{event}{dot}{field!r} is not EVENT.field of this unit")
                    entry["frozen_by"].append(f"{event}.{field}")
            if "when" in t:
                entry["when"] = self.one_of(t["when"][1], f"{here} when", list(fields_of(name)), "field")
            out[name] = entry
        return out

    def switches(self, node, where: str, kind: str) -> dict:
        """input -> {position: [action, value]}: the edge that puts the switch in each position."""
        where = f"{where} switches"
        out = {}
        for name, (k, v) in self.mapping(node, where).items():
            self.one_of(k, where, list(self.raw["enums"][f"{kind}_input"]), "input")
            positions = {}
            for pos, (pk, pv) in self.mapping(v, f"{where}.{name}").items():
                self.name(pk, f"{where}.{name}")
                items = self.seq(pv, f"{where}.{name}.{pos}")
                if len(items) != 2:
                    self.fail(pv, f"{where}.{name}.{pos}", f"must be [action, value], not {len(items)} item(s)")
                action = self.one_of(items[0], f"{where}.{name}.{pos}", list(self.raw["enums"].get("action", ())),
                                     "action")
                positions[pos] = [action, self.integer(items[1], f"{where}.{name}.{pos}", 0, 0xFF)]
            if len(positions) < 2:
                self.fail(v, f"{where}.{name}", "a switch has two positions or more")
            out[name] = positions
        return out

    def latest(self, node, where: str, unit: dict, events: list[str], params: list[str]) -> dict:
        """event -> an expression over the unit's parameters: the longest the event can take after the last input."""
        where = f"{where} latest_after_input"
        defaults = {p["name"]: p["default"] for p in self.raw["params"]}
        out = {}
        for name, (k, v) in self.mapping(node, where).items():
            self.one_of(k, where, events, "event")
            raw = self.value(v, f"{where} {name}", (int, str), "an expression over parameters")
            text = str(raw)
            try:
                tree = expr.parse(text)
            except expr.ExprError as exc:
                self.fail(v, f"{where} {name}", str(exc))
            for p in sorted(expr.names(tree)):
                if p not in params:
                    self.fail(v, f"{where} {name}", f"unknown parameter {p!r}", params)
            if expr.evaluate(tree, defaults) < 0:
                self.fail(v, f"{where} {name}", "is negative at the parameters' defaults")
            out[name] = raw
        needed = [unit["verdict"]] + [e for e in unit["anchors"].values() if e != unit["verdict"]]
        missing = [e for e in dict.fromkeys(needed) if e not in out]
        if missing:
            self.fail(node, where, f"has no bound for {', '.join(missing)} (every anchor's event and the verdict "
                                   f"need one: a host waits for them)")
        return out

    def roles(self, node, where: str, events: dict, inputs: list[str]) -> dict:
        """Where a unit reports its players and whose turn it is, and which fields name a button."""
        m = self.mapping(node, where, _ROLES)
        spoken = events

        def field(n, key: str, types: tuple[str, ...]) -> str:
            text = self.text(n, f"{where} {key}")
            message, _, name = text.partition(".")
            if message not in spoken:
                self.fail(n, f"{where} {key}", f"unknown event {message!r} (or not one of this unit's)", list(spoken))
            fields = {f["name"]: f for f in spoken[message].get("fields", ())}
            if name not in fields or fields[name]["type"] not in types or fields[name].get("count", 1) != 1:
                self.fail(n, f"{where} {key}", f"{text!r} is not a {' or '.join(types)} field of {message}",
                          [f for f, d in fields.items() if d["type"] in types])
            return text

        out = {"players": field(m["players"][1], "players", ("u8",)),
               "current": field(m["current"][1], "current", ("u8",)),
               "started_by": self.one_of(m["started_by"][1], f"{where} started_by", inputs, "input"),
               "buttons": self.names(m["buttons"][1], f"{where} buttons", inputs, "input")}
        for key in ("player_fields", "mask_fields"):
            out[key] = [field(n, key, ("u8",)) for n in self.seq(m[key][1], f"{where} {key}")]
        if out["current"] not in out["player_fields"] or out["players"] not in out["mask_fields"]:
            self.fail(node, where, "the current player's field is a player field, the players' one a mask field")
        return out

    def situations(self, node, where: str, kind: str, params: list[str]) -> dict:
        where = f"{where} situations"
        m = self.mapping(node, where, dict.fromkeys(SITUATIONS, True))
        out = {}
        for key in ("report", "stimulus"):
            out[key] = self.stimulus(m[key][1], f"{where}.{key}", kind)
        for key in ("refused", "refused_value", "busy"):
            n = m[key][1]
            if isinstance(n, yaml.ScalarNode) and _scalar(n) is None:
                out[key] = None
                continue
            seq = self.seq(n, f"{where}.{key}")
            if not seq:
                self.fail(n, f"{where}.{key}", "an empty list (write null when the unit has no such situation)")
            out[key] = [self.stimulus(s, f"{where}.{key}", kind) for s in seq]
        events = [m["name"] for m in self.raw["messages"] if m["class"] == "event" and kind in m.get("units", ())]
        out["reset_busy"] = [self.one_of(n, f"{where}.reset_busy", events, "event of this unit")
                             for n in self.seq(m["reset_busy"][1], f"{where}.reset_busy")]
        out["busy_config"] = {}
        limits = {p["name"]: p for p in self.raw["params"]}
        for name, (k, v) in self.mapping(m["busy_config"][1], f"{where}.busy_config").items():
            if name not in params:
                self.fail(k, f"{where}.busy_config", f"unknown parameter {name!r}", params)
            out["busy_config"][name] = self.integer(v, f"{where}.busy_config {name}",
                                                    limits[name]["min"], limits[name]["max"])
        return out

    def stimulus(self, node, where: str, kind: str) -> list:
        items = self.seq(node, where)
        if len(items) != 3:
            self.fail(node, where, f"must be [input, action, value], not {len(items)} item(s)")
        inp = self.one_of(items[0], where, list(self.raw["enums"][f"{kind}_input"]), "input")
        action = self.one_of(items[1], where, list(self.raw["enums"].get("action", ())), "action")
        return [inp, action, self.integer(items[2], where, 0, 0xFF)]

    # ---- the decision index (decisions.yaml) ----

    def decisions(self, root, units: dict[str, str | tuple[str, ...]]) -> dict[str, list[dict]]:
        if root is None:
            self.fail(None, "decisions", "the file is empty")
        out: dict[str, list[dict]] = {}
        prefixes: dict[str, str] = {}
        for kind, (k, v) in self.mapping(root, "decisions", dict.fromkeys(units, False)).items():
            where = f"decisions of {kind}"
            out[kind] = []
            for n in self.seq(v, where):
                m = self.mapping(n, where, _DECISION)
                did = self.text(m["id"][1], f"{where} id")
                match = _DECISION_ID.match(did)
                if not match:
                    self.fail(m["id"][1], f"{where} id", f"{did!r} is not a decision id (two capitals, '-', a number)")
                prefix, number = match.group(1), int(match.group(2))
                owner = prefixes.setdefault(prefix, kind)
                if owner != kind:
                    self.fail(m["id"][1], f"{where} id", f"prefix {prefix} is the {owner} unit's")
                mine = out[kind][0]["id"].split("-")[0] if out[kind] else prefix
                if prefix != mine:
                    self.fail(m["id"][1], f"{where} id", f"{did}: the {kind} unit's decisions are {mine}-n")
                if number != len(out[kind]) + 1:
                    self.fail(m["id"][1], f"{where} id", f"{did} out of order: expected {mine}-{len(out[kind]) + 1}")
                section = self.text(m["section"][1], f"{did} section")
                mine_sections = (units[kind],) if isinstance(units[kind], str) else units[kind]
                if not any(section == s or section.startswith(s + ".") for s in mine_sections):
                    self.fail(m["section"][1], f"{did} section",
                              f"{section!r} is not in the {kind} unit's SPEC section {_join(mine_sections)}")
                line = self.text(m["text"][1], f"{did} text").strip()
                if not line or "\n" in line:
                    self.fail(m["text"][1], f"{did} text", "must be one line, not empty")
                entry = {"id": did, "section": section, "text": line}
                if "units" in m:
                    # a protocol-level decision that only some kinds can show (their fields, their capabilities)
                    kinds = [u for u in units if isinstance(units[u], str)]
                    if isinstance(units[kind], str):
                        self.fail(m["units"][1], f"{did} units", "only a protocol-level decision names its unit kinds")
                    entry["units"] = self.names(m["units"][1], f"{did} units", kinds, "unit kind")
                out[kind].append(entry)
        return out
