"""clib/uhil_messages.{h,c}, a struct, packer and unpacker per message and the tagged union of them all, and
the test support clib/test/uhil_fields.{h,c}, from protocol/messages.yaml (through protocol/catalogue.py)."""
from __future__ import annotations

from unohil.protocol import catalogue as cat
from tools.clib_c import BANNER, C_TYPES, field_name, guard, source


def _struct_name(m: cat.MessageDef) -> str:
    return f"uhil_{m.name.lower()}"


def _get(t: str, at: str) -> str:
    unsigned = "u" + t[1:]
    expr = f"get_{unsigned}(p + {at})"
    return expr if t.startswith("u") else f"as_{t}({expr})"


def _put(t: str, at: str, value: str) -> str:
    unsigned = "u" + t[1:]
    v = value if t.startswith("u") else f"({C_TYPES[unsigned]}){value}"
    return f"put_{unsigned}(p + {at}, {v});"


def messages_files() -> dict[str, str]:
    return {"uhil_messages.h": guard("messages", _messages_header(), ("<stddef.h>", "<stdint.h>")),
            "uhil_messages.c": source("messages", _messages_source(),
                                      ('"uhil_catalogue.h"', '"uhil_framing.h"', "<string.h>"))}


def _messages_header() -> str:
    """A struct and the packer's and unpacker's prototypes per message with a payload; uhil_msg, their union."""
    h = ["/* One struct per message with a payload, fields in wire order; uhil_pack_X writes its",
         " * UHIL_X_SIZE payload bytes, uhil_unpack_X reads them (the caller has checked the length, as",
         " * the receiver does). Messages without a payload (STATUS_GET, INJECT_CANCEL) have no struct. */", ""]
    union = []
    for m in cat.MESSAGES:
        if not m.fields:
            continue
        sname = _struct_name(m)
        h.append(f"/* 0x{m.id:02X} {m.name} ({m.kind}){': ' + m.doc.strip() if m.doc else ''} */")
        h.append(f"struct {sname} {{")
        for f in m.fields:
            arr = f"[{f.count}]" if f.count > 1 else ""
            h.append(f"    {C_TYPES[f.type]} {field_name(f.name)}{arr};")
        h.append("};")
        h.append(f"void uhil_pack_{m.name.lower()}(const struct {sname} *m, uint8_t *p);")
        h.append(f"void uhil_unpack_{m.name.lower()}(const uint8_t *p, struct {sname} *m);")
        h.append("")
        union.append(f"        struct {sname} {m.name.lower()};")
    h += ["/* any message with its header: type selects the member of u (none for an empty payload) */",
          "struct uhil_msg {",
          "    uint8_t version;                /* header version byte: UHIL_VERSION_BYTE when sending */",
          "    uint8_t type;                   /* UHIL_X_ID */",
          "    uint16_t seq;",
          "    uint32_t time_us;",
          "    union {"] + union + ["    } u;", "};", "",
          "/* Pack m's payload into p (UHIL_MAX_PAYLOAD bytes of room). Returns the payload size, or -1 for",
          " * a type that is no message of this version. */",
          "int uhil_msg_pack(const struct uhil_msg *m, uint8_t *p);",
          "/* The wire form of m (header, payload, CRC, COBS, delimiter) into out (UHIL_MAX_ENCODED bytes of",
          " * room). Returns its length, or 0 for a type that is no message of this version. */",
          "size_t uhil_msg_encode(const struct uhil_msg *m, uint8_t *out);",
          "/* Read a decoded frame (header + payload + CRC, n bytes, as uhil_rx_byte leaves it in rx->buf)",
          " * into m. Returns 0, or -1 for a type that is no message of this version or a payload shorter",
          " * than its type's (bytes a newer minor version appended are ignored). The CRC is not checked",
          " * here: the receiver has done so. */",
          "int uhil_msg_decode(const uint8_t *frame, size_t n, struct uhil_msg *m);", ""]
    return "\n".join(h)


