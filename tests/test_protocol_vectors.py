"""The golden vectors (fixtures/vectors/) against the codec, both ways, and against the catalogue."""
from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from unohil.protocol import algorithms as A
from unohil.protocol import catalogue as cat
from unohil.protocol.codec import Frame, FrameError, StreamDecoder, decode, decode_raw, encode, encode_raw
from unohil.protocol.framing import crc16
from tools import vectors as V

DATA = json.loads(V.JSON_PATH.read_text(encoding="utf-8"))
FRAMES = DATA["frames"]
STREAMS = DATA["streams"]


def _msg(v):
    mdef = cat.BY_NAME[v["message"]]
    return mdef.cls(**{k: tuple(x) if isinstance(x, list) else x for k, x in v["fields"].items()})


def test_files_are_up_to_date_with_the_catalogue():
    assert V.check() == [], "run: python -m tools.vectors --write"


def test_crc_check_value_in_the_file():
    assert DATA["crc_check"]["crc"] == 0x29B1 == crc16(DATA["crc_check"]["input_ascii"].encode())


def test_catalog_identity():
    assert DATA["protocol"] == f"{cat.MAJOR}.{cat.MINOR}"
    assert DATA["catalog_crc"] == cat.CATALOG_CRC


def test_every_message_type_has_a_vector_with_non_trivial_values():
    by_type = Counter(v["message"] for v in FRAMES)
    assert set(by_type) == {m.name for m in cat.MESSAGES}
    for label, name, _seq, _t, fields in V.TYPICAL:
        mdef = cat.BY_NAME[name]
        if mdef.fields and name not in ("SD_GREEN",):
            assert any(v != 0 for k, v in fields.items() if k != "event_seq") or name == "BOOT", label


def test_vectors_cover_the_interesting_values():
    def values(v):
        for x in v["fields"].values():
            yield from (x if isinstance(x, list) else [x])
    allv = [x for v in FRAMES for x in values(v)]
    assert any(x < 0 for x in allv), "a negative i32"
    assert cat.NONE_I32 in allv and cat.NONE_U32 in allv and cat.NONE_U8 in allv, "sentinels"
    assert any(isinstance(x, list) for v in FRAMES for x in v["fields"].values()), "an array field"
    assert any(len(bytes.fromhex(v["wire_hex"])) >= 60 for v in FRAMES), "a near-maximal frame"
    assert any(v["time_us"] >= 0xFFFFFF00 for v in FRAMES) and any(v["seq"] == 0xFFFF for v in FRAMES)


@pytest.mark.parametrize("v", FRAMES, ids=[v["label"] for v in FRAMES])
def test_encode_fields_gives_the_vector_bytes(v):
    m = _msg(v)
    assert encode_raw(m, v["seq"], v["time_us"]).hex() == v["raw_hex"]
    assert encode(m, v["seq"], v["time_us"]).hex() == v["wire_hex"]


@pytest.mark.parametrize("v", FRAMES, ids=[v["label"] for v in FRAMES])
def test_decode_vector_bytes_gives_the_fields(v):
    wire = bytes.fromhex(v["wire_hex"])
    for f in (decode(wire), decode_raw(bytes.fromhex(v["raw_hex"])), *StreamDecoder().feed(wire)):
        assert isinstance(f, Frame)
        assert (f.msg.NAME, f.msg.ID, f.seq, f.time_us, f.version) == (v["message"], v["id"], v["seq"],
                                                                       v["time_us"], cat.VERSION_BYTE)
        assert V.fields_of(f.msg) == v["fields"]
        assert f.raw.hex() == v["raw_hex"]


def _actual(item) -> dict:
    return V._expect_item(item)


@pytest.mark.parametrize("s", STREAMS, ids=[s["label"] for s in STREAMS])
def test_stream_vectors_whole_and_byte_by_byte(s):
    data = bytes.fromhex(s["stream_hex"])
    dec = StreamDecoder()
    assert [_actual(i) for i in dec.feed(data)] == s["expect"]
    assert dec.pending == s["pending"]
    dec = StreamDecoder()
    out = []
    for i in range(len(data)):
        out += dec.feed(data[i:i + 1])
    assert [_actual(i) for i in out] == s["expect"]
    assert dec.pending == s["pending"]


