"""clib/, the C library for firmware: generated from the catalogue and the SPEC's C (tools/clib.py),
warning-free under gcc and clang, passing every vector, agreeing with the Python codec byte for byte,
and fuzzed."""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from unohil.protocol import catalogue as cat
from unohil.protocol.codec import Frame, StreamDecoder, encode, encode_raw
from tools import clib as G
from tools import vectors as V

from tools.clib_build import CLIB, ROOT, BuildError, tool
from tools.clib_build import make as _make

def require_tool(name: str, env_flag: str) -> str:
    path, required = tool(name, env_flag)
    if path is None:
        if required:
            pytest.fail(f"{name} is missing and {env_flag} is set")
        pytest.skip(f"no {name}")
    return path


def make(build, *targets, **kw) -> str:
    try:
        return _make(build, *targets, **kw)
    except BuildError as exc:
        pytest.fail(str(exc))


VECTORS = json.loads(V.JSON_PATH.read_text(encoding="utf-8"))


# ---- the generated files --------------------------------------------------------------------------------

def test_generated_files_are_what_the_catalogue_and_spec_give():
    assert G.check() == [], "run: python -m tools.clib --write"


def test_check_detects_drift(tmp_path, monkeypatch):
    fresh = G.outputs()
    monkeypatch.setattr(G, "CLIB_DIR", tmp_path)
    for path, text in fresh.items():
        target = tmp_path / path.relative_to(CLIB)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    assert G.check() == []
    (tmp_path / "uhil_rx.c").write_text("/* edited by hand */\n")
    problems = G.check()
    assert len(problems) == 1 and "uhil_rx.c is stale" in problems[0]


