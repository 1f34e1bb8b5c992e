"""protocol/SPEC.md: its generated tables match the catalogue, and its C code passes the vectors."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from unohil.protocol import algorithms as A
from unohil.protocol import catalogue as cat
from tools import spec_tables
from tools import vectors as V

SPEC = spec_tables.SPEC_PATH.read_text(encoding="utf-8")


def test_generated_regions_equal_fresh_output():
    found = spec_tables.regions_in(SPEC)
    assert set(found) == set(spec_tables.REGIONS), "every generated region is present exactly once"
    for name, body in found.items():
        assert body == "\n" + spec_tables.generate(name) + "\n", (
            f"SPEC.md region {name!r} drifted from the catalogue: run python -m tools.spec_tables --write")
    assert spec_tables.check() == []


def test_check_detects_drift(tmp_path):
    drifted = tmp_path / "SPEC.md"
    drifted.write_text(SPEC.replace("| 0x01 | [HELLO](#0x01-hello) | command", "| 0x01 | [HELLO](#0x01-hello) | cmd"),
                       encoding="utf-8")
    assert spec_tables.check(drifted)
    assert spec_tables.main(["--check", "--spec", str(drifted)]) == 1
    assert spec_tables.main(["--write", "--spec", str(drifted)]) == 0
    assert drifted.read_text(encoding="utf-8") == SPEC
    assert spec_tables.main(["--check", "--spec", str(drifted)]) == 0


def test_command_line_check_passes():
    r = subprocess.run([sys.executable, "-m", "tools.spec_tables", "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_message_has_its_table_with_offsets():
    body = spec_tables.regions_in(SPEC)["messages"]
    for m in cat.MESSAGES:
        assert f"#### 0x{m.id:02X} {m.name}\n" in body
        off = 0
        for f in m.fields:
            assert f"| {off} | {off + cat.HEADER_SIZE} | `{f.name}` |" in body, (m.name, f.name)
            off += f.size
        assert off == m.size


def test_every_enum_and_param_is_in_a_table():
    regions = spec_tables.regions_in(SPEC)
    text = "".join(regions.values())
    for enum in cat.ENUM_VALUES:
        assert f"`{enum}`" in text, enum
        for name in cat.ENUM_VALUES[enum]:
            assert f"`{name}`" in text, (enum, name)
    for p in cat.PARAMS:
        assert f"`{p.name}`" in regions["params"]


def test_every_error_code_has_its_text():
    assert set(spec_tables.ERROR_TEXT) == set(cat.ENUM_VALUES["error"])


def test_enums_are_grouped_once():
    groups = [spec_tables.common_enums(), spec_tables.rig_enums()] + \
        [spec_tables.unit_enums(u) for u in ("showdown", "flash", "launcher")]
    flat = [e for g in groups for e in g] + ["error"]
    assert sorted(flat) == sorted(cat.ENUM_VALUES)


def test_spec_states_the_key_numbers():
    for text in ("0x29B1", "71 min 34.967296 s", "0x1209", "0x0001", "115200", "0xFF", "64 bytes",
                 "w(k) = (k - lo + 1) · (hi - m + 1)", "r < W + 2·d", "U(1000) < chance"):
        assert text in SPEC, text
    for did in [f"SD-{i}" for i in range(1, 12)] + [f"FL-{i}" for i in range(1, 14)] + \
               [f"LA-{i}" for i in range(1, 6)]:
        assert f"**{did} " in SPEC, did                # stated with its reason
        assert f"| {did} |" in SPEC, did                # and listed in the index


def test_spec_has_no_internal_broken_links():
    anchors = set()
    for line in SPEC.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    for link in re.findall(r"\]\(#([^)]+)\)", SPEC):
        assert link in anchors, link


# ---- the C code of the spec against the golden vectors -----------------------------------------------

C_MAIN = r"""
#include <stdio.h>
#include <string.h>


