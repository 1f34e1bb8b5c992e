"""Bad input, from the wire and from the user.

The emulator under anything a line or a buggy host can send (SPEC.md 2.6, 4.3): random
bytes, frames too long, frames mutated after their CRC was computed (so they reach the
later checks), valid commands with any field values, in any state, in floods. An oracle
derived from the SPEC says what must come back for each frame; the unit must answer
exactly that, never crash, never hold more than one frame's worth of bytes, and still
shake hands afterwards. Hypothesis explores (a modest number of examples in the normal
run); a fixed-seed stream of mutated frames runs in bounded time besides.

Then the user's mistakes: each one clear error naming the file:line:column or the URL,
exit status 2, and no output file half-written.
"""
import json
import os
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unohil import protocol
from unohil.emulator.inprocess import VirtualLink
from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.errors import DeviceMismatch
from unohil.protocol import FrameError, StreamDecoder, catalogue as cat
from unohil.protocol.framing import cobs_encode, crc16

KINDS = ("showdown", "flash", "launcher")
COMMANDS = [m for m in cat.MESSAGES if m.kind == "command"]
ERR = cat.ENUM_VALUES["error"]
ERR_NAME = {v: k for k, v in ERR.items()}
UNATTRIBUTED = {"bad_crc": ERR["bad_crc"], "too_long": ERR["frame_too_long"]}
ATTRIBUTED = {"bad_version": ERR["bad_version"], "unknown_type": ERR["unknown_type"], "bad_length": ERR["bad_length"]}
# SPEC 4.3: the NAKs each command may get (the emulator has every capability, so never unsupported)
MAY_NAK = {"HELLO": {"bad_version"}, "TIME_SYNC": set(), "CONFIG_GET": {"unknown_param"},
           "CONFIG_SET": {"unknown_param", "wrong_state", "bad_value"}, "STATUS_GET": set(), "EVENT_RESEND": set(),
           "INPUT": {"bad_value", "wrong_state"}, "INJECT": {"bad_value", "too_late", "queue_full"},
           "INJECT_CANCEL": set(), "RESET": {"bad_value"},
           # a game unit is no rig (SPEC 13.2): it lacks rig_lines
           "RIG_WIRE": {"unsupported"}, "RIG_EDGE": {"unsupported"}}


class Oracle:
    """What a unit of this kind must answer to the bytes it is sent, frame by frame."""

    def __init__(self, kind: str):
        self.kind = kind
        self.dec = StreamDecoder()
        self.params = {p.id: p for p in cat.params_for(kind)}
        self.inputs = set(cat.ENUM_VALUES[f"{kind}_input"].values())

    def expect(self, data: bytes) -> list:
        """One entry per reply the unit owes for data: (cmd_seq, cmd_type or None, check)."""
        out = []
        for item in self.dec.feed(data):
            if isinstance(item, FrameError):
                if item.kind in UNATTRIBUTED:
                    out.append((0xFFFF, 0xFF, _nak(UNATTRIBUTED[item.kind])))
                elif item.kind in ATTRIBUTED:
                    kind = item.kind
                    if kind == "bad_length" and item.type_id not in {m.id for m in COMMANDS}:
                        kind = "unknown_type"              # to a unit, check 6 comes first
                    out.append((item.seq, item.type_id, _nak(ATTRIBUTED[kind], 1 if kind == "bad_version" else 0)))
                continue                                   # cobs, too_short: line noise, no answer
            m = item.msg
            if m.KIND != "command":
                out.append((item.seq, m.ID, _nak(ERR["unknown_type"])))
            else:
                out.append((item.seq, m.ID, self._command_check(m)))
        return out

    def _command_check(self, m):
        name = m.NAME
        allowed = {ERR[e] for e in MAY_NAK[name]}

        def check(r):
            if r.NAME == "NAK":
                assert r.cmd_type == m.ID and r.error in allowed, f"{name} got NAK {ERR_NAME.get(r.error)}"
                if r.error == ERR["bad_version"]:
                    assert r.detail == cat.MAJOR
                elif r.error != ERR["wrong_state"]:
                    assert r.detail == 0
                return r.error
            assert r.NAME == cat.BY_NAME[name].reply, f"{name} answered by {r.NAME}"
            if r.NAME == "ACK":
                assert r.cmd_type == m.ID
            return None

        if name == "HELLO":
            return _exact(check, ERR["bad_version"] if m.host_major != cat.MAJOR else None)
        if name == "CONFIG_GET":
            return _exact(check, None if m.param in self.params else ERR["unknown_param"])
        if name == "CONFIG_SET":
            p = self.params.get(m.param)
            if p is None:
                return _exact(check, ERR["unknown_param"])
            if not p.min <= m.value <= p.max:
                return _one_of(check, {ERR["wrong_state"], ERR["bad_value"]})
        if name in ("INPUT", "INJECT") and (m.input not in self.inputs or m.action > 1):
            return _exact(check, ERR["bad_value"])
        if name == "RESET":
            return _exact(check, None if m.mode in (0, 1) else ERR["bad_value"])
        if name == "TIME_SYNC":
            return lambda r: (check(r), _eq(r.t1_host_us, m.t1_host_us))
        if name == "EVENT_RESEND":
            return lambda r: (check(r), _le(r.value, min(m.count, cat.EVENT_BUFFER)))
        return check


