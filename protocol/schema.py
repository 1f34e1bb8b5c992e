"""What a valid messages.yaml is: its text checked node by node, into plain data or a CatalogueError at file:line:col.

Every key is checked against the keys its place allows, every value against its type, and every
name one entry gives (an enum, a message, a parameter, an input) against the entries that define
it, so a typo fails at import with the line to fix instead of vanishing or failing far away.
"""
from __future__ import annotations

import re

from .fieldtypes import TYPES
from .schema_nodes import CatalogueError, NodeReader, _compose, _join, _label
from .schema_rig import RigSection
from .schema_units import UnitSection

__all__ = ["CatalogueError", "ID_RANGES", "load_catalogue", "load_decisions"]

_SIZES = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "i8": 1, "i16": 2, "i32": 4}
#: type ids by message class (SPEC 4.1)
ID_RANGES = {"command": (0x01, 0x3F), "reply": (0x40, 0x5F), "event": (0x60, 0xBF)}
_ARTICLE = {"command": "a command", "reply": "a reply", "event": "an event"}

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


def load_catalogue(text: str, file: str = "messages.yaml") -> dict:
    """The catalogue in text as plain data (what yaml.safe_load gives), once every rule holds."""
    return _Reader(file).catalogue(_compose(text, file))


def load_decisions(text: str, units: dict[str, str], file: str = "decisions.yaml") -> dict[str, list[dict]]:
    """The decision index (decisions.yaml) as plain data, unit kind -> its decisions, once every rule holds;
    units maps each unit kind to its SPEC section (from the catalogue's units)."""
    return _Reader(file).decisions(_compose(text, file), units)


class _Reader(UnitSection, RigSection, NodeReader):
    """messages.yaml by section (the protocol, enums, params, messages here; units and the rig in their own
    modules) and decisions.yaml."""

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
