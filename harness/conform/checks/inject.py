"""Conformance checks of SPEC 4.8: test mode (INJECT, its queue and INJECT_CANCEL)."""
from __future__ import annotations

from unohil.protocol import devtime, msg

from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import changes_nothing, expect, ACTION, SOURCE, REPLY_TIMEOUT_US


@check("4.8", "INJECT: stimulus ids count up; INPUT_SEEN injected at exactly at_us", needs=("test_mode",))
def inject(cs):
    w = cs.w
    cs.new_game()
    name, action, value = cs.recipe["stimulus"]
    inp = cs.input_id(name)
    at = devtime.wrap(w.last_dev_time() + max(200_000, w.lead_us(2)))
    n = len(w.frames)
    try:
        first = w.command(msg.INJECT(at_us=at, input=inp, action=ACTION[action], value=value), expect="ACK")
        second = w.command(msg.INJECT(at_us=devtime.wrap(at + 1000), input=inp, action=ACTION["release"],
                                      value=0), expect="ACK")
        expect(first.msg.value != 0, "stimulus id 0")
        expect(second.msg.value == first.msg.value % 0xFFFF + 1,
               f"stimulus ids {first.msg.value} then {second.msg.value}: expected +1")
        seen = w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["injected"],
                      2 * REPLY_TIMEOUT_US, n)
        expect(seen is not None, "no INPUT_SEEN (source injected) within 1 s after the stimulus was due")
        expect(seen.time_us == at, f"INPUT_SEEN of the stimulus at {seen.time_us}, scheduled at {at} "
                                   f"({devtime.diff(seen.time_us, at):+d} us)")
        expect(seen.msg.input == inp and seen.msg.action == ACTION[action], "INPUT_SEEN names another input")
        w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["injected"]
               and f.msg.action == ACTION["release"], REPLY_TIMEOUT_US, n)
    finally:
        _clean(cs)
    _many_on_time(cs)


def _many_on_time(cs, count: int = 12) -> None:
    """Stimuli at irregular times, each stamped exactly at its own: one sample cannot tell a unit
    that stamps the scheduled time from one that stamps whenever it got round to it."""
    w = cs.w
    name, action, value = cs.recipe["report"]          # reported, changes nothing
    inp = cs.input_id(name)
    count = min(count, cs.ident.inject_queue)
    base = w.last_dev_time() + max(200_000, w.lead_us(count))
    times = [devtime.wrap(base + i * 7919 + (i * i) % 13) for i in range(count)]
    n = len(w.frames)
    try:
        for at in times:
            w.command(msg.INJECT(at_us=at, input=inp, action=ACTION[action], value=value), expect="ACK")
        seen: list = []

        def one_more(f):
            if f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["injected"] and f.msg.input == inp:
                seen.append(f)
            return len(seen) == count
        w.wait(one_more, 2 * REPLY_TIMEOUT_US, n)
        expect(len(seen) == count, f"{len(seen)} of {count} injected stimuli reported (INPUT_SEEN)")
        off = [(at, devtime.diff(f.time_us, at)) for at, f in zip(times, seen) if f.time_us != at]
        expect(not off, f"{len(off)} of {count} stimuli stamped off their scheduled time (us): "
                        + ", ".join(f"{d:+d} at {at}" for at, d in off[:5]))
    finally:
        _clean(cs)


@check("4.8", "INJECT in the past, at now, 2^31 us ahead: NAK too_late", needs=("test_mode",))
def inject_too_late(cs):
    w = cs.w
    name, action, value = cs.recipe["report"]
    inp = cs.input_id(name)
    with changes_nothing(w, "INJECTs refused as too_late"):
        now = w.last_dev_time()
        for at, what in ((now - 1000, "1 ms in the past"), (now, "at the last reply's time"),
                         (now + (1 << 31) + 1_000_000, "2^31 us + 1 s ahead")):
            w.nak(msg.INJECT(at_us=devtime.wrap(at), input=inp, action=ACTION[action], value=value), "too_late", 0)


@check("4.8", "INJECT of an unknown input or action: NAK bad_value (before too_late)", needs=("test_mode",))
def inject_bad_value(cs):
    w = cs.w
    with changes_nothing(w, "INJECTs refused as bad_value"):
        past = devtime.wrap(w.last_dev_time() - 1000)
        w.nak(msg.INJECT(at_us=past, input=0xEE, action=1, value=0), "bad_value", 0)
        w.nak(msg.INJECT(at_us=past, input=0, action=7, value=0), "bad_value", 0)


@check("4.8", "INJECT beyond inject_queue pending: NAK queue_full; INJECT_CANCEL drops them all",
       needs=("test_mode",))
def inject_queue(cs):
    w = cs.w
    name, action, value = cs.recipe["report"]
    inp = cs.input_id(name)
    q = cs.ident.inject_queue
    far = w.last_dev_time() + 600_000_000
    ids = []
    try:
        _fill_queue(cs, q, far, inp, action, value, ids)
    finally:
        w.command(msg.INJECT_CANCEL())


def _clean(cs) -> None:
    """Leave the unit as a check found it: no stimuli pending, a new game."""
    cs.w.command(msg.INJECT_CANCEL())
    cs.new_game()


def _fill_queue(cs, q, far, inp, action, value, ids):
    w = cs.w
    for i in range(q):
        ids.append(w.command(msg.INJECT(at_us=devtime.wrap(far + i), input=inp, action=ACTION[action],
                                        value=value), expect="ACK").msg.value)
    expect(all(b == a % 0xFFFF + 1 for a, b in zip(ids, ids[1:])), f"stimulus ids not consecutive: {ids}")
    st = w.command(msg.STATUS_GET(), expect="STATUS").msg
    expect(st.pending_injects == q, f"STATUS.pending_injects {st.pending_injects}, expected {q}")
    w.nak(msg.INJECT(at_us=devtime.wrap(far + q), input=inp, action=ACTION[action], value=value), "queue_full", 0)
    # precedence: too_late before queue_full
    w.nak(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() - 10), input=inp, action=ACTION[action], value=value),
          "too_late", 0)
    r = w.command(msg.INJECT_CANCEL(), expect="ACK")
    expect(r.msg.value == q, f"INJECT_CANCEL dropped {r.msg.value}, expected {q}")
    st = w.command(msg.STATUS_GET(), expect="STATUS").msg
    expect(st.pending_injects == 0, f"{st.pending_injects} stimuli pending after INJECT_CANCEL")
    r = w.command(msg.INJECT_CANCEL(), expect="ACK")
    expect(r.msg.value == 0, f"a second INJECT_CANCEL dropped {r.msg.value}")
