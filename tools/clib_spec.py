"""clib/'s files lifted from SPEC.md's C (CRC, COBS, the receiver, uhil_diff, the reference generator, the
burst distribution), item by item, split into header and source, with what the SPEC states only in words."""
from __future__ import annotations

import re

from tools.clib_c import guard, source


def spec_items(spec_text: str) -> dict[str, str]:
    """The top-level items of SPEC.md's C blocks, by name: functions (uhil_crc16, ...), and the
    declarations (macros, enums, structs, typedefs) named by what they declare. Each item keeps the
    comment that precedes it."""
    items: dict[str, str] = {}
    for block in re.findall(r"```c\n(.*?)```", spec_text, re.S):
        pending: list[str] = []
        depth = 0
        for line in block.splitlines():
            if depth == 0 and not pending and (not line.strip() or line.startswith("#include")):
                continue
            pending.append(line)
            depth += line.count("{") - line.count("}")
            text = "\n".join(pending)
            if depth or text.count("/*") > text.count("*/") or not _code(text).strip():
                continue                        # inside a body, or a comment that belongs to the next item
            last = _code(line).strip()
            if not (last.startswith("#define") or last.endswith(";") or last.endswith("}")):
                continue                        # a function's head: its body follows
            text = text.rstrip() + "\n"
            items[_item_name(text)] = text
            pending = []
        if pending and "".join(pending).strip():
            raise ValueError(f"SPEC.md: a C block ends inside an item: {pending[:2]}")
    return items


def _code(text: str) -> str:
    """text without its comments."""
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _item_name(text: str) -> str:
    code = _code(text).strip()
    m = re.match(r"#define\s+(\w+)", code)
    if m:
        return m.group(1)
    m = re.match(r"typedef\s+struct\s*\{.*\}\s*(\w+)\s*;", code, re.S)
    if m:
        return m.group(1)
    m = re.match(r"(enum|struct)\s+(\w+)", code)
    if m:
        return f"{m.group(1)} {m.group(2)}"
    m = re.search(r"(\w+)\s*\(", code.split("{")[0])
    if m:
        return m.group(1)
    raise ValueError(f"SPEC.md: cannot name the C item {code[:60]!r}")


def prototype(function_text: str) -> str:
    """A function definition's declaration: the head up to its body, with the comment before it."""
    comment = re.match(r"(\s*/\*.*?\*/\s*\n)*", function_text, re.S).group(0)
    head = re.sub(r"\s+", " ", _code(function_text).split("{")[0]).strip()
    return comment + head + ";\n"


def _spec_unit(name: str, items: dict[str, str], names: list[str], extra_h: str, extra_c: str,
               h_includes: tuple[str, ...], sections: str) -> dict[str, str]:
    h, c = [f"/* SPEC.md {sections}, lifted verbatim from the SPEC's C */"], [
        f"/* SPEC.md {sections}, lifted verbatim from the SPEC's C */"]
    for n in names:
        if n not in items:
            raise ValueError(f"SPEC.md has no C item {n!r} any more; tools/clib_spec.py lifts it")
        text = items[n]
        code = _code(text).strip()
        is_function = bool(re.match(r"[\w\s\*]+\([^;]*\)\s*\{", code, re.S)) and not code.startswith(
            ("struct", "enum", "typedef", "#"))
        if is_function:
            if not code.startswith("static"):
                h.append(prototype(text))
            c.append(text)
        else:
            h.append(text)
    return {f"uhil_{name}.h": guard(name, "\n".join(h) + extra_h, h_includes),
            f"uhil_{name}.c": source(name, "\n".join(c) + extra_c)}


FRAMING_H = """
/* Build the wire form of one frame: header (version, type, seq, time_us), plen payload bytes, the
 * CRC, COBS, the 0x00 delimiter. out has room for UHIL_MAX_ENCODED bytes. Returns the number of
 * bytes written (plen + 12), or 0 when plen > UHIL_MAX_PAYLOAD. */
size_t uhil_frame_build(uint8_t version, uint8_t type, uint16_t seq, uint32_t time_us, const uint8_t *payload,
                        size_t plen, uint8_t *out);
"""

