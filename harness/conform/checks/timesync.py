"""Conformance checks of SPEC 4.6: time sync and the device clock's rate."""
from __future__ import annotations

from unohil.protocol import Frame, devtime, msg

from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import expect, TURNAROUND_MAX_US


@check("4.6", "TIME_SYNC echoes t1, t2 <= t3 = header time, turnaround under 50 ms", needs=("time_sync",))
def time_sync(cs):
    w = cs.w
    r, _ = _sync_once(cs, 0x0123456789ABCDEF)
    expect(r.msg.t1_host_us == 0x0123456789ABCDEF, f"t1 echoed as {r.msg.t1_host_us:#x}")
    worst = 0
    prev_t3 = None
    for _ in range(8):
        t1 = w.link.now_us()
        r, t4 = _sync_once(cs, t1)
        m = r.msg
        expect(m.t1_host_us == t1, "t1 not echoed")
        turn = devtime.diff(m.t3_us, m.t2_us)
        expect(turn >= 0, f"t2 {m.t2_us} after t3 {m.t3_us}")
        expect(m.t3_us == r.time_us, f"t3 {m.t3_us} differs from the header time {r.time_us}")
        if prev_t3 is not None:
            expect(devtime.diff(m.t2_us, prev_t3) >= 0, "t2 of an exchange before t3 of the one before")
        prev_t3 = m.t3_us
        worst = max(worst, turn)
        cs.syncs.append((t1, m.t2_us, m.t3_us, t4))
    expect(worst <= TURNAROUND_MAX_US, f"turnaround t3 - t2 up to {worst} us (at most {TURNAROUND_MAX_US})")
    return f"turnaround up to {worst} us"


@check("4.6", "device time runs at host rate (within 1%) and never goes back", needs=("time_sync",))
def clock_rate(cs):
    w = cs.w
    if not cs.syncs:
        return ("skip", "no time sync exchanges")
    first = min(cs.syncs[-8:], key=lambda s: s[3] - s[0])
    w.quiet(300_000)
    last = None
    for _ in range(4):
        t1 = w.link.now_us()
        r, t4 = _sync_once(cs, t1)
        if last is None or t4 - t1 < last[3] - last[0]:
            last = (t1, r.msg.t2_us, r.msg.t3_us, t4)
    host = (last[0] + last[3]) / 2 - (first[0] + first[3]) / 2
    dev = (devtime.diff(last[1], first[1]) + devtime.diff(last[2], first[2])) / 2
    slack = (first[3] - first[0]) + (last[3] - last[0])
    expect(host > 0 and dev > 0, f"device time went {dev:+.0f} us while host time went {host:+.0f} us")
    expect(abs(dev - host) <= 0.01 * host + slack,
           f"device time advanced {dev:.0f} us in {host:.0f} us of host time ({(dev / host - 1) * 1e6:+.0f} ppm)")
    return f"{(dev / host - 1) * 1e6:+.0f} ppm over {host / 1000:.0f} ms"


def _sync_once(cs, t1: int) -> tuple[Frame, int]:
    r = cs.w.command(msg.TIME_SYNC(t1_host_us=t1), expect="TIME_SYNC_REPLY")
    return r, r.host_us