def test_command_line_check_passes():
    r = subprocess.run([sys.executable, "-m", "tools.clib", "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_the_library_runs_the_spec_code_verbatim():
    spec = G.SPEC_PATH.read_text(encoding="utf-8")
    items = G.spec_items(spec)
    for name, file in (("uhil_crc16", "uhil_framing.c"), ("uhil_cobs_decode", "uhil_framing.c"),
                       ("uhil_rx_byte", "uhil_rx.c"), ("uhil_uniform", "uhil_rng.c"),
                       ("uhil_burst_from_draw", "uhil_algorithms.c"), ("struct uhil_rx", "uhil_rx.h")):
        assert items[name] in (CLIB / file).read_text(), f"{name} is not SPEC.md's text in {file}"


def test_every_message_field_enum_and_param_is_in_the_headers():
    msgs = (CLIB / "uhil_messages.h").read_text()
    catalogue_h = (CLIB / "uhil_catalogue.h").read_text()
    for m in cat.MESSAGES:
        assert f"#define UHIL_{m.name}_ID 0x{m.id:02X}u" in catalogue_h
        assert f"#define UHIL_{m.name}_SIZE {m.size}u" in catalogue_h
        if m.fields:
            body = re.search(r"struct uhil_%s \{(.*?)\};" % m.name.lower(), msgs, re.S).group(1)
            assert [ln.split()[-1].rstrip(";").split("[")[0] for ln in body.strip().splitlines()] == \
                [f.name for f in m.fields]
    for enum, values in cat.ENUM_VALUES.items():
        for name, v in values.items():
            if enum == "capability":
                assert f"#define UHIL_CAP_{name.upper()}_BIT {v}u" in catalogue_h
            else:
                assert f"UHIL_{enum.upper()}_{name.upper()} = {v}" in catalogue_h
    for p in cat.PARAMS:
        assert f"#define UHIL_PARAM_{p.name.upper()} 0x{p.id:02X}u" in catalogue_h
    assert f"UHIL_CATALOG_CRC         0x{cat.CATALOG_CRC:04X}u" in catalogue_h


def test_the_library_includes_nothing_beyond_its_three_headers():
    for path in CLIB.glob("uhil_*.[ch]"):
        system = set(re.findall(r"#include <([^>]+)>", path.read_text()))
        assert system <= {"stdint.h", "stddef.h", "string.h"}, path.name
        text = path.read_text()
        assert not re.search(r"\b(malloc|calloc|realloc|free)\s*\(", text), path.name
        # no global state: every file-scope object is const
        for line in text.splitlines():
            if re.match(r"^(static\s+)?(u?int\d+_t|struct \w+|char|int)\b[^(]*(=|;)\s*", line) and "(" not in line:
                assert "const" in line, f"{path.name}: {line}"


# ---- building and the vectors ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def build(tmp_path_factory):
    require_tool("cc", "UNOHIL_REQUIRE_CC")
    return tmp_path_factory.mktemp("clib")


@pytest.mark.parametrize("compiler", ["cc", "clang"])
def test_the_library_passes_every_vector_warning_free(tmp_path, compiler):
    cc = require_tool(compiler, "UNOHIL_REQUIRE_CLANG" if compiler == "clang" else "UNOHIL_REQUIRE_CC")
    out = make(tmp_path, "lib", "test", cc=cc)
    assert re.search(r"^(\d+) passed, 0 failed$", out, re.M), out
    n = int(re.search(r"^(\d+) passed", out, re.M).group(1))
    assert n >= 5 * len(VECTORS["frames"]) + len(VECTORS["streams"])
    assert "warning" not in out


def test_the_vector_test_fails_on_a_wrong_frame(tmp_path):
    """The C test can fail: a vectors.h with one wire byte changed is caught."""
    require_tool("cc", "UNOHIL_REQUIRE_CC")
    header = V.HEADER_PATH.read_text()
    broken = tmp_path / "vectors"
    broken.mkdir()
    (broken / "vectors.h").write_text(header.replace("uhil_f0_wire[14] = {\n    0x04", "uhil_f0_wire[14] = {\n    0x05", 1))
    r = subprocess.run(["make", "-s", "-C", str(CLIB), f"BUILD={tmp_path}", f"VECTORS={broken}", "test"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "FAIL rx hello" in r.stdout and "FAIL encode hello" in r.stdout


def test_size_for_a_microcontroller(build):
    out = make(build, "size")
    total = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\w+\s+\(TOTALS\)", out, re.M)
    assert total, out
    text, data, bss = map(int, total.groups())
    assert data == 0 and bss == 0, "the library keeps no state of its own"
    assert text < 16384, out


class Probe:
    def __init__(self, exe):
        self.proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def probe(build):
    make(build, "probe")
    p = Probe(build / "probe")
    yield p
    p.close()


def _flat(fields: dict, mdef) -> list[int]:
    out = []
    for f in mdef.fields:
        v = fields[f.name]
        out += list(v) if f.count > 1 else [v]
    return out


def test_every_frame_vector_field_by_field(probe):
    for v in VECTORS["frames"]:
        mdef = cat.BY_NAME[v["message"]]
        flat = _flat(v["fields"], mdef)
        assert probe.ask(f"decode {v['raw_hex']}").split() == \
            [v["message"], str(cat.VERSION_BYTE), str(v["seq"]), str(v["time_us"])] + [str(x) for x in flat], v["label"]
        assert probe.ask(f"encode {mdef.id} {cat.VERSION_BYTE} {v['seq']} {v['time_us']} "
                         + " ".join(map(str, flat))) == v["wire_hex"], v["label"]


def _parse_stream(answer: str):
    body, pending = answer.split("| pending ")
    out = []
    for m in re.finditer(r"(\w+)(?::NAK (\d+) (\d+) (\d+) (\d+))?(?::([0-9a-f]+))?\s", body):
        nak = tuple(int(x) for x in m.group(2, 3, 4, 5)) if m.group(2) else None
        out.append((m.group(1), nak, m.group(6)))
    return out, int(pending)


def _python_stream(data: bytes):
    dec = StreamDecoder()
    out = []
    for item in dec.feed(data):
        if isinstance(item, Frame):
            out.append(("frame", None, item.raw.hex()))
        else:
            out.append((item.kind, item.nak, None))
    return out, dec.pending


def test_every_stream_vector_with_its_naks(probe):
    for s in VECTORS["streams"]:
        items, pending = _parse_stream(probe.ask(f"stream host {s['stream_hex']}"))
        assert pending == s["pending"], s["label"]
        assert [k for k, _n, _f in items] == [e.get("error", "frame") for e in s["expect"]], s["label"]
        for (kind, nak, _f), e in zip(items, s["expect"]):
            if kind != "frame":
                want = e["nak"]
                assert nak == (None if want is None else (want["cmd_seq"], want["cmd_type"], want["error"],
                                                          want["detail"])), s["label"]


def test_a_device_receiver_answers_replies_and_events_unknown_type(probe):
    event = V._msg_wire("INPUT_SEEN", 9, 5, event_seq=9, input=0, action=1, value=0, source=0, disposition=0,
                        detail=0)
    items, _ = _parse_stream(probe.ask(f"stream device {event.hex()}"))
    assert items == [("unknown_type", (9, 0x61, cat.ENUM_VALUES["error"]["unknown_type"], 0), None)]
    items, _ = _parse_stream(probe.ask(f"stream host {event.hex()}"))
    assert [k for k, _n, _f in items] == ["frame"]


def test_the_algorithm_tables(probe):
    alg = VECTORS["algorithms"]
    for c in alg["burst_triangular"]["cases"]:
        assert probe.ask(f"burst {c['lo']} {c['mode']} {c['hi']}").split() == \
            [str(c["total"])] + [str(w) for w in c["weights"]]
    for c in alg["fire_chance"]["cases"]:
        for streak, chance in enumerate(c["chance_by_streak"]):
            assert probe.ask(f"chance {c['base']} {c['step']} {streak}") == str(chance)
    for c in alg["line_model"]["cases"]:
        assert probe.ask(f"line {c['window']} {c['d']}") == str(c["b_draws"])
    gen = alg["generator"]
    for c in gen["cases"]:
        assert probe.ask(f"rng {c['rng_seed']} {len(c['next32'])}") == " ".join(map(str, c["next32"]))
    for c in gen["uniform"]:
        assert probe.ask(f"uniform {c['rng_seed']} {c['n']} {len(c['draws'])}") == " ".join(map(str, c["draws"]))


@pytest.fixture
def rng():
    return random.Random(20261201)


def test_seeded_algorithms_agree_with_python(probe, rng):
    from unohil.protocol import algorithms as A
    for _ in range(40):
        seed = rng.randrange(1 << 32)
        lo = rng.randrange(500_000, 3_000_000)
        hi = lo + rng.randrange(0, 5_000_000)
        g = A.Pcg32(seed)
        assert probe.ask(f"countdown {seed} {lo} {hi} 5") == " ".join(str(A.countdown(g, lo, hi)) for _ in range(5))
        n = rng.randrange(1, 9)
        g = A.Pcg32(seed)
        assert probe.ask(f"pick {seed} {n} 5") == " ".join(str(g.randrange(n)) for _ in range(5))
        lo_b = rng.randrange(1, 40)
        m = rng.randrange(lo_b, 41)
        hi_b = rng.randrange(m, 41)
        g = A.Pcg32(seed)
        assert probe.ask(f"burstdraw {seed} {lo_b} {m} {hi_b} 5") == \
            " ".join(str(A.sample_burst(g, lo_b, m, hi_b)) for _ in range(5))
        w = rng.randrange(1, 100_001)
        d = rng.randrange(-w, w + 1)
        g = A.Pcg32(seed)
        assert probe.ask(f"lands {seed} {d} {w} 5") == " ".join(str(int(A.lands_on_b(g, d, w))) for _ in range(5))
        chance = rng.randrange(0, 1001)
        g = A.Pcg32(seed)
        assert probe.ask(f"fires {seed} {chance} 5") == " ".join(str(int(A.fires(g, chance))) for _ in range(5))


# ---- byte-for-byte agreement with the Python codec on random frames ----------------------------------------

def _random_message(rng, mdef):
    kw = {}
    for f in mdef.fields:
        lo, hi = f.range
        pick = (lambda: rng.choice((lo, hi, 0, rng.randint(lo, hi))))
        kw[f.name] = tuple(pick() for _ in range(f.count)) if f.count > 1 else pick()
    return mdef.cls(**kw)


def test_random_frames_encode_and_decode_as_python_does(probe, rng):
    for _ in range(40):
        for mdef in cat.MESSAGES:
            m = _random_message(rng, mdef)
            seq, t = rng.randrange(1 << 16), rng.randrange(1 << 32)
            flat = _flat(m.to_dict(), mdef)
            wire = encode(m, seq, t)
            assert probe.ask(f"encode {mdef.id} {cat.VERSION_BYTE} {seq} {t} " + " ".join(map(str, flat))) == \
                wire.hex(), m
            raw = encode_raw(m, seq, t)
            assert probe.ask(f"decode {raw.hex()}").split() == \
                [mdef.name, str(cat.VERSION_BYTE), str(seq), str(t)] + [str(x) for x in flat], m


def _damage(rng, data: bytes) -> bytes:
    b = bytearray(data)
    what = rng.randrange(6)
    if what == 0 and b:
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)           # a bit flip
    elif what == 1 and b:
        del b[rng.randrange(len(b))]                                  # a lost byte
    elif what == 2:
        b.insert(rng.randrange(len(b) + 1), rng.randrange(256))     # a stray byte
    elif what == 3:
        b += bytes(rng.randrange(1, 256) for _ in range(rng.randrange(60, 90)))   # a run too long
    return bytes(b)


def test_random_damaged_streams_are_classified_as_python_does(probe, rng):
    for _ in range(300):
        data = b""
        for _ in range(rng.randrange(1, 6)):
            mdef = rng.choice(cat.MESSAGES)
            frame = encode(_random_message(rng, mdef), rng.randrange(1 << 16), rng.randrange(1 << 32))
            data += _damage(rng, frame) if rng.random() < 0.5 else frame
        assert _parse_stream(probe.ask(f"stream host {data.hex()}")) == _python_stream(data), data.hex()


# ---- fuzzing ----------------------------------------------------------------------------------------------

def test_the_receiver_survives_a_bounded_fuzz_run(tmp_path):
    """libFuzzer with AddressSanitizer and UBSan on the receiver and decoder for 20 s from the corpus kept
    in clib/fuzz/corpus; the target aborts on any broken SPEC 2.6 promise (clib/fuzz/fuzz_rx.c).
    python -m tools.clib_fuzz --seconds N runs longer."""
    require_tool("clang", "UNOHIL_REQUIRE_CLANG")
    from tools import clib_fuzz
    result = clib_fuzz.run(20, tmp_path / "build", tmp_path)
    print(result.summary())
    assert result.returncode == 0 and not result.crashes, result.log[-3000:]
    assert result.executions > 10_000 and result.coverage > 50, result.summary()


def test_the_corpus_kept_is_the_stream_vectors(tmp_path, monkeypatch):
    from tools import clib_fuzz
    monkeypatch.setattr(clib_fuzz, "CORPUS", tmp_path)
    written = clib_fuzz.seed_corpus()
    assert len(written) == 2 * len(VECTORS["streams"])
    for path in written:
        assert (clib_fuzz.CLIB / "fuzz" / "corpus" / path.name).read_bytes() == path.read_bytes()