FRAMING_C = """
size_t uhil_frame_build(uint8_t version, uint8_t type, uint16_t seq, uint32_t time_us, const uint8_t *payload,
                        size_t plen, uint8_t *out)
{
    uint8_t raw[UHIL_MAX_FRAME];
    size_t n = UHIL_HEADER_SIZE + plen, w;
    uint16_t crc;
    if (plen > UHIL_MAX_PAYLOAD)
        return 0;
    raw[0] = version;
    raw[1] = type;
    raw[2] = (uint8_t)seq;
    raw[3] = (uint8_t)(seq >> 8);
    raw[4] = (uint8_t)time_us;
    raw[5] = (uint8_t)(time_us >> 8);
    raw[6] = (uint8_t)(time_us >> 16);
    raw[7] = (uint8_t)(time_us >> 24);
    if (plen)
        memcpy(raw + UHIL_HEADER_SIZE, payload, plen);
    crc = uhil_crc16(raw, n);
    raw[n++] = (uint8_t)crc;                /* little-endian: low byte first (SPEC 2.1) */
    raw[n++] = (uint8_t)(crc >> 8);
    w = uhil_cobs_encode(raw, n, out);
    out[w++] = 0;
    return w;
}
"""

RX_H = """
/* Start (or restart) a receiver: nothing held. */
void uhil_rx_init(struct uhil_rx *rx);

/* The NAK a device owes for a receiver result (SPEC 2.6's table), into nak[4] = cmd_seq, cmd_type,
 * error, detail; cmd_seq and cmd_type are UHIL_UNATTRIBUTED_* when the frame's header cannot be
 * trusted. Returns 1 when a NAK is owed, 0 when the result is answered with nothing (a good frame,
 * UHIL_RX_NONE, COBS errors and too-short frames: line noise). Call it right after uhil_rx_byte
 * returned `result`, before the next byte. */
int uhil_rx_nak(const struct uhil_rx *rx, int result, uint16_t nak[4]);

/* The kind's name as the SPEC and fixtures/vectors name it ("frame", "too_long", "cobs", ...). */
const char *uhil_rx_kind(int result);
"""

RX_C = """
void uhil_rx_init(struct uhil_rx *rx)
{
    memset(rx, 0, sizeof *rx);
}

int uhil_rx_nak(const struct uhil_rx *rx, int result, uint16_t nak[4])
{
    /* after checks 5-7 the frame's CRC passed: its decoded header is in rx->buf */
    const uint16_t seq = (uint16_t)(rx->buf[2] | rx->buf[3] << 8), type = rx->buf[1];
    switch (result) {
    case UHIL_RX_TOO_LONG:
        nak[0] = UHIL_UNATTRIBUTED_SEQ; nak[1] = UHIL_UNATTRIBUTED_TYPE; nak[2] = UHIL_ERROR_FRAME_TOO_LONG;
        nak[3] = 0;
        return 1;
    case UHIL_RX_BAD_CRC:
        nak[0] = UHIL_UNATTRIBUTED_SEQ; nak[1] = UHIL_UNATTRIBUTED_TYPE; nak[2] = UHIL_ERROR_BAD_CRC; nak[3] = 0;
        return 1;
    case UHIL_RX_BAD_VERSION:
        nak[0] = seq; nak[1] = type; nak[2] = UHIL_ERROR_BAD_VERSION; nak[3] = UHIL_PROTO_MAJOR;
        return 1;
    case UHIL_RX_UNKNOWN_TYPE:
        nak[0] = seq; nak[1] = type; nak[2] = UHIL_ERROR_UNKNOWN_TYPE; nak[3] = 0;
        return 1;
    case UHIL_RX_BAD_LENGTH:
        nak[0] = seq; nak[1] = type; nak[2] = UHIL_ERROR_BAD_LENGTH; nak[3] = 0;
        return 1;
    default:
        return 0;
    }
}

const char *uhil_rx_kind(int result)
{
    switch (result) {
    case UHIL_RX_NONE: return "none";
    case UHIL_RX_FRAME: return "frame";
    case UHIL_RX_TOO_LONG: return "too_long";
    case UHIL_RX_COBS: return "cobs";
    case UHIL_RX_TOO_SHORT: return "too_short";
    case UHIL_RX_BAD_CRC: return "bad_crc";
    case UHIL_RX_BAD_VERSION: return "bad_version";
    case UHIL_RX_UNKNOWN_TYPE: return "unknown_type";
    case UHIL_RX_BAD_LENGTH: return "bad_length";
    default: return "?";
    }
}
"""

