"""How well a QEMU unit keeps time, per clock mode, against the SPEC's budgets (docs/firmware.md):

  python -m tools.qemu_timing IMAGE.elf [--modes off,auto,5] [--seconds 10] [--presses 20]

For each mode (qemu:IMAGE?icount=MODE; off: the host's clock) it measures
  - rate: device time against host time over the run, in ppm (SPEC 3.2/4.6: within 1% = 10,000 ppm);
  - reply: host round trip of STATUS_GET and the unit's own turnaround (TIME_SYNC t3 - t2), p50/p99/max
    (SPEC 4.3: a reply MUST come within 50 ms of the delimiter, SHOULD within 2 ms);
  - lateness: how long after its device time an INJECTed press's INPUT_SEEN reaches the host, mapped
    through the clock sync (PR-1: a timer event MAY be late; the harness measures it), p50/max.
A mode whose clock cannot be synchronised at all is reported as such.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(url: str, seconds: float, presses: int) -> dict:
    from unohil.harness.errors import LinkError
    from unohil.harness.session.driver import Driver
    from unohil.protocol import msg
    try:
        d = Driver.open(url)
    except LinkError as exc:
        return {"error": str(exc)}
    with d:
        d.command(msg.RESET(mode=0))
        host0, dev0 = d.now_us(), d.command(msg.STATUS_GET()).time_us
        rtts, turnarounds, lateness = [], [], []
        for _ in range(presses):
            t1 = d.now_us()
            r = d.command(msg.TIME_SYNC(t1_host_us=t1))
            rtts.append(d.now_us() - t1)
            turnarounds.append((r.msg.t3_us - r.msg.t2_us) & 0xFFFFFFFF)
        d.sync_clock(16)
        for _ in range(presses):
            at = d.device_now() + 50_000
            d.inject(at, "paddle_a", "press")
            seen = d.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN", 1_000_000, "INPUT_SEEN")
            lateness.append(seen.host_us - d.clock.estimate.to_host(seen.dev_us))
            d.inject(d.device_now() + 20_000, "paddle_a", "release")
            d.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN", 1_000_000, "INPUT_SEEN")
        time.sleep(max(0.0, seconds - (d.now_us() - host0) / 1e6))
        host1, dev1 = d.now_us(), d.command(msg.STATUS_GET()).time_us
    rate_ppm = ((dev1 - dev0) & 0xFFFFFFFF) / (host1 - host0) * 1e6 - 1e6
    return {"rate_ppm": rate_ppm, "rtt": rtts, "turnaround": turnarounds, "lateness": lateness}


def line(mode: str, m: dict) -> str:
    if "error" in m:
        return f"icount={mode:5} {m['error']}"
    rtt, ta, late = m["rtt"], m["turnaround"], m["lateness"]
    return (f"icount={mode:5} rate {m['rate_ppm']:+9.0f} ppm  reply p50 {statistics.median(rtt):6.0f} us  "
            f"p99 {pct(rtt, 0.99):6.0f} us  max {max(rtt):6.0f} us  unit turnaround max {max(ta):5d} us  "
            f"event lateness p50 {statistics.median(late):6.0f} us  max {max(late):6.0f} us")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image")
    ap.add_argument("--modes", default="off,auto,5")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--presses", type=int, default=20)
    args = ap.parse_args(argv)
    for mode in args.modes.split(","):
        print(line(mode, measure(f"qemu:{args.image}?icount={mode}", args.seconds, args.presses)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