def _nak(error, detail=0):
    def check(r):
        assert r.NAME == "NAK" and r.error == error and r.detail == detail, \
            f"expected NAK {ERR_NAME[error]} (detail {detail}), got {r}"
    return check


def _exact(check, error):
    def f(r):
        got = check(r)
        assert got == error, f"expected {ERR_NAME.get(error, 'a reply')}, got {ERR_NAME.get(got, r.NAME)}"
    return f


def _one_of(check, errors):
    def f(r):
        assert check(r) in errors, f"expected one of {sorted(ERR_NAME[e] for e in errors)}, got {r}"
    return f


def _eq(a, b):
    assert a == b


def _le(a, b):
    assert a <= b


class Fuzzer:
    """Feeds a unit on the virtual clock and checks every reply against the oracle."""

    def __init__(self, kind: str, seed: int = 1):
        self.link = VirtualLink(kind, seed)
        self.oracle = Oracle(kind)
        self.out = StreamDecoder()
        self.replies = 0
        self.events = 0
        self._collect()

    def _collect(self) -> list:
        data, _ = self.link.read(0)
        got = []
        for f in self.out.feed(data):
            assert not isinstance(f, FrameError), f"the unit sent a bad frame: {f}"
            if f.msg.KIND == "reply":
                got.append(f.msg)
            else:
                self.events += 1
        return got

    def send(self, data: bytes, wait_us: int = 0) -> None:
        want = self.oracle.expect(data)
        self.link.write(data)
        got = self._collect()
        assert len(got) == len(want), f"{len(want)} replies owed, {len(got)} sent: {got}"
        for r, (seq, type_id, check) in zip(got, want):
            assert r.cmd_seq == seq, f"reply to seq {r.cmd_seq}, expected {seq}: {r}"
            check(r)
        self.replies += len(got)
        assert self.link.device.decoder.pending <= 63
        if wait_us:
            self.link.read(wait_us)           # time passes: stimuli and timers run (their output is events)
            self._collect()

    def handshake_still_works(self) -> None:
        self.send(b"\x00")
        d = Driver(self.link)
        ident = d.hello()
        assert ident.NAME == "IDENTITY" and d.kind == self.link.device.kind
        d.status()


# ---- frame builders ----

def raw_frame(version: int, type_id: int, seq: int, payload: bytes, time_us: int = 0) -> bytes:
    """A frame with a correct CRC whatever its header and payload say."""
    body = struct.pack("<BBHI", version, type_id, seq & 0xFFFF, time_us & 0xFFFFFFFF) + payload
    return cobs_encode(body + struct.pack("<H", crc16(body))) + b"\x00"


def command(mdef, values: list[int], seq: int) -> bytes:
    return protocol.encode(mdef.cls(*values), seq, 0)


def random_values(rng: random.Random, mdef, kind: str) -> list[int]:
    """Field values across each field's whole range, with the interesting ones often."""
    inputs = list(cat.ENUM_VALUES[f"{kind}_input"].values())
    params = [p.id for p in cat.params_for(kind)]
    out = []
    for f in mdef.fields:
        lo, hi = f.range
        v = rng.randint(lo, hi)
        if rng.random() < 0.6:
            if f.name == "input":
                v = rng.choice(inputs)
            elif f.name in ("action", "mode"):
                v = rng.randrange(2)
            elif f.name == "param":
                v = rng.choice(params)
            elif f.name == "host_major":
                v = cat.MAJOR
            elif f.name == "value" and mdef.name == "CONFIG_SET":
                p = {q.id: q for q in cat.params_for(kind)}.get(out[0])
                if p is not None:
                    v = rng.randint(p.min, min(p.max, p.min + 2 * (p.default - p.min) + 10))
            elif f.name == "value":
                v = rng.randrange(4)
        out.append(v)
    return out


