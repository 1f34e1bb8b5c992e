"""The rig section of messages.yaml (SPEC 13): the stimulus-and-capture rig's lines, timing, its wiring to
each game unit, its loopback and what moves each watched signal."""
from __future__ import annotations

import yaml

from .schema_nodes import NodeReader, _scalar

_RIG = {"kind": True, "title": True, "section": True, "lines": True, "power_on_state": True, "capabilities": True,
        "timing": True, "wiring": True, "loopback": False, "switched_by": False}
_SWITCHED_BY = {"event": True, "field": False, "level": False}
RIG_TIMING = ("resolution_us", "drive_error_us", "capture_error_us", "line_skew_us", "fairness_bound_us")
_WIRE = {"line": True, "signal": True, "id": False, "target": False, "polarity": False}
_LOOPBACK = {"line": True, "drive": True}
# signal -> the unit enum its id names (by suffix) and whether a target names a side / a value
_WIRE_ID = {"input": "input", "light": "light", "sound": "sound"}


class RigSection(NodeReader):
    """rig: in messages.yaml, read after the units (its wiring names them)."""

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