static const char *kind(int r)
{
    switch (r) {
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

int main(void)
{
    int fails = 0;
    if (uhil_crc16((const uint8_t *)"123456789", 9) != 0x29B1) { puts("FAIL crc check value"); fails++; }
    if (uhil_diff(0x00000010u, 0xFFFFFFF0u) != 0x20 || uhil_diff(0xFFFFFFF0u, 0x00000010u) != -0x20) {
        puts("FAIL diff"); fails++;
    }
    for (size_t i = 0; i < UHIL_N_FRAME_VECTORS; i++) {
        const struct uhil_frame_vector *v = &uhil_frame_vectors[i];
        uint8_t enc[64], dec[64];
        size_t n = uhil_cobs_encode(v->raw, v->raw_len, enc);
        if (n != v->wire_len - 1 || memcmp(enc, v->wire, n) != 0 || v->wire[v->wire_len - 1] != 0) {
            printf("FAIL encode %s\n", v->label); fails++;
        }
        int m = uhil_cobs_decode(v->wire, v->wire_len - 1, dec);
        if (m != (int)v->raw_len || memcmp(dec, v->raw, v->raw_len) != 0) { printf("FAIL decode %s\n", v->label); fails++; }
        struct uhil_rx rx;
        memset(&rx, 0, sizeof rx);
        int last = UHIL_RX_NONE, results = 0;
        for (size_t k = 0; k < v->wire_len; k++) {
            int r = uhil_rx_byte(&rx, v->wire[k], uhil_payload_size);
            if (r != UHIL_RX_NONE) { last = r; results++; }
        }
        if (results != 1 || last != UHIL_RX_FRAME || rx.frame_len != v->raw_len || memcmp(rx.buf, v->raw, v->raw_len)) {
            printf("FAIL rx %s (%s)\n", v->label, kind(last)); fails++;
        }
    }
    for (size_t i = 0; i < UHIL_N_STREAM_VECTORS; i++) {
        const struct uhil_stream_vector *v = &uhil_stream_vectors[i];
        struct uhil_rx rx;
        memset(&rx, 0, sizeof rx);
        size_t got = 0;
        for (size_t k = 0; k < v->stream_len; k++) {
            int r = uhil_rx_byte(&rx, v->stream[k], uhil_payload_size);
            if (r == UHIL_RX_NONE)
                continue;
            if (got >= v->n_expect || strcmp(kind(r), v->expect[got]) != 0) {
                printf("FAIL stream %s item %zu: %s\n", v->label, got, kind(r)); fails++;
            }
            got++;
        }
        if (got != v->n_expect || rx.len != v->pending) { printf("FAIL stream %s count/pending\n", v->label); fails++; }
    }
    for (size_t i = 0; i < UHIL_N_RNG_VECTORS; i++) {
        const struct uhil_rng_vector *v = &uhil_rng_vectors[i];
        uhil_rng g;
        uhil_rng_seed(&g, v->rng_seed);
        for (int k = 0; k < 8; k++)
            if (uhil_rng32(&g) != v->next32[k]) { printf("FAIL rng seed %u output %d\n", v->rng_seed, k); fails++; }
    }
    for (size_t i = 0; i < UHIL_N_UNIFORM_VECTORS; i++) {
        const struct uhil_uniform_vector *v = &uhil_uniform_vectors[i];
        uhil_rng g;
        uhil_rng_seed(&g, v->rng_seed);
        for (int k = 0; k < 6; k++)
            if (uhil_uniform(&g, v->n) != v->draws[k]) { printf("FAIL U(%u) seed %u draw %d\n", v->n, v->rng_seed, k); fails++; }
    }
    BURSTS
    printf("fails=%d\n", fails);
    return fails != 0;
}
"""


def _c_blocks() -> str:
    return "\n".join(re.findall(r"```c\n(.*?)```", SPEC, re.S))


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_spec_c_code_passes_the_vectors(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    bursts = []
    for lo, mode, hi in V.BURST_CASES:
        bursts.append(
            f'{{ uint32_t t = uhil_burst_total({lo}, {mode}, {hi}); printf("burst {lo} {mode} {hi} %u:", t);'
            f' unsigned c[41] = {{0}}; for (uint32_t r = 0; r < t; r++) c[uhil_burst_from_draw({lo}, {mode}, {hi}, r)]++;'
            f' for (int k = {lo}; k <= {hi}; k++) printf(" %u", c[k]); printf("\\n"); }}')
    src = ('#include "vectors.h"\n' + _c_blocks() + C_MAIN.replace("BURSTS", "\n    ".join(bursts)))
    (tmp_path / "spec.c").write_text(src)
    shutil.copy(V.HEADER_PATH, tmp_path / "vectors.h")
    exe = tmp_path / "spec"
    comp = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-o", str(exe),
                           str(tmp_path / "spec.c")], capture_output=True, text=True)
    assert comp.returncode == 0, comp.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout
    lines = run.stdout.splitlines()
    assert lines[-1] == "fails=0"
    for line, (lo, mode, hi) in zip([ln for ln in lines if ln.startswith("burst")], V.BURST_CASES):
        head, counts = line.split(":")
        assert head == f"burst {lo} {mode} {hi} {A.burst_total(lo, mode, hi)}"
        assert [int(c) for c in counts.split()] == A.burst_weights(lo, mode, hi)


def test_vectors_json_is_what_the_spec_points_to():
    data = json.loads(V.JSON_PATH.read_text(encoding="utf-8"))
    assert {"frames", "streams", "algorithms", "crc_check"} <= set(data)
    assert "fixtures/vectors/vectors.json" in SPEC and "python -m tools.vectors --write" in SPEC


def test_the_generators_check_values_in_section_6_are_its_outputs():
    from unohil.protocol.algorithms import Pcg32
    m = re.search(r"rng_seed 1 gives (0x[0-9a-f]{8}), (0x[0-9a-f]{8}), (0x[0-9a-f]{8})", SPEC)
    assert m, "SPEC 6.0 lost its check values"
    g = Pcg32(1)
    assert [int(x, 16) for x in m.groups()] == [g.next32() for _ in range(3)]
    assert f"RNG_STREAM` = 0x{cat.RNG_STREAM:08X}" in SPEC and f"0x{cat.RNG_STREAM:08X}u" in SPEC
