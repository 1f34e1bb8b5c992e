"""Conformance checks of SPEC 4.2: the handshake and versions."""
from __future__ import annotations

from unohil.protocol import catalogue as cat, devtime, msg

from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import ACTION, changes_nothing, expect, raw_frame, show


@check("4.2", "IDENTITY fields: kind, protocol version, catalog_crc, boot_id, caps, capacities")
def identity(cs):
    i = cs.ident
    expect(i.proto_major == cat.MAJOR, f"proto_major {i.proto_major}, expected {cat.MAJOR}")
    if i.proto_minor == cat.MINOR:
        expect(i.catalog_crc == cat.CATALOG_CRC,
               f"catalog_crc {i.catalog_crc:#06x}, protocol {cat.MAJOR}.{cat.MINOR} has {cat.CATALOG_CRC:#06x}")
        # the defined bits, not a run from 0: 12 to 14 are the Flash base's forms (FL-20..FL-22)
        known = sum(1 << bit for bit in cat.ENUM_VALUES["capability"].values())
        expect(i.caps & ~known == 0, f"caps {i.caps:#06x} has bits that protocol 1.0 does not define")
    expect(i.boot_id != 0, "boot_id is 0")
    expect(i.event_buffer >= cat.EVENT_BUFFER, f"event_buffer {i.event_buffer} < {cat.EVENT_BUFFER}")
    expect(i.inject_queue >= 1, "inject_queue is 0")
    k = cs.kind
    if k == "showdown":
        expect(i.players == 2 and i.card_capacity >= 1, f"showdown: players {i.players} (expected 2), "
                                                         f"card_capacity {i.card_capacity} (expected >= 1)")
    elif k == "flash":
        expect(i.card_capacity == 0 and 2 <= i.players <= 8,
               f"flash: card_capacity {i.card_capacity} (expected 0), players {i.players} (expected 2..8)")
    else:
        expect(i.players == 0 and i.card_capacity >= 1, f"launcher: players {i.players} (expected 0), "
                                                         f"card_capacity {i.card_capacity} (expected >= 1)")
    st = cs.w.command(msg.STATUS_GET(), expect="STATUS").msg
    expect(st.boot_id == i.boot_id, "STATUS.boot_id differs from IDENTITY.boot_id")
    return f"{k}, protocol {i.proto_major}.{i.proto_minor}, firmware {i.fw_major}.{i.fw_minor}.{i.fw_patch}, " \
           f"serial {i.serial}, caps {i.caps:#06x}"


@check("4.2", "IDENTITY.caps: no capability of another unit kind (PR-4)", decisions=("PR-4",),
       when=lambda cs: any(c not in cat.UNITS[cs.kind].capabilities for c in cat.ENUM_VALUES["capability"]))
def caps_of_the_kind(cs):
    foreign = [c for c in cat.ENUM_VALUES["capability"]
               if c not in cat.UNITS[cs.kind].capabilities and cat.has_capability(cs.ident.caps, c)]
    expect(not foreign, f"caps {cs.ident.caps:#06x} sets {', '.join(foreign)}, not a capability of the "
                        f"{cs.kind} unit: hosts would look for a behaviour it cannot have")


@check("4.2", "HELLO with another host_major: NAK bad_version, detail = device major")
def hello_version(cs):
    m = msg.HELLO(host_major=cat.MAJOR + 1, host_minor=0)
    with changes_nothing(cs.w, "HELLOs refused as bad_version"):
        cs.w.nak(m, "bad_version", cat.MAJOR)


@check("4.2", "a second HELLO answers the same boot_id and changes nothing (no session state)")
def hello_again(cs):
    w = cs.w
    if cs.has("test_mode"):
        # a stimulus pending: a unit that takes HELLO for the start of a new session drops it
        name, action, value = cs.recipe["report"]
        w.command(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() + 600_000_000), input=cs.input_id(name),
                             action=ACTION[action], value=value), expect="ACK")
    try:
        with changes_nothing(w, "a second HELLO"):
            r = w.command(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), expect="IDENTITY")
            expect(r.msg.boot_id == cs.ident.boot_id, "boot_id changed between two HELLOs")
    finally:
        if cs.has("test_mode"):
            w.command(msg.INJECT_CANCEL())


@check("4.2", "a frame of a newer minor with a longer payload is accepted, extra bytes ignored")
def newer_minor(cs):
    w = cs.w
    newer = (cat.MAJOR << 4) | min(15, cat.MINOR + 1)
    seq = w.next_seq()
    w.send_raw(raw_frame(msg.HELLO.ID, bytes([cat.MAJOR, cat.MINOR, 0x7E]), seq, newer), {seq: ("HELLO", 1)})
    r = w.reply(seq)
    expect(r is not None, "no reply to a HELLO of minor version +1 with one extra payload byte")
    expect(r.msg.NAME == "IDENTITY", f"HELLO of a newer minor with an extra byte answered {show(r)}, "
                                     f"expected IDENTITY (SPEC 4.2: accept, ignore the extra bytes)")
    seq = w.next_seq()
    w.send_raw(raw_frame(msg.STATUS_GET.ID, b"\x01\x02", seq, newer), {seq: ("STATUS_GET", 5)})
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "STATUS", "STATUS_GET of a newer minor with 2 extra bytes: "
                                                     f"{show(r) if r else 'no reply'}, expected STATUS")