ALGORITHMS_H = """
/* 6.1: the Showdown countdown D = lo + U(hi - lo + 1), one draw (lo <= hi) */
uint32_t uhil_countdown_us(uhil_rng *g, uint32_t lo, uint32_t hi);

/* 6.2: one card of a tie, d = t_b - t_a (uhil_diff of the two presses), w = tie_window_us:
 * one draw r = U(2w); returns 1 when the card lands on B's side (r < w + 2d), else 0 */
int uhil_lands_on_b(uhil_rng *g, int32_t d, uint32_t w);
/* the same for a given draw r in [0, 2w) */
int uhil_lands_on_b_from_draw(uint32_t r, int32_t d, uint32_t w);

/* 6.3: a Flash selection: index into the n registered buttons in ascending order, U(n), one draw */
uint32_t uhil_pick(uhil_rng *g, uint32_t n);

/* 6.4: the launcher's fire chance per mille, min(1000, base + empty_streak * step) */
uint32_t uhil_fire_chance(uint32_t base_permille, uint32_t step_permille, uint32_t empty_streak);
/* 6.4: one draw U(1000), always made; returns 1 when the press fires (draw < chance) */
int uhil_fires(uhil_rng *g, uint32_t chance_permille);

/* 6.5: one burst size, one draw r = U(uhil_burst_total(lo, m, hi)) */
uint32_t uhil_burst_draw(uhil_rng *g, uint32_t lo, uint32_t m, uint32_t hi);
"""

ALGORITHMS_C = """
uint32_t uhil_countdown_us(uhil_rng *g, uint32_t lo, uint32_t hi)
{
    return lo + uhil_uniform(g, hi - lo + 1u);
}

int uhil_lands_on_b_from_draw(uint32_t r, int32_t d, uint32_t w)
{
    /* in 64 bits: w + 2d is negative when A pressed much later */
    return (int64_t)r < (int64_t)w + 2 * (int64_t)d;
}

int uhil_lands_on_b(uhil_rng *g, int32_t d, uint32_t w)
{
    return uhil_lands_on_b_from_draw(uhil_uniform(g, 2u * w), d, w);
}

uint32_t uhil_pick(uhil_rng *g, uint32_t n)
{
    return uhil_uniform(g, n);
}

uint32_t uhil_fire_chance(uint32_t base_permille, uint32_t step_permille, uint32_t empty_streak)
{
    /* in 64 bits: a long streak must saturate at 1000, not wrap */
    uint64_t c = (uint64_t)base_permille + (uint64_t)empty_streak * step_permille;
    return c < 1000u ? (uint32_t)c : 1000u;
}

int uhil_fires(uhil_rng *g, uint32_t chance_permille)
{
    return uhil_uniform(g, 1000u) < chance_permille;
}

uint32_t uhil_burst_draw(uhil_rng *g, uint32_t lo, uint32_t m, uint32_t hi)
{
    return uhil_burst_from_draw(lo, m, hi, uhil_uniform(g, uhil_burst_total(lo, m, hi)));
}
"""


def spec_files(spec_text: str) -> dict[str, str]:
    items = spec_items(spec_text)
    out = {}
    out.update(_spec_unit("framing", items, ["uhil_crc16", "uhil_cobs_encode", "uhil_cobs_decode", "uhil_diff"],
                          FRAMING_H, FRAMING_C, ("<stddef.h>", "<stdint.h>"), "2.2 (CRC), 2.3 (COBS), 3.2 (diff)"))
    out["uhil_framing.c"] = out["uhil_framing.c"].replace(
        '#include "uhil_framing.h"\n', '#include "uhil_framing.h"\n#include "uhil_catalogue.h"\n#include <string.h>\n')
    out.update(_spec_unit("rx", items, ["UHIL_MAX_RUN", "UHIL_MIN_FRAME", "enum uhil_rx_result", "struct uhil_rx",
                                        "uhil_classify", "uhil_rx_byte"],
                          RX_H, RX_C, ("<stddef.h>", "<stdint.h>"), "2.6 (the receiver)"))
    out["uhil_rx.c"] = out["uhil_rx.c"].replace(
        '#include "uhil_rx.h"\n', '#include "uhil_rx.h"\n#include "uhil_catalogue.h"\n#include "uhil_framing.h"\n'
                                  '#include <string.h>\n')
    out.update(_spec_unit("rng", items, ["uhil_rng", "uhil_rng32", "uhil_rng_seed", "uhil_uniform"], "", "",
                          ("<stdint.h>",), "6.0 (the reference generator)"))
    out.update(_spec_unit("algorithms", items, ["uhil_burst_total", "uhil_burst_from_draw"], ALGORITHMS_H,
                          ALGORITHMS_C, ("<stdint.h>", '"uhil_rng.h"'), "6.5 (bursts); 6.1-6.4 from their text"))
    return out