def mutate(rng: random.Random, frame: bytes) -> bytes:
    """One mutation of an encoded frame: what a line or a buggy host does to it."""
    op = rng.randrange(9)
    b = bytearray(frame)
    if op == 0:                                                  # a flipped bit (CRC catches it)
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1:                                                # a lost byte
        del b[rng.randrange(len(b))]
    elif op == 2:                                                # an extra byte
        b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
    elif op == 3:                                                # cut short
        b = b[:rng.randrange(1, len(b))]
    elif op == 4:                                                # twice
        b = b + b
    elif op in (5, 6, 7):                                        # a different header or length, CRC redone
        raw = protocol.codec.cobs_decode(bytes(b[:-1]))[:-2]
        version, type_id, seq, t = struct.unpack_from("<BBHI", raw)
        payload = raw[8:]
        if op == 5:
            version = rng.choice((0x00, 0x20, 0x11, 0xF0, rng.randrange(256)))
        elif op == 6:
            type_id = rng.choice((0x00, 0x0B, 0x3F, 0x40, 0x45, 0x60, 0x76, 0xFF, rng.randrange(256)))
        else:
            payload = payload + bytes(rng.randrange(1, 4)) if rng.random() < 0.5 else payload[:-1]
        return raw_frame(version, type_id, seq, payload, t)
    else:                                                        # a run far too long
        b = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(64, 300))) + b"\x00"
    return bytes(b)


def fuzz_stream(rng: random.Random, kind: str, n: int):
    """n chunks: valid commands with any values, mutated ones, noise; sometimes time passes."""
    for i in range(n):
        mdef = rng.choice(COMMANDS)
        frame = command(mdef, random_values(rng, mdef, kind), rng.randrange(0x10000))
        x = rng.random()
        if x < 0.45:
            chunk = frame
        elif x < 0.9:
            chunk = mutate(rng, frame)
        else:
            chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        yield chunk, (rng.choice((1000, 50_000, 2_000_000)) if rng.random() < 0.2 else 0)


# ---- the unit under bad input ----

@pytest.mark.parametrize("kind", KINDS)
def test_bounded_fuzz_run_every_frame_answered_as_the_spec_says(kind):
    """A fixed-seed stream of 20,000 mutated, random and valid frames per unit kind (a second or two)."""
    rng = random.Random(f"fuzz {kind}")
    f = Fuzzer(kind)
    for chunk, wait in fuzz_stream(rng, kind, 20_000):
        f.send(chunk, wait)
    assert f.replies > 12_000 and f.events > 500
    f.handshake_still_works()


chunks = st.one_of(
    st.binary(max_size=120),
    st.binary(min_size=64, max_size=200).map(lambda b: b.replace(b"\x00", b"\x01")),
    st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 0xFFFF), st.binary(max_size=60))
      .map(lambda t: raw_frame(*t)),
    st.tuples(st.sampled_from(COMMANDS), st.randoms(use_true_random=False), st.integers(0, 0xFFFF))
      .map(lambda t: command(t[0], random_values(t[1], t[0], "showdown"), t[2])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), stream=st.lists(st.tuples(chunks, st.sampled_from((0, 0, 0, 3000, 400_000))),
                                                      max_size=25))
def test_any_bytes_any_state_the_unit_answers_per_spec_and_keeps_serving(kind, stream):
    f = Fuzzer(kind)
    for chunk, wait in stream:
        f.send(chunk, wait)
    f.handshake_still_works()


def test_a_flood_of_commands_is_answered_one_by_one_in_order():
    f = Fuzzer("showdown")
    status = cat.BY_NAME["STATUS_GET"]
    f.send(b"".join(command(status, [], seq) for seq in range(5000)))
    assert f.replies == 5000
    inject = cat.BY_NAME["INJECT"]
    now = f.link.device.now()
    flood = b"".join(command(inject, [now + 1_000_000 + i, 0, 1, 0], 0x100 + i) for i in range(40))
    want = f.oracle.expect(flood)
    f.link.write(flood)
    got = f._collect()
    assert [r.cmd_seq for r in got] == [s for s, _, _ in want]
    assert [r.NAME for r in got] == ["ACK"] * cat.INJECT_QUEUE + ["NAK"] * (40 - cat.INJECT_QUEUE)
    assert {r.error for r in got if r.NAME == "NAK"} == {ERR["queue_full"]}
    f.handshake_still_works()


