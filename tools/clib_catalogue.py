"""clib/uhil_catalogue.{h,c}: constants, enums, capability bits, parameters, message ids and payload sizes,
from protocol/messages.yaml (through protocol/catalogue.py): the header's declarations and the source's tables."""
from __future__ import annotations

from unohil.protocol import catalogue as cat
from tools.clib_c import c_name, enum_block, guard, source


def catalogue_files() -> dict[str, str]:
    return {"uhil_catalogue.h": _catalogue_header(), "uhil_catalogue.c": _catalogue_source()}


def _catalogue_header() -> str:
    """uhil_catalogue.h: the constants, enums and capability bits, the parameter ids, the message ids and sizes."""
    p = cat.PROTOCOL
    consts = [
        ("UHIL_PROTO_MAJOR", f"{cat.MAJOR}u", "protocol version"),
        ("UHIL_PROTO_MINOR", f"{cat.MINOR}u", ""),
        ("UHIL_VERSION_BYTE", f"0x{cat.VERSION_BYTE:02X}u", "header version byte: major << 4 | minor"),
        ("UHIL_HEADER_SIZE", f"{cat.HEADER_SIZE}u", "version u8, type u8, seq u16, time_us u32"),
        ("UHIL_CRC_SIZE", f"{cat.CRC_SIZE}u", "CRC-16/CCITT-FALSE, little-endian"),
        ("UHIL_MAX_FRAME", f"{cat.MAX_FRAME}u", "decoded bytes: header + payload + CRC"),
        ("UHIL_MAX_PAYLOAD", f"{cat.MAX_PAYLOAD}u", ""),
        ("UHIL_MAX_ENCODED", f"{cat.MAX_ENCODED}u", "COBS bytes + the 0x00 delimiter: one USB full-speed packet"),
        ("UHIL_EVENT_BUFFER", f"{cat.EVENT_BUFFER}u", "events a device keeps for EVENT_RESEND (at least)"),
        ("UHIL_INJECT_QUEUE", f"{cat.INJECT_QUEUE}u", "pending INJECT stimuli a device accepts"),
        ("UHIL_RNG_STREAM", f"0x{cat.RNG_STREAM:08X}u", "stream selector of the reference generator"),
        ("UHIL_CATALOG_CRC", f"0x{cat.CATALOG_CRC:04X}u", "IDENTITY.catalog_crc of this catalogue"),
        ("UHIL_NONE_U8", "0xFFu", "sentinels: none / never"),
        ("UHIL_NONE_U16", "0xFFFFu", ""),
        ("UHIL_NONE_U32", "0xFFFFFFFFu", ""),
        ("UHIL_NONE_I32", "0x7FFFFFFF", ""),
        ("UHIL_UNATTRIBUTED_SEQ", "0xFFFFu", "NAK.cmd_seq of a frame whose seq cannot be trusted (SPEC 2.6)"),
        ("UHIL_UNATTRIBUTED_TYPE", "0xFFu", "NAK.cmd_type of the same"),
    ]
    assert p["max_encoded"] == cat.MAX_ENCODED
    h = ["/* constants (SPEC 1.3) */"]
    h += [f"#define {n:<24} {v}" + (f"   /* {d} */" if d else "") for n, v, d in consts]
    h.append("")
    for enum, values in cat.ENUM_VALUES.items():
        if enum == "capability":
            continue
        h.append(enum_block(enum, values, "UHIL_" + c_name(enum)))
    h.append("/* capability bits of IDENTITY.caps (SPEC 4.8): UHIL_CAP_X is the mask, UHIL_CAP_X_BIT its bit */")
    for name, bit in cat.ENUM_VALUES["capability"].items():
        h.append(f"#define UHIL_CAP_{c_name(name)}_BIT {bit}u")
        h.append(f"#define UHIL_CAP_{c_name(name)} (1u << {bit})")
    h.append("")
    h.append("/* IDENTITY.card_capacity of the units that hold cards (SPEC 7: SD-10, 9: LA-14) */")
    h += [f"#define UHIL_{c_name(kind)}_CARD_CAPACITY {u.card_capacity}u" for kind, u in cat.UNITS.items()
          if u.card_capacity]
    h.append("")
    h.append("/* parameter ids (SPEC 4.7) */")
    h += [f"#define UHIL_PARAM_{c_name(q.name)} 0x{q.id:02X}u" for q in cat.PARAMS]
    h += ["#define UHIL_N_PARAMS %du" % len(cat.PARAMS), "",
          "/* a parameter: its range, its default, and the unit kinds that have it (bit k = unit_kind k) */",
          "struct uhil_param { uint8_t id; uint8_t kinds; uint32_t min, max, def; const char *name; };",
          "extern const struct uhil_param uhil_params[UHIL_N_PARAMS];",
          "/* the parameter id of unit kind `kind`, or NULL: CONFIG_GET/SET answer NAK unknown_param */",
          "const struct uhil_param *uhil_param_find(uint8_t id, uint8_t kind);", ""]
    h.append("/* message type ids and payload sizes (SPEC 4.1, 5) */")
    for m in cat.MESSAGES:
        h.append(f"#define UHIL_{m.name}_ID 0x{m.id:02X}u")
        h.append(f"#define UHIL_{m.name}_SIZE {m.size}u")
    h += ["",
          "/* payload size of each type id, -1 for ids that are no message a receiver accepts: a device",
          " * accepts the commands only, a host every message (SPEC 2.6 checks 6 and 7) */",
          "extern const int16_t uhil_device_payload_size[256];",
          "extern const int16_t uhil_host_payload_size[256];",
          "/* the capability bit mask a command needs (SPEC 4.3: without it, NAK unsupported), 0 for none */",
          "uint16_t uhil_command_capability(uint8_t type);",
          "/* the message's name (\"HELLO\"), or NULL for an id of no message */",
          "const char *uhil_message_name(uint8_t type);", ""]
    return guard("catalogue", "\n".join(h), ("<stddef.h>", "<stdint.h>"))


