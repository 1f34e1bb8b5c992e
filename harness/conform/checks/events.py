"""Conformance checks of SPEC 4.5: events and EVENT_RESEND."""
from __future__ import annotations

from unohil.protocol import Frame, msg

from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import expect, show, ACTION, REPLY_TIMEOUT_US


@check("4.5", "EVENT_RESEND returns the events asked for: same payload, same header time",
       needs=("event_resend", "host_input"))
def resend(cs):
    w = cs.w
    _make_events(cs, 6)
    orig = _originals(cs)
    expect(len(orig) >= 6, f"only {len(orig)} events to resend")
    want = orig[-5:]
    first = want[0].msg.event_seq
    seq = w.send(msg.EVENT_RESEND(first_seq=first, count=5))
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "ACK", f"EVENT_RESEND answered {show(r) if r else 'nothing'}")
    expect(r.msg.value == 5, f"EVENT_RESEND of 5 buffered events: ACK value {r.msg.value}")
    i = w.frames.index(r)
    deadline = w.link.now_us() + REPLY_TIMEOUT_US
    while len([f for f in w.frames[i + 1:] if f.msg.KIND == "event"]) < 5 and w.link.now_us() < deadline:
        w.pump(deadline)
    got = [f for f in w.frames[i + 1:] if f.msg.KIND == "event"][:5]
    expect(len(got) == 5, f"{len(got)} events followed the ACK of EVENT_RESEND, expected 5")
    for a, b in zip(want, got):
        expect(b.msg == a.msg, f"resent event_seq {b.msg.event_seq}: {b.msg} differs from the original {a.msg}")
        expect(b.time_us == a.time_us, f"resent event_seq {a.msg.event_seq} has time {b.time_us}, "
                                       f"originally {a.time_us}")
        expect(b.seq != a.seq, f"resent event_seq {a.msg.event_seq} reuses header seq {a.seq}")


@check("4.5", "EVENT_RESEND of count 0 and of events not yet sent: ACK 0", needs=("event_resend",))
def resend_nothing(cs):
    w = cs.w
    r = w.command(msg.EVENT_RESEND(first_seq=0, count=0), expect="ACK")
    expect(r.msg.value == 0, f"EVENT_RESEND count 0: ACK value {r.msg.value}")
    nxt = w.command(msg.STATUS_GET(), expect="STATUS").msg.next_event_seq
    r = w.command(msg.EVENT_RESEND(first_seq=nxt, count=10), expect="ACK")
    expect(r.msg.value == 0, f"EVENT_RESEND of events not yet sent: ACK value {r.msg.value}")
    later = [f for f in w.quiet() if f.msg.KIND == "event" and id(f) in w.resent]
    expect(not later, f"{len(later)} events resent for ACK 0")


@check("4.5", "EVENT_RESEND beyond the buffer: the newest event_buffer events at least",
       needs=("event_resend", "host_input"))
def resend_buffer(cs):
    w = cs.w
    buf = cs.ident.event_buffer
    nxt = w.command(msg.STATUS_GET(), expect="STATUS").msg.next_event_seq
    if nxt < buf + 10:
        _make_events(cs, buf + 10 - nxt)
    nxt = w.command(msg.STATUS_GET(), expect="STATUS").msg.next_event_seq
    first = max(0, nxt - 255)
    seq = w.send(msg.EVENT_RESEND(first_seq=first, count=255))
    r = w.reply(seq)
    expect(r is not None and r.msg.NAME == "ACK", f"EVENT_RESEND({first}, 255) not ACKed")
    n = r.msg.value
    expect(buf <= n <= nxt - first, f"EVENT_RESEND({first}, 255) with {nxt} events sent: ACK value {n}, "
                                    f"expected {buf}..{nxt - first} (event_buffer {buf})")
    i = w.frames.index(r)
    deadline = w.link.now_us() + 2 * REPLY_TIMEOUT_US
    while len([f for f in w.frames[i + 1:] if f.msg.KIND == "event"]) < n and w.link.now_us() < deadline:
        w.pump(deadline)
    got = [f.msg.event_seq for f in w.frames[i + 1:] if f.msg.KIND == "event"][:n]
    expect(got == list(range(nxt - n, nxt)), f"resent event_seqs {got[:3]}..{got[-3:]}, expected the newest "
                                             f"{n}: {nxt - n}..{nxt - 1}")


@check("4.5", "STATUS.next_event_seq follows the last event")
def next_event_seq(cs):
    w = cs.w
    w.quiet(w.burst_us())
    orig = _originals(cs)
    st = w.command(msg.STATUS_GET(), expect="STATUS").msg
    expect(orig, "no events this boot")
    expect(st.next_event_seq == (orig[-1].msg.event_seq + 1) & 0xFFFF,
           f"STATUS.next_event_seq {st.next_event_seq}, last event_seq {orig[-1].msg.event_seq}")


def _originals(cs) -> list[Frame]:
    """Events of the current boot as first sent (not resent copies)."""
    boot = max((i for i, f in enumerate(cs.w.frames) if f.msg.NAME == "BOOT"), default=0)
    return [f for f in cs.w.frames[boot:] if f.msg.KIND == "event" and id(f) not in cs.w.resent]


def _make_events(cs, n: int) -> None:
    w = cs.w
    name, action, value = cs.recipe["report"]
    m = msg.INPUT(input=cs.input_id(name), action=ACTION[action], value=value)
    for _ in range(n):
        w.command(m)
    w.quiet(w.burst_us())