def test_valid_frames_in_the_wrong_state_and_out_of_range_get_their_naks():
    f = Fuzzer("showdown")
    m = {n: cat.BY_NAME[n] for n in ("INPUT", "CONFIG_SET", "RESET", "HELLO", "CONFIG_GET", "INJECT")}
    inp = cat.ENUM_VALUES["showdown_input"]
    cases = [
        (command(m["INPUT"], [inp["timer"], 1, 0], 1), "wrong_state"),          # no cards in the tray
        (command(m["INPUT"], [inp["load_cards"], 1, 0], 2), "bad_value"),       # zero cards
        (command(m["INPUT"], [9, 1, 0], 3), "bad_value"),                       # no such input
        (command(m["INPUT"], [inp["paddle_a"], 2, 0], 4), "bad_value"),         # no such action
        (command(m["RESET"], [2], 5), "bad_value"),
        (command(m["HELLO"], [2, 0], 6), "bad_version"),
        (command(m["CONFIG_GET"], [0x20], 7), "unknown_param"),                 # a Flash parameter
        (command(m["CONFIG_SET"], [0x13, 0], 8), "bad_value"),                  # tie window 0
        (command(m["INJECT"], [0, inp["paddle_a"], 1, 0], 9), "too_late"),
    ]
    for frame, error in cases:
        want = f.oracle.expect(frame)
        f.link.write(frame)
        (r,) = f._collect()
        assert r.NAME == "NAK" and ERR_NAME[r.error] == error, (error, r)
        want[0][2](r)
    f.send(command(m["INPUT"], [inp["load_cards"], 1, 2], 10))
    f.send(command(m["INPUT"], [inp["timer"], 1, 0], 11))
    f.link.write(command(m["CONFIG_SET"], [0x13, 2000], 12))                   # during the countdown
    (r,) = f._collect()
    assert ERR_NAME[r.error] == "wrong_state" and r.detail == cat.ENUM_VALUES["showdown_state"]["countdown"]
    f.handshake_still_works()


def test_a_reply_or_event_id_with_a_wrong_length_is_unknown_type_to_a_unit():
    f = Fuzzer("launcher")
    for type_id, payload in ((0x40, b"\x01\x02\x03"), (0x76, b""), (0xA4, bytes(30))):
        f.link.write(raw_frame(0x10, type_id, 77, payload))
        (r,) = f._collect()
        assert (r.NAME, r.cmd_seq, r.cmd_type, ERR_NAME[r.error]) == ("NAK", 77, type_id, "unknown_type")


# ---- the user's mistakes: one clear error each, exit status 2, nothing half-written ----

GOOD = """\
name: clean win
unit: showdown
steps:
  - load: 2
  - press: timer
    at: start + 1000
  - press: paddle_a
    at: green + 180000
expect:
  verdict: {loser: b, reason: first_press}
"""


def run_cli(tmp_path, capsys, *args):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    rc = main(["run", *args, "-q", "--json", str(out / "r.json"), "--junit", str(out / "r.xml")])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err, sorted(os.listdir(out))


