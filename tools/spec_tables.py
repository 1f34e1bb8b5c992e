"""The tables of protocol/SPEC.md, generated from the catalogue (messages.yaml).

SPEC.md holds regions delimited by

    <!-- BEGIN GENERATED: name -->
    ...
    <!-- END GENERATED: name -->

whose content is exactly what this module produces for `name`. Everything a table says
about a message, a field, a parameter or an enum comes from the catalogue, and the decision
index (section 12) from decisions.yaml; nothing is typed twice.

    python -m tools.spec_tables            print every region
    python -m tools.spec_tables --write    rewrite the regions in SPEC.md
    python -m tools.spec_tables --check    exit 1 (with a diff) if SPEC.md has drifted
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

from unohil.protocol import catalogue as cat
from unohil.protocol.codec import encode_raw
from unohil.protocol.framing import cobs_encode, crc16

SPEC_PATH = Path(__file__).resolve().parent.parent / "protocol" / "SPEC.md"

_REGION_RE = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)",
    re.S,
)

_DIRECTION = {"command": "host → device", "reply": "device → host", "event": "device → host"}

#: NAK error codes: when a device answers with each, and what NAK.detail then holds. The code
#: numbers come from the catalogue's `error` enum; a test fails when an error lacks its text here.
ERROR_TEXT: dict[str, tuple[str, str]] = {
    "bad_crc": ("A frame failed its CRC. Its seq and type cannot be trusted: unattributed NAK "
                "(cmd_seq 0xFFFF, cmd_type 0xFF).", "0"),
    "unknown_type": ("CRC good, but the type is not a command of this protocol version (an unknown "
                     "id, or a reply or event id sent to a device).", "0"),
    "bad_length": ("CRC good, known command, but the payload length is not the catalogue's "
                   "(longer payloads are accepted only from a newer minor version).", "0"),
    "bad_value": ("A field is out of range: an input id or action the unit does not have, a "
                  "parameter value outside [min, max] or breaking a cross-parameter rule, an unknown "
                  "RESET mode, an input value the unit refuses (for example 0 cards).", "0"),
    "wrong_state": ("The command or input is not allowed in the unit's current state (CONFIG_SET "
                    "outside the idle states, TIMER with an empty tray, ...).", "the unit's state"),
    "busy": ("The device cannot take the command now (for example its transmit queue is full); "
             "the host may retry later. The reference emulator never sends it.", "0"),
    "unsupported": ("The command needs a capability the device does not have (INJECT without "
                    "test_mode, INPUT without host_input, ...).", "0"),
    "bad_version": ("The frame's major version, or HELLO.host_major, is not the device's.",
                    "the device's major version"),
    "too_late": ("INJECT.at_us is not strictly after the device time at which the INJECT frame "
                 "completed (wrap-aware; see Test mode).", "0"),
    "frame_too_long": ("More than 63 encoded bytes arrived without a delimiter. Unattributed "
                       "(cmd_seq 0xFFFF, cmd_type 0xFF).", "0"),
    "queue_full": ("INJECT while inject_queue stimuli are already pending.", "0"),
    "unknown_param": ("CONFIG_GET or CONFIG_SET of a parameter id this unit kind does not have.", "0"),
}


# ---- helpers ----------------------------------------------------------------------------------------

def _hex(n: int, width: int = 2) -> str:
    return f"0x{n:0{width}X}"


def _hexbytes(b: bytes) -> str:
    return " ".join(f"{x:02X}" for x in b)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(_cell(c) for c in r) + " |")
    return "\n".join(out)


def _raw_message(name: str) -> dict:
    for m in cat.RAW["messages"]:
        if m["name"] == name:
            return m
    raise KeyError(name)


def _field_docs(name: str) -> dict[str, str]:
    return {f["name"]: f.get("doc", "") for f in _raw_message(name).get("fields", ())}


def _unit(unit: str) -> str:
    return {"us": "µs", "": "-"}.get(unit, unit)


def _type_text(f: cat.FieldDef) -> str:
    return f"{f.type}[{f.count}]" if f.count > 1 else f.type


def _enum_ref(enum: str) -> str:
    if enum == "param":
        return "parameter id"
    return f"enum `{enum}`"


def _unit_of_enum(enum: str) -> str | None:
    for unit in cat.UNITS.values():
        if enum in unit.enums:
            return unit.kind
    if enum in rig_enums():
        return cat.RIG.kind
    return None


def common_enums() -> list[str]:
    return [e for e in cat.ENUM_VALUES if _unit_of_enum(e) is None and e != "error"]


def rig_enums() -> list[str]:
    return [e for e in cat.ENUM_VALUES if e.startswith(cat.RIG.kind + "_")]


def unit_enums(unit: str) -> list[str]:
    return list(cat.UNITS[unit].enums)


def frame_size(m: cat.MessageDef) -> int:
    return cat.HEADER_SIZE + m.size + cat.CRC_SIZE


def max_wire_size(m: cat.MessageDef) -> int:
    """Largest encoded size of the message's frame, delimiter included: COBS adds one byte per
    254 (a frame is at most 62 bytes, so exactly one), then the delimiter."""
    n = frame_size(m)
    return n + (n + 253) // 254 + 1


# ---- regions -----------------------------------------------------------------------------------------

def region_constants() -> str:
    rows = [
        ["protocol version", f"{cat.MAJOR}.{cat.MINOR}", "header `version` byte = major << 4 | minor"],
        ["version byte", _hex(cat.VERSION_BYTE), ""],
        ["header size", cat.HEADER_SIZE, "bytes: version u8, type u8, seq u16, time_us u32"],
        ["CRC size", cat.CRC_SIZE, "bytes, CRC-16/CCITT-FALSE, little-endian"],
        ["max decoded frame", cat.MAX_FRAME, "bytes: header + payload + CRC"],
        ["max payload", cat.MAX_PAYLOAD, "bytes"],
        ["max encoded frame", cat.MAX_ENCODED, f"bytes: {cat.MAX_ENCODED - 1} COBS bytes + the 0x00 delimiter"],
        ["event buffer", cat.EVENT_BUFFER, "events a device keeps for EVENT_RESEND (at least)"],
        ["inject queue", cat.INJECT_QUEUE, "pending INJECT stimuli a device accepts"],
        ["RNG_STREAM", _hex(cat.RNG_STREAM, 8), "stream selector of the reference generator (section 6)"],
        ["NONE_U8", "0xFF", "u8 sentinel: none / not applicable"],
        ["NONE_U16", "0xFFFF", "u16 sentinel"],
        ["NONE_U32", "0xFFFFFFFF", "u32 sentinel (a device time that never happened)"],
        ["NONE_I32", "0x7FFFFFFF", "i32 sentinel (2147483647)"],
        ["CATALOG_CRC", _hex(cat.CATALOG_CRC, 4), "IDENTITY.catalog_crc of protocol 1.0 (section 4.2)"],
    ]
    return _table(["constant", "value", "notes"], rows)


def region_index() -> str:
    rows = []
    for m in cat.MESSAGES:
        units = ", ".join(m.units) if m.units else "all"
        rows.append([_hex(m.id), f"[{m.name}](#{_anchor(m)})", m.kind, _DIRECTION[m.kind], m.reply or "",
                     m.size, frame_size(m), max_wire_size(m), units])
    return _table(["id", "message", "class", "direction", "reply", "payload", "frame", "max wire", "units"], rows)


def _anchor(m: cat.MessageDef) -> str:
    # GitHub-style anchor of the heading "#### 0x01 HELLO"
    return f"0x{m.id:02x}-{m.name.lower()}"


def region_errors() -> str:
    rows = []
    for name, code in cat.ENUM_VALUES["error"].items():
        when, detail = ERROR_TEXT[name]
        rows.append([code, f"`{name}`", when, detail])
    return _table(["code", "error", "sent when", "NAK.detail"], rows)


def region_params() -> str:
    rows = []
    for p in cat.PARAMS:
        rows.append([_hex(p.id), f"`{p.name}`", ", ".join(p.units), p.min, p.max, p.default, _unit(p.unit), p.doc])
    return _table(["id", "parameter", "unit kinds", "min", "max", "default", "unit", "meaning"], rows)


def _enum_table(name: str) -> str:
    values = cat.ENUM_VALUES[name]
    if name == "capability":
        rows = [[v, _hex(1 << v, 4), f"`{k}`"] for k, v in values.items()]
        return f"**`{name}`** (bit numbers of IDENTITY.caps)\n\n" + _table(["bit", "mask", "name"], rows)
    rows = [[v, f"`{k}`"] for k, v in values.items()]
    return f"**`{name}`**\n\n" + _table(["value", "name"], rows)


def region_enums_common() -> str:
    return "\n\n".join(_enum_table(e) for e in common_enums())


def _unit_region(unit: str) -> str:
    parts = [_enum_table(e) for e in unit_enums(unit)]
    title = cat.UNITS[unit].title
    events = [m for m in cat.MESSAGES if m.kind == "event" and unit in m.units and len(m.units) == 1]
    parts.append(f"**Events of the {title}** (besides the common BOOT, INPUT_SEEN, LIGHT, SOUND, STATE)\n\n"
                 + _table(["id", "event", "payload"],
                          [[_hex(m.id), f"[{m.name}](#{_anchor(m)})", m.size] for m in events]))
    params = cat.params_for(unit)
    parts.append(f"**Parameters of the {title}**\n\n"
                 + _table(["id", "parameter", "min", "max", "default", "unit"],
                          [[_hex(p.id), f"`{p.name}`", p.min, p.max, p.default, _unit(p.unit)] for p in params]))
    return "\n\n".join(parts)


_TIMING_TEXT = {
    "resolution_us": "tick of the rig's clock, for RIG_EDGE.at_us and every RIG_CAPTURE time",
    "drive_error_us": "a driven line changes within this of RIG_EDGE.at_us",
    "capture_error_us": "a watched edge is stamped within this of the moment the line crossed its threshold",
    "line_skew_us": "two lines driven at the same at_us change within this of each other",
    "fairness_bound_us": "the side skew a unit may show from outside (13.6), 95% interval included",
}


def _actuated(unit: str) -> set[str]:
    u = cat.UNITS[unit]
    return set(u.valued_inputs) | set(u.switches)


def _wire_text(unit: str, w: cat.WireDef) -> list:
    if w.signal == "input":
        what = f"drives input `{w.name}`" + (", actuated (13.2)" if w.name in _actuated(unit) else "")
    elif w.signal == "light":
        side = cat.enum_name("side", w.target) if unit == "showdown" else str(w.target)
        what = f"watches light `{w.name}`" + ("" if w.target == cat.NONE_U8 else f", target {side}")
    elif w.signal == "sound":
        what = f"watches sound `{w.name}`"
    elif w.signal == "loopback":
        what = f"watches the rig's own drive line {w.id} (the loopback, 13.7)"
    else:
        what = {"launch": "watches the launch solenoid", "card": "watches the card-exit sensor"}[w.signal]
    return [w.line, f"`{w.signal}`", w.id, w.target, f"`{w.polarity}`", what]


def region_rig() -> str:
    rig = cat.RIG
    parts = [_enum_table(e) for e in rig_enums()]
    mine = [m for m in cat.MESSAGES if m.capability == "rig_lines" or m.units == (rig.kind,)]
    parts.append(f"**Messages of the {rig.title}** (besides HELLO, TIME_SYNC, STATUS_GET, EVENT_RESEND, "
                 "INJECT_CANCEL, RESET and BOOT)\n\n"
                 + _table(["id", "message", "class", "payload"],
                          [[_hex(m.id), f"[{m.name}](#{_anchor(m)})", m.kind, m.size] for m in mine]))
    parts.append(f"**Facts of the {rig.title}**\n\n" + _table(["fact", "value"], [
        ["IDENTITY.kind", f"{cat.ENUM_VALUES['unit_kind'][rig.kind]} (`{rig.kind}`)"],
        ["lines", f"{rig.lines} (0 .. {rig.lines - 1})"],
        ["capabilities", ", ".join(f"`{c}`" for c in rig.capabilities)],
        ["STATUS.state at boot", f"`{rig.power_on_state}`"],
        *([["loopback (13.7)", f"drive line {rig.loopback.id} wired to watched line {rig.loopback.line}"]]
          if rig.loopback else []),
    ]))
    parts.append("**Timing a rig must achieve**\n\n" + _table(
        ["requirement", "µs", "meaning"], [[f"`{k}`", v, _TIMING_TEXT[k]] for k, v in rig.timing.items()]))
    for unit, wires in rig.wiring.items():
        parts.append(f"**Reference wiring of the {cat.UNITS[unit].title}**\n\n" + _table(
            ["line", "signal", "id", "target", "polarity", "what it is"], [_wire_text(unit, w) for w in wires]))
    return "\n\n".join(parts)


def region_messages() -> str:
    out = []
    for m in cat.MESSAGES:
        docs = _field_docs(m.name)
        head = f"#### 0x{m.id:02X} {m.name}"
        facts = [f"class **{m.kind}**", _DIRECTION[m.kind], f"payload {m.size} bytes",
                 f"frame {frame_size(m)} bytes", f"at most {max_wire_size(m)} bytes on the wire"]
        if m.reply:
            facts.append(f"reply **{m.reply}**")
        if m.units:
            facts.append("units: " + ", ".join(m.units))
        block = [head, "", "; ".join(facts) + ".", ""]
        if m.doc:
            block += [m.doc, ""]
        if m.fields:
            rows = []
            off = 0
            for f in m.fields:
                notes = []
                if f.enum:
                    notes.append(_enum_ref(f.enum))
                if docs.get(f.name):
                    notes.append(docs[f.name])
                rows.append([off, cat.HEADER_SIZE + off, f"`{f.name}`", _type_text(f), f.size, "; ".join(notes)])
                off += f.size
            block.append(_table(["offset", "frame offset", "field", "type", "size", "notes"], rows))
        else:
            block.append("No payload.")
        out.append("\n".join(block))
    return "\n\n".join(out)


def worked_example() -> tuple:
    """The frame of the worked example: HELLO(1, 0), seq 1, time_us 0."""
    m = cat.BY_NAME["HELLO"].cls(host_major=1, host_minor=0)
    return m, 1, 0


def region_worked_example() -> str:
    m, seq, t = worked_example()
    raw = encode_raw(m, seq, t)
    body, crc_bytes = raw[:-2], raw[-2:]
    crc = crc16(body)
    enc = cobs_encode(raw)
    meaning = ["version 0x10 = protocol 1.0", f"type 0x{m.ID:02X} = {m.NAME}", "seq, low byte", "seq, high byte",
               "time_us, byte 0 (least significant)", "time_us, byte 1", "time_us, byte 2", "time_us, byte 3",
               "host_major = 1", "host_minor = 0", "CRC, low byte", "CRC, high byte"]
    rows = [[i, f"{b:02X}", meaning[i]] for i, b in enumerate(raw)]
    # COBS groups
    groups = []
    i = 0
    while i < len(enc):
        code = enc[i]
        data = enc[i + 1:i + code]
        groups.append((code, data))
        i += code
    grow = []
    for code, data in groups:
        zero = "then a 0x00" if code < 0xFF else "no 0x00 follows (a full group)"
        grow.append([f"{code:02X}", _hexbytes(data) or "(none)", f"{code - 1} data byte(s), {zero}"])
    grow[-1][2] = f"{groups[-1][0] - 1} data byte(s); last group, no 0x00 follows"
    lines = [
        f"Frame: `HELLO(host_major=1, host_minor=0)`, seq {seq}, time_us {t} (a host puts any value in time_us;",
        "the reference host sends 0).",
        "",
        "Step 1, header + payload + CRC (the decoded frame, "
        f"{len(raw)} bytes):",
        "",
        _table(["offset", "byte", "meaning"], rows),
        "",
        f"Step 2, CRC: CRC-16/CCITT-FALSE over bytes 0..{len(body) - 1} (`{_hexbytes(body)}`) = "
        f"0x{crc:04X}, appended little-endian as `{_hexbytes(crc_bytes)}`.",
        "",
        f"Step 3, COBS: the {len(raw)} decoded bytes contain {raw.count(0)} zero bytes; COBS replaces each by "
        "the distance to the next one, in code bytes:",
        "",
        _table(["code", "data", "meaning"], grow),
        "",
        f"Step 4, delimiter: the wire bytes, {len(enc) + 1} in all:",
        "",
        "```",
        _hexbytes(enc + b"\x00"),
        "```",
        "",
        "A receiver reverses the steps: split at 0x00, COBS-decode, check the length (10..62), check the CRC "
        "over all but the last two bytes, then read the header and the payload.",
    ]
    return "\n".join(lines)


def region_decisions() -> str:
    rows = [[d.id, d.text, d.section] for d in cat.DECISIONS.values()]
    return _table(["id", "decision", "decided in"], rows)


REGIONS = {
    "constants": region_constants,
    "index": region_index,
    "errors": region_errors,
    "params": region_params,
    "enums-common": region_enums_common,
    "messages": region_messages,
    "unit-showdown": lambda: _unit_region("showdown"),
    "unit-flash": lambda: _unit_region("flash"),
    "unit-launcher": lambda: _unit_region("launcher"),
    "rig": region_rig,
    "worked-example": region_worked_example,
    "decisions": region_decisions,
}


def generate(name: str) -> str:
    return REGIONS[name]().rstrip("\n") + "\n"


# ---- SPEC.md -----------------------------------------------------------------------------------------

def regions_in(text: str) -> dict[str, str]:
    return {m.group("name"): m.group("body") for m in _REGION_RE.finditer(text)}


def render(text: str) -> str:
    """text with every generated region replaced by fresh output. Unknown region names are an error."""
    def sub(m: re.Match) -> str:
        name = m.group("name")
        if name not in REGIONS:
            raise KeyError(f"SPEC.md: unknown generated region {name!r}; known: {', '.join(REGIONS)}")
        return m.group(1) + "\n" + generate(name) + "\n" + m.group(4)
    return _REGION_RE.sub(sub, text)


def check(path: Path = SPEC_PATH) -> list[str]:
    """Problems with SPEC.md's generated regions; empty when it is up to date."""
    text = path.read_text(encoding="utf-8")
    found = regions_in(text)
    problems = [f"region {n!r} is missing from {path.name}" for n in REGIONS if n not in found]
    fresh = render(text)
    if fresh != text:
        diff = difflib.unified_diff(text.splitlines(), fresh.splitlines(), f"{path.name} (on disk)",
                                    f"{path.name} (from the catalogue)", lineterm="", n=1)
        problems.append("generated regions differ from the catalogue:\n" + "\n".join(diff))
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.spec_tables", description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the generated regions of SPEC.md")
    g.add_argument("--check", action="store_true", help="exit 1 if SPEC.md's generated regions are stale")
    ap.add_argument("--spec", type=Path, default=SPEC_PATH, help="path of SPEC.md")
    args = ap.parse_args(argv)
    if args.write:
        text = args.spec.read_text(encoding="utf-8")
        fresh = render(text)
        missing = [n for n in REGIONS if n not in regions_in(text)]
        if fresh != text:
            args.spec.write_text(fresh, encoding="utf-8")
            print(f"{args.spec}: generated regions rewritten")
        else:
            print(f"{args.spec}: up to date")
        for n in missing:
            print(f"{args.spec}: warning: no region {n!r} (add <!-- BEGIN GENERATED: {n} --> "
                  f"<!-- END GENERATED: {n} -->)", file=sys.stderr)
        return 0
    if args.check:
        problems = check(args.spec)
        for p in problems:
            print(f"{args.spec}: {p}", file=sys.stderr)
        if problems:
            print("run: python -m tools.spec_tables --write", file=sys.stderr)
            return 1
        print(f"{args.spec}: up to date")
        return 0
    for name in REGIONS:
        print(f"<!-- {name} -->\n{generate(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