def test_stream_vectors_cover_every_error_kind_and_the_resync_cases():
    kinds = {e["error"] for s in STREAMS for e in s["expect"] if "error" in e}
    assert kinds == set(FrameError.KINDS)
    labels = {s["label"] for s in STREAMS}
    for needed in ("bad_crc", "too_short_nine_bytes", "too_long_encoded", "cobs_code_past_end", "unknown_type",
                   "bad_length_long", "bad_version_major_2", "garbage_before_first_delimiter",
                   "doubled_delimiters", "bad_crc_then_good", "truncated_then_good"):
        assert needed in labels
    # wherever a bad frame is followed by a good one, the good one decodes
    for s in STREAMS:
        if any("error" in e for e in s["expect"]) and s["label"] not in ("newer_minor_short", "bad_crc",
                                                                          "bad_crc_payload_bit"):
            assert "frame" in s["expect"][-1], s["label"]


def test_single_frame_streams_agree_with_decode():
    """decode() on a stream holding one frame gives the same frame or error kind as the stream."""
    for s in STREAMS:
        data = bytes.fromhex(s["stream_hex"])
        parts = [p for p in data.split(b"\x00")[:-1] if p]
        if len(parts) != len(s["expect"]):
            continue                                  # runs longer than a frame: the stream reports them
        for part, e in zip(parts, s["expect"]):
            try:
                got = _actual(decode(part))
            except FrameError as err:
                got = _actual(err)
            assert got == e, s["label"]


# ---- the integer algorithms -------------------------------------------------------------------------------

def test_burst_tables_match_the_reference_functions():
    for case in DATA["algorithms"]["burst_triangular"]["cases"]:
        lo, mode, hi = case["lo"], case["mode"], case["hi"]
        w = A.burst_weights(lo, mode, hi)
        assert w == case["weights"] and sum(w) == case["total"] == A.burst_total(lo, mode, hi)


@pytest.mark.parametrize("lo, mode, hi", [(lo, m, hi) for lo in (1, 2, 5) for m in range(lo, 13) for hi in
                                          range(m, 14)] + [(1, 1, 40), (1, 40, 40), (20, 20, 21)])
def test_burst_distribution_is_a_triangle(lo, mode, hi):
    w = A.burst_weights(lo, mode, hi)
    assert len(w) == hi - lo + 1 and all(x > 0 for x in w)
    peak = w[mode - lo]
    assert peak == max(w) and w.count(peak) == 1                 # a single peak, at the mode
    assert all(a < b for a, b in zip(w[:mode - lo], w[1:mode - lo + 1]))       # rising up to the mode
    assert all(a > b for a, b in zip(w[mode - lo:], w[mode - lo + 1:]))        # falling after it
    assert sum(w) == A.burst_total(lo, mode, hi)
    # r -> k covers every size exactly w(k) times
    counts = Counter(A.burst_from_draw(lo, mode, hi, r) for r in range(sum(w)))
    assert [counts[k] for k in range(lo, hi + 1)] == w


def test_default_burst_is_usually_3_to_8_and_at_most_12():
    w = A.burst_weights(1, 4, 12)
    assert w == [9, 18, 27, 36, 32, 28, 24, 20, 16, 12, 8, 4] and sum(w) == 234
    assert sum(w[2:8]) / sum(w) > 0.7
    rng = random.Random(1)
    sizes = [A.sample_burst(rng, 1, 4, 12) for _ in range(20000)]
    assert min(sizes) == 1 and max(sizes) == 12
    assert abs(sum(sizes) / len(sizes) - 1326 / 234) < 0.05


def test_burst_rejects_a_bad_shape():
    with pytest.raises(ValueError):
        A.burst_weights(5, 4, 12)
    with pytest.raises(ValueError):
        A.burst_weights(0, 0, 3)
    with pytest.raises(ValueError):
        A.burst_from_draw(1, 4, 12, 234)


