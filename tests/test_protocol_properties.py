"""Property tests of the codec and the stream decoder (hypothesis).

Example counts are kept modest: the whole protocol suite must stay fast on a 2-core CI runner.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from unohil.protocol import catalogue as cat
from unohil.protocol.codec import Frame, FrameError, StreamDecoder, decode, decode_raw, encode, encode_raw

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_RUN = cat.MAX_ENCODED - 1


def _field(f: cat.FieldDef):
    lo, hi = f.range
    ints = st.integers(lo, hi)
    if f.count > 1:
        return st.tuples(*[ints] * f.count)
    return ints


def message(mdef: cat.MessageDef):
    return st.builds(mdef.cls, **{f.name: _field(f) for f in mdef.fields})


any_message = st.sampled_from(cat.MESSAGES).flatmap(message)
seqs = st.integers(0, 0xFFFF)
times = st.integers(0, 0xFFFFFFFF)


@st.composite
def frames(draw):
    m = draw(any_message)
    return m, draw(seqs), draw(times)


def _same(a, b) -> bool:
    """Two decoder outputs are the same: equal frames, errors of the same kind."""
    if isinstance(a, Frame) and isinstance(b, Frame):
        return a == b and a.raw == b.raw
    if isinstance(a, FrameError) and isinstance(b, FrameError):
        return a.kind == b.kind
    return False


def _same_list(xs, ys) -> bool:
    return len(xs) == len(ys) and all(_same(x, y) for x, y in zip(xs, ys))


def feed_chunks(data: bytes, cuts) -> tuple[list, StreamDecoder]:
    dec = StreamDecoder()
    out = []
    prev = 0
    for c in sorted(set(cuts)) + [len(data)]:
        out += dec.feed(data[prev:c])
        assert dec.pending <= MAX_RUN
        prev = c
    return out, dec


# ---- round trips -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mdef", cat.MESSAGES, ids=lambda m: m.name)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_message_round_trips(mdef, data):
    m = data.draw(message(mdef))
    seq, t = data.draw(seqs), data.draw(times)
    wire = encode(m, seq, t)
    assert wire[-1] == 0 and 0 not in wire[:-1]
    assert len(wire) <= cat.MAX_ENCODED
    f = decode(wire)
    assert (f.msg, f.seq, f.time_us, f.version) == (m, seq, t, cat.VERSION_BYTE)
    assert type(f.msg) is mdef.cls
    assert f.raw == encode_raw(m, seq, t)
    assert decode_raw(f.raw) == f
    assert decode(wire[:-1]) == f                  # the delimiter is optional for decode()
    (g,) = StreamDecoder().feed(wire)
    assert g == f


@SETTINGS
@given(st.lists(frames(), min_size=1, max_size=12))
def test_many_frames_round_trip_in_one_stream(items):
    data = b"".join(encode(m, s, t) for m, s, t in items)
    out = StreamDecoder().feed(data)
    assert [(f.msg, f.seq, f.time_us) for f in out] == items


# ---- hostile input ---------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_decode_raises_only_frame_error(data):
    for fn in (decode, decode_raw):
        try:
            f = fn(data)
        except FrameError as err:
            assert err.kind in FrameError.KINDS
        else:
            assert isinstance(f, Frame)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_random_streams_never_raise_and_stay_bounded(chunks):
    dec = StreamDecoder()
    total = 0
    for c in chunks:
        out = dec.feed(c)
        total += len(c)
        assert all(isinstance(i, (Frame, FrameError)) for i in out)
        assert dec.pending <= MAX_RUN
    assert dec.stats.bytes_in == total
    # every byte is accounted for: decoded, dropped, a delimiter or still pending
    s = dec.stats
    assert s.dropped_bytes + dec.pending <= total


@settings(max_examples=80, deadline=None)
@given(st.binary(min_size=1, max_size=64).map(lambda b: b.replace(b"\x00", b"\x01")),
       st.integers(1, 40))
def test_long_runs_without_delimiter_are_discarded_once(unit, repeat):
    """A run longer than one frame produces exactly one too_long error, wherever it is cut."""
    run = (unit * (MAX_RUN // len(unit) + 2) * repeat)[: MAX_RUN + repeat]
    good = encode(cat.BY_NAME["STATUS_GET"].cls(), 7, 7)
    data = run + b"\x00" + good
    whole = StreamDecoder().feed(data)
    assert [getattr(i, "kind", None) for i in whole] == ["too_long", None]
    assert whole[1].seq == 7
    bytewise, dec = feed_chunks(data, range(1, len(data)))
    assert _same_list(whole, bytewise)


# ---- resynchronisation -----------------------------------------------------------------------------

@st.composite
def corrupted_stream(draw):
    items = draw(st.lists(frames(), min_size=2, max_size=8))
    wires = [encode(m, s, t) for m, s, t in items]
    k = draw(st.integers(0, len(wires) - 1))
    damaged = bytearray(wires[k])
    how = draw(st.sampled_from(["flip", "insert", "both"]))
    lo = hi = None
    if how in ("flip", "both"):
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(damaged) - 1))
            damaged[i] ^= 1 << draw(st.integers(0, 7))
            lo = i if lo is None else min(lo, i)
            hi = i + 1 if hi is None else max(hi, i + 1)
    if how in ("insert", "both"):
        junk = draw(st.binary(min_size=1, max_size=80))
        i = draw(st.integers(0, len(damaged) - 1))        # before the frame's own delimiter
        damaged[i:i] = junk
        if lo is not None:                            # each end moves when the junk lands before it
            lo += len(junk) if lo >= i else 0
            hi += len(junk) if hi > i else 0
        lo = i if lo is None else min(lo, i)
        hi = i + len(junk) if hi is None else max(hi, i + len(junk))
    assume(bytes(damaged) != wires[k])
    prefix = b"".join(wires[:k])
    stream = prefix + bytes(damaged) + b"".join(wires[k + 1:])
    return items, wires, k, stream, len(prefix) + lo, len(prefix) + hi


def _junk_between_flips() -> tuple:
    """Flips before and after the junk, the later ones zeroing a byte and the delimiter: the
    damage ends len(junk) bytes later than it did before the insertion."""
    items = [(cat.BY_NAME["STATUS_GET"].cls(), 1, 0x01020304), (cat.BY_NAME["STATUS_GET"].cls(), 2, 5)]
    wires = [encode(m, sq, t) for m, sq, t in items]
    damaged = bytearray(wires[0])
    end = len(damaged) - 1
    zeroed = next(j for j in range(2, end) if damaged[j] & (damaged[j] - 1) == 0)
    damaged[1] ^= 1
    damaged[zeroed] = 0
    damaged[end] ^= 1
    junk = b"\x07" * 20
    damaged[zeroed - 1:zeroed - 1] = junk
    return items, wires, 0, bytes(damaged) + wires[1], 1, end + 1 + len(junk)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted_stream())
@example(_junk_between_flips())
def test_decoder_resynchronises_after_a_damaged_frame(case):
    items, wires, k, stream, lo, hi = case
    out, dec = feed_chunks(stream, [])
    frames_out = [i for i in out if isinstance(i, Frame)]
    # frames before the damage are untouched
    before = [(m, s, t) for m, s, t in items[:k]]
    assert [(f.msg, f.seq, f.time_us) for f in frames_out[:k]] == before
    # every frame that starts after the first delimiter at or after the damage decodes, in order
    resync = stream.find(b"\x00", hi)
    if resync < 0:
        resync = len(stream)
    starts, pos = [], 0
    for w in wires:
        starts.append(pos)
        pos += len(w)
    # positions of the undamaged frames after k, shifted by the length change of frame k
    shift = len(stream) - sum(len(w) for w in wires)
    after = [(items[j], starts[j] + shift) for j in range(k + 1, len(wires))]
    expected_tail = [it for it, start in after if start > resync]
    got_tail = [(f.msg, f.seq, f.time_us) for f in frames_out[len(frames_out) - len(expected_tail):]] \
        if expected_tail else []
    assert got_tail == expected_tail
    # and chunking does not change anything
    bytewise, _ = feed_chunks(stream, range(1, len(stream)))
    assert _same_list(out, bytewise)


# ---- chunking ----------------------------------------------------------------------------------------

@st.composite
def mixed_stream(draw):
    """Good frames with junk, delimiter runs and over-long runs between them."""
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["frame", "frame", "frame", "junk", "zeros", "long"]))
        if kind == "frame":
            m, s, t = draw(frames())
            parts.append(encode(m, s, t))
        elif kind == "junk":
            parts.append(draw(st.binary(max_size=40)) + b"\x00")
        elif kind == "zeros":
            parts.append(b"\x00" * draw(st.integers(1, 4)))
        else:
            parts.append(b"\x55" * draw(st.integers(MAX_RUN - 2, 3 * MAX_RUN)) + b"\x00")
    return b"".join(parts)


@SETTINGS
@given(mixed_stream())
def test_every_two_way_split_gives_the_same_output(stream):
    whole, dec = feed_chunks(stream, [])
    for cut in range(len(stream) + 1):
        out, d2 = feed_chunks(stream, [cut])
        assert _same_list(whole, out), cut
        assert d2.stats.as_dict() == dec.stats.as_dict()
        assert d2.pending == dec.pending


@SETTINGS
@given(mixed_stream(), st.lists(st.integers(0, 400), max_size=20))
def test_random_chunkings_give_the_same_output(stream, cuts):
    whole, dec = feed_chunks(stream, [])
    out, d2 = feed_chunks(stream, [c for c in cuts if c <= len(stream)])
    assert _same_list(whole, out)
    assert d2.stats.as_dict() == dec.stats.as_dict()
    bytewise, d3 = feed_chunks(stream, range(1, len(stream)))
    assert _same_list(whole, bytewise)
    assert d3.stats.as_dict() == dec.stats.as_dict()


def test_one_64k_chunk_equals_byte_at_a_time():
    import random
    rng = random.Random(5)
    wires = []
    while sum(map(len, wires)) < 65536:
        mdef = rng.choice(cat.MESSAGES)
        vals = {}
        for f in mdef.fields:
            lo, hi = f.range
            v = [rng.randint(lo, hi) for _ in range(f.count)]
            vals[f.name] = tuple(v) if f.count > 1 else v[0]
        w = encode(mdef.cls(**vals), rng.randrange(65536), rng.randrange(1 << 32))
        if rng.random() < 0.05:                      # sprinkle damage
            b = bytearray(w)
            b[rng.randrange(len(b))] ^= 0x40
            w = bytes(b)
        wires.append(w)
    stream = b"".join(wires)[:65536]
    whole, dec = feed_chunks(stream, [])
    assert dec.pending <= MAX_RUN
    out = []
    d2 = StreamDecoder()
    for i in range(len(stream)):
        out += d2.feed(stream[i:i + 1])
        assert d2.pending <= MAX_RUN
    assert _same_list(whole, out)
    assert d2.stats.as_dict() == dec.stats.as_dict()
    assert dec.stats.frames > 2000
