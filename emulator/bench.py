"""python -m unohil.emulator.bench: how fast the virtual clock races, how late the real clock is.

timer floor  (--timer-floor N) the serving loop's wait for a due time with no work
         at all: wait in the selector until SPIN_US before it, spin to it, and note how late the wait
         ended. The floor under real-clock verdict lateness on this machine; prints one
         value (us) per line. SCHED_FIFO when the system allows it, as --realtime asks.

virtual  full Showdown races through the byte interface on the in-process virtual
         clock (INJECT in, every frame decoded), races per second of CPU.
real     races on real-clock units served from a thread (start_real); for every
         verdict, lateness = header time - knowable_us (device processing: the
         serving loop's wake-up and the model's work). Races alternate first_press
         verdicts (a timer at t1 + tie window) and false starts (an injected press).
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

from unohil.protocol import PARAMS_BY_NAME, StreamDecoder, encode, msg
from unohil.protocol.devtime import diff, wrap

from .inprocess import VirtualLink, start_real
from .probe import Probe, SelectLink

A, B, TIMER, LOAD = 0, 1, 2, 3
COUNTDOWN = 500_000


def _fast_config(p: Probe) -> None:
    for name, value in (("countdown_min_us", COUNTDOWN), ("countdown_max_us", COUNTDOWN),
                        ("beep_interval_us", 2_000_000)):
        p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value), timeout_us=5_000_000)


def virtual_races_per_s(n: int = 5000) -> float:
    link = VirtualLink("showdown", 1)
    _fast_config(Probe(link))
    link.read(0)
    dec = StreamDecoder()
    start = time.perf_counter()
    for i in range(n):
        t = link.device.now()
        press = wrap(t + 2 + COUNTDOWN + 150_000)
        link.write(b"".join(encode(m, 4 * i + k, 0) for k, m in enumerate((
            msg.INJECT(wrap(t + 1), LOAD, 1, 2), msg.INJECT(wrap(t + 2), TIMER, 1, 0),
            msg.INJECT(press, A, 1, 0), msg.INJECT(wrap(t + 2 + COUNTDOWN + 150_300), B, 1, 0)))))
        done = False
        while not done:
            data, _ = link.read(10_000_000)
            done = any(f.msg.__class__ is msg.SD_VERDICT for f in dec.feed(data))
    return n / (time.perf_counter() - start)


def real_lateness(races: int = 40, process: bool = False) -> list[int]:
    """In a served process over a pty (process=True), or in a thread of this one."""
    if process:
        proc = subprocess.Popen([sys.executable, "-m", "unohil.emulator", "showdown", "--pty"], stdout=subprocess.PIPE,
                                text=True)
        link = SelectLink.open_path(proc.stdout.readline().strip())

        def stop():
            proc.send_signal(signal.SIGTERM)
            proc.wait()
    else:
        sock, stop = start_real("showdown", seed=1)
        link = SelectLink(sock=sock)
    p = Probe(link)
    late = []
    try:
        _fast_config(p)
        for i in range(races):
            now = p.request(msg.TIME_SYNC(0), timeout_us=5_000_000).msg.t3_us
            t0 = wrap(now + 60_000)      # margins that survive a loaded machine: a late INJECT is refused
            p.request(msg.INJECT(wrap(now + 30_000), LOAD, 1, 1), timeout_us=5_000_000)
            p.request(msg.INJECT(t0, TIMER, 1, 0), timeout_us=5_000_000)
            offset = COUNTDOWN + 200_000 if i % 2 == 0 else COUNTDOWN - 100_000     # valid / false start
            p.request(msg.INJECT(wrap(t0 + offset), A, 1, 0), timeout_us=5_000_000)
            v = p.wait_event("SD_VERDICT", 10_000_000)
            late.append(diff(v.time_us, v.msg.knowable_us))
    finally:
        link.close()
        stop()
    return late


def timer_floor(n: int, seed: int = 1) -> list[int]:
    """How late the serving loop's own wait ends, n times, for due times 15-25 ms ahead (the bench's races
    wait about 20 ms for their press)."""
    import random
    import selectors

    from .clock import RealClock
    from .serve import SPIN_US, sleep_before, spin_until
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (AttributeError, OSError):
        pass
    rng = random.Random(seed)
    clock = RealClock()
    quiet, unused = os.pipe()       # watched, as the loop watches its ports; never readable
    watching = selectors.DefaultSelector()
    watching.register(quiet, selectors.EVENT_READ)
    late = []
    try:
        for _ in range(n):
            due = clock.now() + rng.randint(15_000, 25_000)
            while due - clock.now() > SPIN_US:
                watching.select(sleep_before(clock, due))
            spin_until(clock, due, watching)
            late.append(clock.now() - due)
    finally:
        watching.close()
        os.close(quiet)
        os.close(unused)
    return late


def _pct(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unohil.emulator.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--virtual-races", type=int, default=5000)
    parser.add_argument("--real-races", type=int, default=40)
    parser.add_argument("--timer-floor", type=int, default=0, metavar="N",
                        help="only measure the serving loop's wait N times; print one lateness (us) per line")
    args = parser.parse_args(argv)
    if args.timer_floor:
        sys.stdout.write("".join(f"{v}\n" for v in timer_floor(args.timer_floor)))
        return 0
    if args.virtual_races:
        print(f"virtual clock: {virtual_races_per_s(args.virtual_races):.0f} races/s in-process")
    for process in (True, False) if args.real_races else ():
        late = real_lateness(args.real_races, process)
        where = "served process over a pty" if process else "start_real thread in this process"
        for label, part in (("first_press", late[0::2]), ("false_start", late[1::2])):
            print(f"real clock, {where}, {label} verdicts ({len(part)}): lateness p50 {_pct(part, 0.5)} us, "
                  f"p99 {_pct(part, 0.99)} us, max {max(part)} us, mean {statistics.mean(part):.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
