"""The units section of messages.yaml, one game unit kind at a time: what it reports and when (its verdict,
anchors, time fields, timers), its situations, switches and roles, each checked against the catalogue's
enums, parameters and events read before it."""
from __future__ import annotations

import yaml

from . import expr
from .rules import CrossRule, parse_filter
from .schema_nodes import NodeReader, _scalar

SITUATIONS = ("report", "stimulus", "refused", "refused_value", "busy_config", "busy", "reset_busy")
_UNIT = {"title": True, "section": True, "verdict": True, "outcome_field": True, "power_on_state": True,
         "capabilities": True, "enums": False, "anchors": True, "time_fields": True, "cross_rules": False,
         "field_enums": True, "situations": True, "switches": False, "latest_after_input": True,
         "variants": False, "valued_inputs": False,
         "scheduled_times": False, "optional_times": False, "roles": False, "timers": False,
         "drawn_times": False, "fresh_states": False, "card_capacity": False}
_TIMER = {"after": True, "delay": True, "frozen_by": False, "when": False}
_ROLES = {"players": True, "current": True, "started_by": True, "buttons": True, "player_fields": True,
          "mask_fields": True}


class UnitSection(NodeReader):
    """units: in messages.yaml; self.raw holds the sections read before (enums, params, messages)."""

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
        self.unit_times(m, where, kind, events, out)
        if "roles" in m:
            out["roles"] = self.roles(m["roles"][1], f"{where} roles", events, list(self.raw["enums"][f"{kind}_input"]))
        out["cross_rules"] = self.cross_rules(m, where, params)
        out["field_enums"] = self.field_enums(m, where, spoken)
        out["situations"] = self.situations(m["situations"][1], where, kind, params)
        if "timers" in m:
            out["timers"] = self.timers(m["timers"][1], f"{where} timers", events, params, out["field_enums"])
        return out

    def unit_times(self, m: dict, where: str, kind: str, events: dict, out: dict) -> None:
        """Into out: which time field each event schedules, the states a fresh race starts in, the events whose
        times are drawn, and the verdict's optional times."""
        enums = self.raw["enums"]
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

    def cross_rules(self, m: dict, where: str, params: list[str]) -> list[str]:
        """The rules between the unit's parameters (a CONFIG_SET breaking one is refused), as written."""
        out = []
        for n in self.seq(m["cross_rules"][1], f"{where} cross_rules") if "cross_rules" in m else ():
            text = self.text(n, f"{where} cross_rules")
            try:
                rule = CrossRule.parse(text)
            except ValueError as exc:
                self.fail(n, f"{where} cross_rules", str(exc))
            for p in rule.params:
                if p not in params:
                    self.fail(n, f"{where} cross_rules", f"unknown parameter {p!r}", params)
            out.append(text)
        return out

    def field_enums(self, m: dict, where: str, spoken: dict) -> dict[str, dict[str, str]]:
        """message -> field -> the enum its values name, for the messages this unit speaks."""
        out: dict[str, dict[str, str]] = {}
        for message, (k, v) in self.mapping(m["field_enums"][1], f"{where} field_enums").items():
            if message not in spoken:
                self.fail(k, f"{where} field_enums", f"unknown message {message!r} (or not one of this unit's)",
                          list(spoken))
            fields = [f["name"] for f in spoken[message].get("fields", ())]
            out[message] = {}
            for field, (fk, fv) in self.mapping(v, f"{where} field_enums {message}").items():
                if field not in fields:
                    self.fail(fk, f"{where} field_enums {message}", f"unknown field {field!r}", fields)
                out[message][field] = self.one_of(fv, f"{where} field_enums {message}.{field}",
                                                  sorted(self.enum_names), "enum")
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