def test_fire_chance_tables():
    for case in DATA["algorithms"]["fire_chance"]["cases"]:
        assert case["chance_by_streak"] == [A.fire_chance(case["base"], case["step"], k) for k in range(8)]
    assert [A.fire_chance(250, 150, k) for k in range(7)] == [250, 400, 550, 700, 850, 1000, 1000]
    rng = random.Random(2)
    assert not any(A.fires(rng, 0) for _ in range(2000))
    assert all(A.fires(rng, 1000) for _ in range(2000))


def test_line_model_tables():
    for case in DATA["algorithms"]["line_model"]["cases"]:
        w, d = case["window"], case["d"]
        on_b = sum(A.lands_on_b_from_draw(r, d, w) for r in range(2 * w))
        assert on_b == case["b_draws"] == A.cards_on_b(w, d)
    # P(B) = 1/2 + d/W, certain at |d| >= W/2, a coin at d = 0
    assert A.cards_on_b(1000, 0) == 1000 and A.cards_on_b(1000, 500) == 2000 and A.cards_on_b(1000, -500) == 0
    assert A.cards_on_b(1000, 250) == 1500


def test_reference_draws_use_one_random_number_each():
    """The reference draws exactly one U(n) per call, so emulator runs replay from a seed."""
    a, b = random.Random(9), random.Random(9)
    A.sample_burst(a, 1, 4, 12)
    b.randrange(234)
    A.lands_on_b(a, 5000, 1000)                  # certain, still one draw
    b.randrange(2000)
    A.fires(a, 1000)
    b.randrange(1000)
    assert A.countdown(a, 2_000_000, 6_000_000) == 2_000_000 + b.randrange(4_000_001)
    assert A.pick(a, [5, 1, 3]) == [1, 3, 5][b.randrange(3)]
    assert a.getstate() == b.getstate()


# ---- the reference generator of SPEC 6.0 ----

def test_the_reference_generator_is_pcg32_as_its_authors_publish_it():
    """pcg32_srandom(42, 54) and the first outputs printed by the PCG project's demo program: the
    check that our PCG32 is the one every C implementation already has."""
    g = A.Pcg32(42, 54)
    assert [g.next32() for _ in range(6)] == [0xA15C02B7, 0x7B47F409, 0xBA1D3330,
                                              0x83D2F293, 0xBFA4784B, 0xCBED606E]


class _Scripted(A.Pcg32):
    """A generator whose raw outputs are given, to watch U(n)'s rejection at work."""

    def __init__(self, outputs):
        self.outputs = list(outputs)

    def next32(self):
        return self.outputs.pop(0)


def test_uniform_rejects_the_outputs_that_would_bias_it():
    # n = 3: 2^32 mod 3 = 1, so output 0 is rejected and the next one is used
    assert _Scripted([0, 5]).randrange(3) == 2
    # n = 2^31 + 1: the lowest 2^31 - 1 outputs are rejected
    n = 0x80000001
    assert _Scripted([0x7FFFFFFE, 0x7FFFFFFF]).randrange(n) == 0x7FFFFFFF % n
    # a power of two rejects nothing
    assert _Scripted([0]).randrange(1 << 16) == 0
    with pytest.raises(ValueError):
        A.Pcg32(1).randrange(0)


def test_uniform_draws_every_value_equally_often_over_a_small_range():
    g = A.Pcg32(7)
    counts = Counter(g.randrange(6) for _ in range(60_000))
    assert set(counts) == set(range(6)) and max(counts.values()) - min(counts.values()) < 600


def test_generator_vectors_follow_the_seeding_of_spec_6():
    gen = json.loads(V.JSON_PATH.read_text(encoding="utf-8"))["algorithms"]["generator"]
    assert gen["rng_stream"] == cat.RNG_STREAM
    for case in gen["cases"]:
        g = A.Pcg32(case["rng_seed"])
        assert [g.next32() for _ in range(len(case["next32"]))] == case["next32"]
    # an implementation that forgets the rejection step gets the 2^31 + 1 case wrong
    biased = [c for c in gen["uniform"] if c["n"] == 0x80000001]
    assert biased and any(A.Pcg32(c["rng_seed"]).next32() % c["n"] != c["draws"][0] for c in biased)
    assert len({tuple(c["next32"]) for c in gen["cases"]}) == len(gen["cases"])