def _messages_source() -> str:
    """The little-endian accessors the messages use, a packer and unpacker per message, then uhil_msg's pack,
    encode and decode."""
    c = ["/* little-endian access, byte by byte: no alignment, any host byte order */",
         "static uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }",
         "static uint32_t get_u32(const uint8_t *p)",
         "{",
         "    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;",
         "}",
         "static uint64_t get_u64(const uint8_t *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }",
         "static uint8_t get_u8(const uint8_t *p) { return p[0]; }",
         "static void put_u8(uint8_t *p, uint8_t v) { p[0] = v; }",
         "static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }",
         "static void put_u32(uint8_t *p, uint32_t v) { put_u16(p, (uint16_t)v); put_u16(p + 2, (uint16_t)(v >> 16)); }",
         "static void put_u64(uint8_t *p, uint64_t v) { put_u32(p, (uint32_t)v); put_u32(p + 4, (uint32_t)(v >> 32)); }",
         "/* two's complement without implementation-defined conversions */",
         "static int8_t as_i8(uint8_t v) { return v < 0x80u ? (int8_t)v : (int8_t)(-(int)(uint8_t)~v - 1); }",
         "static int16_t as_i16(uint16_t v) { return v < 0x8000u ? (int16_t)v : (int16_t)(-(int32_t)(uint16_t)~v - 1); }",
         "static int32_t as_i32(uint32_t v) { return v < 0x80000000u ? (int32_t)v : -(int32_t)~v - 1; }", ""]
    used_types = {f.type for m in cat.MESSAGES for f in m.fields}
    for t in ("i8", "i16", "i32", "u64", "u8"):
        if t not in used_types:
            c = [ln for ln in c if f"as_{t}(" not in ln and f"get_{t}(" not in ln and f"put_{t}(" not in ln]
    for m in cat.MESSAGES:
        if m.fields:
            c += _pack_unpack(m)
    c += ["int uhil_msg_pack(const struct uhil_msg *m, uint8_t *p)", "{", "    switch (m->type) {"]
    for m in cat.MESSAGES:
        c.append(f"    case UHIL_{m.name}_ID:")
        if m.fields:
            c.append(f"        uhil_pack_{m.name.lower()}(&m->u.{m.name.lower()}, p);")
        else:
            c.append("        (void)p;")
        c.append(f"        return UHIL_{m.name}_SIZE;")
    c += ["    default:", "        return -1;", "    }", "}", "",
          "size_t uhil_msg_encode(const struct uhil_msg *m, uint8_t *out)", "{",
          "    uint8_t p[UHIL_MAX_PAYLOAD];",
          "    int n = uhil_msg_pack(m, p);",
          "    if (n < 0)",
          "        return 0;",
          "    return uhil_frame_build(m->version, m->type, m->seq, m->time_us, p, (size_t)n, out);",
          "}", "",
          "int uhil_msg_decode(const uint8_t *frame, size_t n, struct uhil_msg *m)", "{",
          "    const uint8_t *p = frame + UHIL_HEADER_SIZE;",
          "    int16_t size;",
          "    if (n < UHIL_HEADER_SIZE + UHIL_CRC_SIZE)",
          "        return -1;",
          "    size = uhil_host_payload_size[frame[1]];",
          "    if (size < 0 || n - UHIL_HEADER_SIZE - UHIL_CRC_SIZE < (size_t)size)",
          "        return -1;",
          "    memset(m, 0, sizeof *m);",
          "    m->version = frame[0];",
          "    m->type = frame[1];",
          "    m->seq = get_u16(frame + 2);",
          "    m->time_us = get_u32(frame + 4);",
          "    switch (m->type) {"]
    for m in cat.MESSAGES:
        if m.fields:
            c.append(f"    case UHIL_{m.name}_ID: uhil_unpack_{m.name.lower()}(p, &m->u.{m.name.lower()}); break;")
    c += ["    default: (void)p; break;", "    }", "    return 0;", "}", ""]
    return "\n".join(c)


