"""Conformance checks of SPEC 2: framing and bad input."""
from __future__ import annotations

from unohil.protocol import catalogue as cat, devtime, encode, msg
from unohil.protocol.framing import cobs_encode

from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import ACTION, expect, expect_nak, raw_frame, changes_nothing, show


@check("2", "leading and doubled 0x00 delimiters are ignored")
def empty_frames(cs):
    w = cs.w
    seq = w.next_seq()
    n = len(w.frames)
    w.send_raw(b"\x00\x00\x00" + encode(msg.STATUS_GET(), seq, 0) + b"\x00\x00", {seq: ("STATUS_GET", 5)})
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "STATUS", "no STATUS for a STATUS_GET between empty frames")
    extra = [f for f in w.quiet() + w.frames[n:] if f.msg.NAME == "NAK"]
    expect(not extra, f"empty frames were answered: {', '.join(show(f) for f in extra)}")


@check("2", "a frame written one byte at a time is answered")
def byte_at_a_time(cs):
    w = cs.w
    seq = w.next_seq()
    w.sent[seq] = ("CONFIG_GET", msg.CONFIG_GET.ID)
    for b in encode(msg.CONFIG_GET(param=cat.PARAMS_BY_NAME["rng_seed"].id), seq, 0):
        w.link.write(bytes([b]))
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "CONFIG_VALUE",
           f"a CONFIG_GET written byte by byte: {show(r) if r else 'no reply'}")


@check("2", "bad CRC: unattributed NAK bad_crc, the command is not acted on")
def bad_crc(cs):
    w = cs.w
    seq = w.next_seq()
    n_un = len(w.unattributed)
    # a RESET new_game: a unit that acts on it before its CRC is checked shows it in a STATE event
    with changes_nothing(w, "frames refused as bad_crc"):
        w.send_raw(raw_frame(msg.RESET.ID, bytes([cat.ENUM_VALUES["reset_mode"]["new_game"]]), seq, bad_crc=True))
        probe = w.command(msg.STATUS_GET(), expect="STATUS")
    naks = w.unattributed[n_un:]
    expect(len(naks) == 1, f"{len(naks)} unattributed NAKs for one bad-CRC frame, expected 1")
    expect_nak(naks[0], 0xFF, 0xFFFF, "bad_crc")
    expect(naks[0].host_us <= probe.host_us and w.frames.index(naks[0]) < w.frames.index(probe),
           "the NAK bad_crc came after the reply to the next command")
    expect(seq not in w.replies, f"a frame with a bad CRC was answered as seq {seq}")


@check("2", "more than 63 bytes without a delimiter: one unattributed NAK frame_too_long")
def too_long(cs):
    w = cs.w
    n_un = len(w.unattributed)
    w.send_raw(b"\x00" + bytes([0x41]) * 100 + b"\x00")
    w.command(msg.STATUS_GET(), expect="STATUS")
    w.quiet()
    naks = w.unattributed[n_un:]
    expect(len(naks) == 1, f"{len(naks)} NAKs for one 100-byte run without delimiter, expected exactly 1")
    expect_nak(naks[0], 0xFF, 0xFFFF, "frame_too_long")


@check("2", "COBS errors and too-short frames: no answer, next frame answered")
def noise(cs):
    w = cs.w
    n = len(w.frames)
    cobs_error = bytes([0x09, 0x01, 0x02]) + b"\x00"          # a code byte pointing past the end
    short = cobs_encode(bytes([0x10, 0x05, 0x01, 0x00, 0x07])) + b"\x00"   # 5 decoded bytes < 10
    w.send_raw(cobs_error + short)
    r = w.command(msg.STATUS_GET(), expect="STATUS")
    w.quiet()
    # a second reply to the STATUS_GET itself is not an answer to the noise (one_reply_each judges it)
    other = [f for f in w.frames[n:] if f.msg.KIND == "reply" and f.msg.cmd_seq != r.msg.cmd_seq]
    expect(not other, f"line noise was answered: {', '.join(show(f) for f in other)}")


