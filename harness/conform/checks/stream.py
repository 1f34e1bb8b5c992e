"""Conformance checks of SPEC 2, 3, 4.3 and 4.5 judged over every frame of the run."""
from __future__ import annotations

from unohil.protocol import Frame, devtime

from unohil.harness.conform.registry import OVERALL, check
from unohil.harness.conform.wire import expect, show, REPLY_OF


@check("2", "every frame from the device decodes (no CRC, COBS or length errors)", phase=OVERALL)
def stream_clean(cs):
    errs = cs.w.stream_errors[cs.w.origin_errors:]
    expect(not errs, f"{len(errs)} bad frame(s) from the device: " + ", ".join(e.kind for e in errs[:5]))


@check("3", "header seq counts every device frame without a gap", phase=OVERALL)
def header_seq(cs):
    bad = []
    for frames in _boots(cs):
        for a, b in zip(frames, frames[1:]):
            if b.seq != (a.seq + 1) & 0xFFFF:
                bad.append(f"{a.msg.NAME} seq {a.seq} then {b.msg.NAME} seq {b.seq}")
    expect(not bad, f"{len(bad)} gap(s): " + "; ".join(bad[:3]))
    return f"{len(cs.w.frames) - cs.w.origin} frames"


@check("3", "device time in replies never goes back within a boot", phase=OVERALL)
def reply_times(cs):
    bad = []
    for frames in _boots(cs):
        replies = [f for f in frames if f.msg.KIND == "reply"]
        for a, b in zip(replies, replies[1:]):
            if devtime.diff(b.time_us, a.time_us) < 0:
                bad.append(f"{a.msg.NAME} at {a.time_us} then {b.msg.NAME} at {b.time_us}")
    expect(not bad, f"device time went back {len(bad)} time(s): " + "; ".join(bad[:3]))


@check("4.3", "every command got exactly one reply, of its type, naming its cmd_seq and cmd_type", phase=OVERALL)
def one_reply_each(cs):
    w = cs.w
    none, dup, wrong = [], [], []
    for seq, (name, type_id) in w.sent.items():
        rs = w.replies.get(seq, [])
        if not rs:
            none.append(f"{name} (seq {seq})")
            continue
        if len(rs) > 1:
            dup.append(f"{name} (seq {seq}): {', '.join(show(r) for r in rs)}")
        r = rs[0]
        want = REPLY_OF.get(name)
        if r.msg.NAME == "NAK" or r.msg.NAME == "ACK":
            if r.msg.cmd_type != type_id:
                wrong.append(f"{name} (seq {seq}): {r.msg.NAME} names type {r.msg.cmd_type:#04x}")
        if r.msg.NAME != "NAK" and want is not None and r.msg.NAME != want:
            wrong.append(f"{name} (seq {seq}) answered {r.msg.NAME}")
    stray = [f"{show(rs[0])} for seq {s}" for s, rs in w.replies.items() if s not in w.sent]
    parts = []
    if none:
        parts.append(f"{len(none)} command(s) never answered: {', '.join(none[:4])}")
    if dup:
        parts.append(f"{len(dup)} answered more than once: {'; '.join(dup[:3])}")
    if wrong:
        parts.append(f"{len(wrong)} wrong: {'; '.join(wrong[:3])}")
    if stray:
        parts.append(f"{len(stray)} replies to commands never sent: {', '.join(stray[:3])}")
    expect(not parts, ". ".join(parts))
    return f"{len(w.sent)} commands"


@check("4.3", "replies come in the order of their commands", phase=OVERALL)
def reply_order(cs):
    w = cs.w
    order = {s: i for i, s in enumerate(w.sent)}
    got = [order[f.msg.cmd_seq] for f in w.frames if f.msg.KIND == "reply" and f.msg.cmd_seq in order
           and w.replies[f.msg.cmd_seq][0] is f]
    bad = sum(1 for a, b in zip(got, got[1:]) if b < a)
    expect(bad == 0, f"{bad} reply(ies) came before the reply to an earlier command")


@check("4.5", "event_seq counts every new event without a gap", phase=OVERALL)
def event_seq(cs):
    bad = []
    for frames in _boots(cs):
        evs = [f for f in frames if f.msg.KIND == "event" and id(f) not in cs.w.resent]
        for a, b in zip(evs, evs[1:]):
            if b.msg.event_seq != (a.msg.event_seq + 1) & 0xFFFF:
                bad.append(f"{a.msg.NAME} {a.msg.event_seq} then {b.msg.NAME} {b.msg.event_seq}")
    expect(not bad, f"{len(bad)} gap(s): " + "; ".join(bad[:3]))


def _boots(cs) -> list[list[Frame]]:
    """Device frames split at each BOOT (a boot restarts seqs and time)."""
    out, cur = [], []
    for f in cs.w.frames[cs.w.origin:]:
        if f.msg.NAME == "BOOT" and cur:
            out.append(cur)
            cur = []
        cur.append(f)
    out.append(cur)
    return out