def _pack_unpack(m: cat.MessageDef) -> list[str]:
    """The C of uhil_pack_X and uhil_unpack_X for one message with a payload."""
    sname = _struct_name(m)
    pack, unpack, off = [], [], 0
    for f in m.fields:
        size = f.size // f.count
        if f.count > 1:
            pack.append(f"    for (i = 0; i < {f.count}; i++)")
            pack.append(f"        {_put(f.type, f'{off} + {size} * i', f'm->{f.name}[i]')}")
            unpack.append(f"    for (i = 0; i < {f.count}; i++)")
            unpack.append(f"        m->{f.name}[i] = {_get(f.type, f'{off} + {size} * i')};")
        else:
            pack.append(f"    {_put(f.type, str(off), f'm->{f.name}')}")
            unpack.append(f"    m->{f.name} = {_get(f.type, str(off))};")
        off += f.size
    assert off == m.size
    decl = ["    size_t i;"] if m.has_arrays else []
    return ([f"void uhil_pack_{m.name.lower()}(const struct {sname} *m, uint8_t *p)", "{"] + decl + pack + ["}", ""]
            + [f"void uhil_unpack_{m.name.lower()}(const uint8_t *p, struct {sname} *m)", "{"] + decl + unpack
            + ["}", ""])


# ---- test support: the fields of any message as a flat list of integers ----------------------------------------

def fields_files() -> dict[str, str]:
    """clib/test/uhil_fields.{h,c}: every field of a uhil_msg, in wire order (arrays element by element),
    as int64 values, both ways: what the probe prints and reads when the tests compare the library with
    the Python codec field by field. Test code, not part of the library."""
    h = ["/* the fields of m in wire order into out[] (two's complement bits; is_signed[i] says which are i8..i32):",
         " * returns how many (at most max), -1 for an unknown type */",
         "int uhil_fields_get(const struct uhil_msg *m, uint64_t *out, uint8_t *is_signed, size_t max);",
         "/* set m's fields (m->type chosen) from n values in wire order: 0, or -1 when n is not their number */",
         "int uhil_fields_set(struct uhil_msg *m, const uint64_t *in, size_t n);", ""]
    get, put = [], []
    for m in cat.MESSAGES:
        flat = []
        for f in m.fields:
            if f.count > 1:
                flat += [(f"{f.name}[{i}]", f.type) for i in range(f.count)]
            else:
                flat.append((f.name, f.type))
        member = f"m->u.{m.name.lower()}"
        get.append(f"    case UHIL_{m.name}_ID:")
        put.append(f"    case UHIL_{m.name}_ID:")
        if flat:
            get.append(f"        if (max < {len(flat)}) return -1;")
        put.append(f"        if (n != {len(flat)}) return -1;")
        for i, (name, t) in enumerate(flat):
            if t.startswith("i"):
                get.append(f"        out[{i}] = (uint64_t)(int64_t){member}.{name}; is_signed[{i}] = 1;")
                put.append(f"        {member}.{name} = ({C_TYPES[t]})(int64_t)in[{i}];")
            else:
                get.append(f"        out[{i}] = {member}.{name}; is_signed[{i}] = 0;")
                put.append(f"        {member}.{name} = ({C_TYPES[t]})in[{i}];")
        get.append(f"        return {len(flat)};")
        put.append("        return 0;")
    c = ["int uhil_fields_get(const struct uhil_msg *m, uint64_t *out, uint8_t *is_signed, size_t max)", "{",
         "    (void)out; (void)is_signed; (void)max;",
         "    switch (m->type) {"] + get + ["    default: return -1;", "    }", "}", "",
         "int uhil_fields_set(struct uhil_msg *m, const uint64_t *in, size_t n)", "{", "    (void)in;",
         "    switch (m->type) {"] + put + ["    default: return -1;", "    }", "}", ""]
    header = guard("fields", "\n".join(h), ("<stddef.h>", "<stdint.h>", '"../uhil_messages.h"'))
    source = (BANNER % f"{cat.MAJOR}.{cat.MINOR}") + '#include "uhil_fields.h"\n#include "../uhil_catalogue.h"\n\n' + \
        "\n".join(c)
    return {"test/uhil_fields.h": header, "test/uhil_fields.c": source}