@check("2", "resync: garbage or a partial frame, a delimiter, then a frame that is answered")
def resync(cs):
    w = cs.w
    garbage = bytes([0x55, 0xAA, 0x13, 0x37] * 5)
    seq = w.next_seq()
    w.send_raw(garbage + b"\x00" + encode(msg.STATUS_GET(), seq, 0), {seq: ("STATUS_GET", 5)})
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "STATUS", "no STATUS for a STATUS_GET after garbage + delimiter")
    partial = encode(msg.CONFIG_GET(param=1), w.next_seq(), 0)[:7]
    seq = w.next_seq()
    w.send_raw(partial + b"\x00" + encode(msg.STATUS_GET(), seq, 0), {seq: ("STATUS_GET", 5)})
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "STATUS", "no STATUS for a STATUS_GET after a partial frame "
                                                     "and a delimiter")


@check("2", "header major version 2: NAK bad_version with seq and type, detail 1")
def header_version(cs):
    w = cs.w
    seq = w.next_seq()
    w.send_raw(raw_frame(msg.STATUS_GET.ID, b"", seq, version=0x20), {seq: ("STATUS_GET", msg.STATUS_GET.ID)})
    r = w.reply(seq)
    expect(r is not None, "no answer to a frame of protocol 2.0")
    expect_nak(r, msg.STATUS_GET.ID, seq, "bad_version", cat.MAJOR, "STATUS_GET with header version 0x20")


@check("2", "unknown type, a reply id, an event id: NAK unknown_type with seq and type")
def unknown_type(cs):
    w = cs.w
    for type_id, what in ((0x3F, "unused command id 0x3F"), (msg.ACK.ID, "ACK (a reply) sent to the device"),
                          (msg.BOOT.ID, "BOOT (an event) sent to the device"), (0xEE, "unknown id 0xEE")):
        size = cat.BY_ID[type_id].size if type_id in cat.BY_ID else 0
        seq = w.next_seq()
        w.send_raw(raw_frame(type_id, bytes(size), seq), {seq: (what, type_id)})
        r = w.reply(seq)
        expect(r is not None, f"no answer to {what}")
        expect_nak(r, type_id, seq, "unknown_type", 0, what)


@check("2", "every command one byte too long and one byte short: NAK bad_length, and nothing acted on")
def bad_length(cs):
    w = cs.w
    examples = _acting_commands(cs)
    seed = w.command(msg.CONFIG_GET(param=cat.PARAMS_BY_NAME["rng_seed"].id), expect="CONFIG_VALUE").msg.value
    done = []
    with changes_nothing(w, "frames refused as bad_length"):
        for mdef in cat.MESSAGES:
            if mdef.kind != "command":
                continue
            # The payload a command that changes something would carry, one byte longer or shorter: a
            # unit that acts on a frame it refused shows it in its state, events or configuration.
            payload = mdef.struct.pack(*examples[mdef.name]) if mdef.name in examples else bytes(mdef.size)
            cases = [payload + b"\x00"] + ([payload[:-1]] if mdef.size else [])
            for body in cases:
                seq = w.next_seq()
                w.send_raw(raw_frame(mdef.id, body, seq), {seq: (mdef.name, mdef.id)})
                r = w.reply(seq)
                what = f"{mdef.name} with {len(body)} payload bytes (expects {mdef.size})"
                expect(r is not None, f"no answer to {what}")
                expect_nak(r, mdef.id, seq, "bad_length", 0, what)
                done.append(what)
    now = w.command(msg.CONFIG_GET(param=cat.PARAMS_BY_NAME["rng_seed"].id), expect="CONFIG_VALUE").msg.value
    expect(now == seed, f"frames refused as bad_length changed rng_seed: {seed} -> {now}")
    return f"{len(done)} frames"


def _acting_commands(cs) -> dict:
    """For each command that changes the unit, one that would (as field tuples)."""
    name, action, value = cs.recipe["stimulus"]
    inp = cs.input_id(name)
    far = devtime.wrap(cs.w.last_dev_time() + 60_000_000)
    return {
        "RESET": msg.RESET(mode=cat.ENUM_VALUES["reset_mode"]["reboot"]),
        "INPUT": msg.INPUT(input=inp, action=ACTION[action], value=value),
        "INJECT": msg.INJECT(at_us=far, input=inp, action=ACTION[action], value=value),
        "CONFIG_SET": msg.CONFIG_SET(param=cat.PARAMS_BY_NAME["rng_seed"].id, value=cs.boot_seed ^ 0x5A5A5A5A),
    }