def test_malformed_yaml_is_one_error_at_its_position_and_nothing_runs(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: clean\nunit: showdown\nsteps: [{load: 2}\nexpect: {}\n")
    rc, text, written = run_cli(tmp_path, capsys, str(bad))
    assert rc == 2 and written == []
    assert f"{bad}:4:" in text and "malformed YAML" in text and "nothing was run" in text


def test_an_unknown_unit_is_named_with_its_position(tmp_path, capsys):
    bad = tmp_path / "u.yaml"
    bad.write_text(GOOD.replace("unit: showdown", "unit: toaster"))
    rc, text, written = run_cli(tmp_path, capsys, str(bad))
    assert rc == 2 and written == []
    assert f"{bad}:2:7: unit: unknown unit 'toaster'" in text


def test_an_impossible_schedule_is_a_scenario_error_naming_the_step(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")           # the message on one line, whatever the path's length
    bad = tmp_path / "late.yaml"
    bad.write_text(GOOD.replace("expect:", "  - press: paddle_b\n    at: start + 2000\nexpect:"))
    rc, text, written = run_cli(tmp_path, capsys, str(bad))
    assert rc == 2
    assert f"{bad}:9: the step at line 9 (press paddle_b at start + 2000) is at 2000 us" in " ".join(text.split())
    assert written == ["r.json", "r.xml"]                    # whole files, saying what happened
    doc = json.loads((tmp_path / "out" / "r.json").read_text())
    assert doc["scenarios"][0]["status"] == "error"


@pytest.mark.parametrize("url, words", [
    ("socket://127.0.0.1:99999", "give a host and a port from 1 to 65535"),
    ("socket://localhost", "give a host and a port from 1 to 65535"),
    ("rfc2217://:7000", "give a host and a port from 1 to 65535"),
    ("emu://showdown?faults=stall=1", "expected stall=P:DURATION"),
    ("tcp://127.0.0.1:7000", "unknown scheme 'tcp'"),
])
def test_a_bad_url_or_port_is_one_error_naming_it(tmp_path, capsys, url, words):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    rc, text, written = run_cli(tmp_path, capsys, str(good), "--device", url)
    assert rc == 2 and written == []
    assert f"error: {url}: " in text and words in text


def test_a_bad_port_for_the_emulator_is_exit_2(capsys):
    assert main(["emulate", "showdown", "--tcp", "127.0.0.1:99999"]) == 2
    assert "ports go up to 65535" in capsys.readouterr().err


def test_a_device_of_the_wrong_kind_is_one_error(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    rc, text, written = run_cli(tmp_path, capsys, str(good), "--device", "emu://flash")
    assert rc == 2 and written == []
    assert "emu://flash is a flash unit: none of the selected scenarios runs on it (they need showdown)" in text
    with pytest.raises(DeviceMismatch, match="this is a flash unit, not a showdown"):
        Driver.open("emu://flash", kind="showdown")


class OtherFirmware:
    """A unit built from another catalogue or protocol: its frames rewritten on the way out."""

    def __init__(self, link, rewrite):
        self.inner, self.virtual, self.url, self.rewrite = link, link.virtual, link.url, rewrite
        self.dec = StreamDecoder()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read(self, timeout_us):
        data, t = self.inner.read(timeout_us)
        out = b""
        for f in self.dec.feed(data):
            version, m = self.rewrite(f.version, f.msg)
            raw = protocol.codec.encode_raw(m, f.seq, f.time_us, version)
            out += cobs_encode(raw) + b"\x00"
        return out, t


IDENTITY = "IDENTITY"
CASES = {
    "catalogue": (lambda v, m: (v, m._replace(catalog_crc=m.catalog_crc ^ 0x5A5A) if m.NAME == IDENTITY else m),
                  "catalogue differs from this harness's (CRC"),
    "major in identity": (lambda v, m: (v, m._replace(proto_major=2) if m.NAME == IDENTITY else m),
                          "the device speaks protocol 2.0, this harness 1.0"),
    "nak bad_version": (lambda v, m: (v, cat.BY_NAME["NAK"].cls(m.cmd_seq, 0x01, ERR["bad_version"], 2)
                                      if m.NAME == IDENTITY else m),
                        "the device speaks protocol 2.x and refused this harness's 1.0"),
    "frames of major 2": (lambda v, m: (0x20, m), "answers in frames of another protocol version"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_protocol_mismatch_is_one_clear_error(case, tmp_path, capsys, monkeypatch):
    from unohil.harness import links
    rewrite, words = CASES[case]
    monkeypatch.setitem(links._OPENERS, "otherfw",
                        lambda url: OtherFirmware(VirtualLink("showdown"), rewrite))
    with pytest.raises(DeviceMismatch, match=words.replace("(", r"\(")):
        Driver.open("otherfw://x")
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    rc, text, written = run_cli(tmp_path, capsys, str(good), "--device", "otherfw://x")
    assert rc == 2 and written == [] and words in " ".join(text.split())


@pytest.mark.parametrize("flag, path", [
    ("--json", "missing/dir/r.json"), ("--junit", "missing/r.xml"), ("--trace", "a_file"), ("--json", "."),
])
def test_an_unwritable_output_is_refused_before_running_and_nothing_is_written(tmp_path, capsys, flag, path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    (tmp_path / "a_file").write_text("not a directory")
    before = sorted(os.listdir(tmp_path))
    assert main(["run", str(good), "-q", flag, str(tmp_path / path)]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {tmp_path / path}" in err
    assert sorted(os.listdir(tmp_path)) == before
