"""Codec benchmarks (pytest-benchmark).

Ordinary fast tests by default (pyproject's addopts has --benchmark-disable: each body runs once).
To measure:

    pytest --benchmark-enable tests/test_bench_codec.py

With benchmarking enabled, the decode tests also check the throughput target of one core:
at least 300,000 frames/s for a stream of frames.
"""
from __future__ import annotations

import pytest

from unohil import protocol
from unohil.protocol import NONE_I32, NONE_U8, NONE_U32
from unohil.protocol.codec import Frame, StreamDecoder, decode, encode

M = protocol.msg
TARGET_FRAMES_PER_S = 300_000

#: a typical event: an input edge as the unit saw it
EVENT = M.INPUT_SEEN(event_seq=1234, input=0, action=1, value=0, source=0, disposition=0, detail=0)

#: a realistic mix of what a unit sends during a race
MIX = [
    EVENT,
    M.LIGHT(event_seq=2, light=0, mode=2, target=NONE_U8),
    M.SOUND(event_seq=3, sound=0, arg=4),
    M.STATE(event_seq=4, state=3, previous=2),
    M.SD_BEEP(event_seq=5, index=4),
    M.SD_LAUNCH(event_seq=6, toward=1, cards=2),
    M.SD_VERDICT(event_seq=7, loser=1, reason=1, cards=2, landed_a=NONE_U8, landed_b=NONE_U8,
                 press_a_us=4_321_000, press_b_us=NONE_U32, reaction_a_us=187_000, reaction_b_us=NONE_I32,
                 green_us=4_134_000, decisive_us=4_321_000, knowable_us=4_322_000),
    M.FL_BUZZER_VERDICT(event_seq=8, slowest=3, reason=1, tied_mask=8, buzzer_us=1, decisive_us=2, knowable_us=3,
                        reaction_us=(NONE_I32, 200_000, 250_000, 400_000, 180_000, 220_000, NONE_I32, NONE_I32)),
]
N_STREAM = 1000
STREAM = b"".join(encode(MIX[i % len(MIX)], i, 1_000_000 + 137 * i) for i in range(N_STREAM))


def _rate(benchmark, frames_per_call: int) -> float | None:
    if benchmark.disabled or benchmark.stats is None:
        return None
    rate = frames_per_call / benchmark.stats.stats.min
    benchmark.extra_info["frames_per_s"] = round(rate)
    return rate


def test_bench_encode_event(benchmark):
    wire = benchmark(encode, EVENT, 77, 123_456_789)
    assert wire[-1] == 0
    _rate(benchmark, 1)


def test_bench_encode_decode_event(benchmark):
    def round_trip():
        return decode(encode(EVENT, 77, 123_456_789))

    f = benchmark(round_trip)
    assert f.msg == EVENT
    _rate(benchmark, 1)


def test_bench_feed_one_frame_per_call(benchmark):
    wire = encode(EVENT, 77, 123_456_789)
    dec = StreamDecoder()
    out = benchmark(dec.feed, wire)
    assert len(out) == 1 and out[0].msg == EVENT
    rate = _rate(benchmark, 1)
    if rate is not None:
        assert rate >= TARGET_FRAMES_PER_S, f"{rate:,.0f} frames/s"


def test_bench_feed_stream(benchmark):
    dec = StreamDecoder()
    out = benchmark(dec.feed, STREAM)
    assert len(out) == N_STREAM and all(isinstance(f, Frame) for f in out)
    assert out[-1].msg == MIX[(N_STREAM - 1) % len(MIX)]
    rate = _rate(benchmark, N_STREAM)
    if rate is not None:
        assert rate >= TARGET_FRAMES_PER_S, f"{rate:,.0f} frames/s"


@pytest.mark.parametrize("chunk", [64, 4096])
def test_bench_feed_stream_in_usb_sized_chunks(benchmark, chunk):
    chunks = [STREAM[i:i + chunk] for i in range(0, len(STREAM), chunk)]

    def run():
        dec = StreamDecoder()
        n = 0
        for c in chunks:
            n += len(dec.feed(c))
        return n

    assert benchmark(run) == N_STREAM
    _rate(benchmark, N_STREAM)