def _catalogue_source() -> str:
    """uhil_catalogue.c: the parameter table and finder, the payload sizes by type id, each command's
    capability, each message's name."""
    s = ["const struct uhil_param uhil_params[UHIL_N_PARAMS] = {"]
    kinds = cat.ENUM_VALUES["unit_kind"]
    for q in cat.PARAMS:
        mask = " | ".join(f"(1u << UHIL_UNIT_KIND_{c_name(k)})" for k in q.units)
        s.append(f"    {{UHIL_PARAM_{c_name(q.name)}, {mask}, {q.min}u, {q.max}u, {q.default}u, \"{q.name}\"}},")
    assert all(1 <= v < 8 for v in kinds.values())
    s += ["};", "",
          "const struct uhil_param *uhil_param_find(uint8_t id, uint8_t kind)",
          "{",
          "    size_t i;",
          "    if (kind >= 8)",
          "        return NULL;",
          "    for (i = 0; i < UHIL_N_PARAMS; i++)",
          "        if (uhil_params[i].id == id && (uhil_params[i].kinds >> kind) & 1u)",
          "            return &uhil_params[i];",
          "    return NULL;",
          "}", ""]
    for table, keep in (("device", lambda m: m.kind == "command"), ("host", lambda m: True)):
        sizes = [-1] * 256
        for m in cat.MESSAGES:
            if keep(m):
                sizes[m.id] = m.size
        s.append(f"const int16_t uhil_{table}_payload_size[256] = {{")
        s += ["    " + ", ".join(f"{x:2d}" for x in sizes[i:i + 16]) + "," for i in range(0, 256, 16)]
        s[-1] = s[-1].rstrip(",")
        s += ["};", ""]
    s += ["uint16_t uhil_command_capability(uint8_t type)", "{", "    switch (type) {"]
    s += [f"    case UHIL_{m.name}_ID: return UHIL_CAP_{c_name(m.capability)};" for m in cat.MESSAGES if m.capability]
    s += ["    default: return 0;", "    }", "}", ""]
    s += ["const char *uhil_message_name(uint8_t type)", "{", "    switch (type) {"]
    s += [f"    case UHIL_{m.name}_ID: return \"{m.name}\";" for m in cat.MESSAGES]
    s += ["    default: return NULL;", "    }", "}", ""]
    return source("catalogue", "\n".join(s))

