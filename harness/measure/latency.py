"""unohil bench: adjudication latency and what the link itself costs, measured in one run.

For each race the Showdown unit adjudicates, three figures:
  processing   verdict header time - knowable_us: the device's own delay past the
               earliest instant the verdict could be known (device clock);
  read         host time the read returned - host time the verdict was produced;
  delivered    host time the waiting code got the verdict - host time it was produced.
The production time is exact when the emulator runs in another process on this host
(it reports the monotonic time of its device time 0); for any other device it comes
from clock sync, and its uncertainty is reported beside it.

The floor is the same kind of link with no protocol: a child process writes stamped
16-byte packets into a pty and this process blocks in os.read (one-way), and an echo
child for the round trip. For the one-way figures the same child writes, turn about, a
raw packet on one pty and a protocol event frame on another, which the harness reads;
so each harness sample is taken 2 ms after its floor sample, on the same machine.
Ratios compare the harness with the floor of the same run.
Under the device's processing lies a floor of its own: how late the emulator's serving
loop wakes for a due time when it has no work at all (python -m unohil.emulator.bench
--timer-floor), also measured in the run.
"""
from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import time

from unohil.protocol.devtime import diff

from unohil.harness.session.driver import Driver
from unohil.harness.measure.latency_races import AHEAD_US, unit_identity, verdict_latencies
from unohil.harness.text import duration

PCTS = (("min", 0), ("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9), ("max", 100))


def samples_needed(pct: float) -> int:
    """How many samples a percentile needs before it says anything of the tail: at least one sample
    beyond it, so pX needs 100 / (100 - X): p90 10, p99 100, p99.9 1000 (min, p50 and max: 1).
    From fewer, p99.9 is just the maximum under another name."""
    if pct in (0, 50, 100):
        return 1
    return math.ceil(round(100 / (100 - pct), 6))


def backed(pct: float, n: int) -> bool:
    return n >= samples_needed(pct)


def distribution(values: list[float]) -> dict:
    if not values:
        return {}
    v = sorted(values)
    out = {}
    for name, p in PCTS:
        k = min(len(v) - 1, max(0, int(round(p / 100 * (len(v) - 1)))))
        out[name] = v[k]
    out["n"] = len(v)
    return out


def spawn_emulator(kind: str = "showdown", seed: int = 1, realtime: bool = True):
    """An emulator in another process on a pty, real clock. Returns (process, path, origin_us).

    realtime: the emulator asks for SCHED_FIFO (and carries on without it if refused),
    as firmware gets the CPU when its timer interrupt fires."""
    proc = subprocess.Popen([sys.executable, "-m", "unohil.emulator", kind, "--pty", "--clock", "real", "--seed",
                             str(seed), "--print-origin"] + (["--realtime"] if realtime else []),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    path = proc.stdout.readline().strip()
    origin_line = proc.stdout.readline().split()
    if not path or len(origin_line) != 3:
        proc.kill()
        raise RuntimeError("the emulator process did not start")
    return proc, path, int(origin_line[2])


def _pty_pair() -> tuple[int, int]:
    import tty      # only where a pty is opened: the harness imports on Windows, which has none
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    return master, slave


def one_way(samples: int, interval_us: int = 2000) -> tuple[list[int], list[int], list[int]]:
    """One way on a pty, raw and through the harness, turn about (python -m unohil.harness.measure.link_floor paired).
    Returns the latencies in us of: the raw floor (os.read returned - write), the harness's
    read stamp (Frame.host_us - write), and delivery (wait_for returned - write)."""
    from unohil.harness.links import FdLink
    raw_master, raw_slave = _pty_pair()
    frame_master, frame_slave = _pty_pair()
    child = subprocess.Popen([sys.executable, "-m", "unohil.harness.measure.link_floor", "paired", str(raw_master),
                              str(frame_master), str(samples), str(interval_us)], pass_fds=(raw_master, frame_master),
                             stdout=subprocess.PIPE, text=True)
    os.close(raw_master)
    os.close(frame_master)
    d = Driver(FdLink("pty-pair", fd=frame_slave))
    d.expect_events_from(0)
    floor, got = [], []
    try:
        for _ in range(samples):
            data = os.read(raw_slave, 16)
            now = time.monotonic_ns() // 1000
            while len(data) < 16:
                data += os.read(raw_slave, 16 - len(data))
            floor.append(now - struct.unpack_from("<Q", data)[0])
            f = d.wait_for(lambda f: f.msg.NAME == "SD_BEEP", 10_000_000, "a stamped frame")
            got.append((f.msg.event_seq, f.host_us, time.monotonic_ns() // 1000))
    finally:
        written = [int(v) for v in child.communicate(timeout=30)[0].split()]
        os.close(raw_slave)
        os.close(frame_slave)
    return (floor, [host - written[seq] for seq, host, _ in got], [now - written[seq] for seq, _, now in got])


def floor_timer(samples: int) -> list[int]:
    out = subprocess.run([sys.executable, "-m", "unohil.emulator.bench", "--timer-floor", str(samples)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return [int(v) for v in out.split()]


def floor_round_trip(samples: int) -> list[int]:
    master, slave = _pty_pair()
    child = subprocess.Popen([sys.executable, "-m", "unohil.harness.measure.link_floor", "echo", str(master)],
                             pass_fds=(master,))
    os.close(master)
    out = []
    packet = bytes(16)
    try:
        for _ in range(samples):
            t0 = time.monotonic_ns() // 1000
            os.write(slave, packet)
            got = 0
            while got < 16:
                got += len(os.read(slave, 16 - got))
            out.append(time.monotonic_ns() // 1000 - t0)
            time.sleep(0.001)
    finally:
        os.close(slave)
        child.wait(timeout=30)
    return out


def run_bench(url: str | None, races: int, kinds: tuple[str, ...] = ("showdown",), stop=None,
              result: dict | None = None) -> dict:
    """Verdict latencies on the unit at url (its own kind), or on an emulator of each of kinds in another
    process; then the link's floors, measured in the same run. stop: asked between races and parts, a
    true answer ends the run there; result: the dict the figures are gathered in as each part finishes
    (what a caller writes when the run is cut short: cut_short)."""
    result = result if result is not None else {}
    units: dict[str, dict] = {}
    result.update({"tool": "unohil", "bench": 1, "device": url or "emulators in other processes on ptys",
                   "link": "pty", "races": races, "emission_time": "exact", "units": units, "samples": {},
                   "distributions": {}, "ratios": {}})
    targets = [(None, kind) for kind in kinds] if url is None else [(url, None)]
    result["_not_started"] = [kind or target for target, kind in targets]
    for target, kind in targets:
        result["_not_started"].pop(0)
        if stop is not None and stop():
            result.setdefault("not_run", []).append(kind or target)
            continue
        proc = None
        origin = None
        try:
            if target is None:
                proc, target, origin = spawn_emulator(kind)
            elif not target.startswith("/dev/"):
                result["link"] = target.split("://", 1)[0]
            with Driver.open(target, kind=kind) as d:
                d.sync_clock(32)
                lat: dict = {"identity": unit_identity(d)}
                where = target if url is not None else f"emulator ({d.kind}, pty)"
                result["_in_progress"] = (d.kind, where, lat, d.clock.estimate.as_dict)
                verdict_latencies(d, races, origin, progress=lambda done, total, k=d.kind: print(
                    f"bench: {k} {done}/{total} races", file=sys.stderr, flush=True), stop=stop, into=lat)
                units[d.kind] = _unit_figures(where, lat, d.clock.estimate.as_dict(), races)
                del result["_in_progress"]
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
        if origin is None:
            result["emission_time"] = "clock sync"
    del result["_not_started"]
    if stop is not None and stop():
        result["floors"] = "the link's floors not measured: the run was stopped before them"
        return result
    _floors(result, max(200, races))
    return result


def _unit_figures(where: str, lat: dict, clock: dict, races: int) -> dict:
    done = len(lat.get("processing_us", ()))
    out = {"device": where, "identity": lat.get("identity"), "late_stimuli": lat.get("late_stimuli", 0), "outcomes": dict(lat.get("outcomes", {})),
           "clock": clock, "races_done": done,
           "distributions": {k: distribution(lat.get(k, [])) for k in UNIT_LABELS},
           "samples": {k: lat.get(k, []) for k in UNIT_LABELS}, "ratios": {}}
    if done < races:
        out["interrupted"] = True       # cut short: the races it finished are all here
    return out


def cut_short(result: dict, reason: str) -> dict:
    """A run stopped at once (a second signal) or by an error: the unit in progress kept as far as it got,
    marked interrupted, and the reason said."""
    kind, where, lat, clock = result.pop("_in_progress", (None,) * 4)
    if kind is not None:
        result["units"][kind] = _unit_figures(where, lat, clock(), result["races"])
        result["units"][kind]["interrupted"] = True
    if not_started := result.pop("_not_started", None):     # the units after the one cut short
        result.setdefault("not_run", []).extend(not_started)
    if "distributions" in result and not result["distributions"]:
        result.setdefault("floors", "the link's floors not measured: the run was stopped before them")
    result["interrupted"] = reason
    return result


def _floors(result: dict, n: int) -> None:
    """The link's floors, beside the harness's own figures: alternating sample by sample, the timer floor
    in batches between, so all of them see the same machine."""
    batch = 100
    floor, h_read, h_delivered, timer = [], [], [], []
    for _ in range(0, n, batch):
        f, r, dl = one_way(batch)
        floor += f
        h_read += r
        h_delivered += dl
        timer += floor_timer(batch)
    floor_rtt = floor_round_trip(n)
    dists = {"floor_one_way_us": distribution(floor), "event_read_us": distribution(h_read),
             "event_delivered_us": distribution(h_delivered), "floor_round_trip_us": distribution(floor_rtt),
             "floor_timer_us": distribution(timer)}
    ratios = {}
    for name, base in (("event_delivered_us", "floor_one_way_us"), ("event_read_us", "floor_one_way_us")):
        ratios[f"{name}/{base}"] = _ratio(dists[name], dists[base])
    for u in result["units"].values():
        u["ratios"] = {"command_rtt_us/floor_round_trip_us": _ratio(u["distributions"]["command_rtt_us"],
                                                                    dists["floor_round_trip_us"])}
    result["samples"] = {"floor_one_way_us": floor, "event_read_us": h_read, "event_delivered_us": h_delivered,
                         "floor_round_trip_us": floor_rtt, "floor_timer_us": timer}
    result.update(distributions=dists, ratios=ratios)


def _ratio(a: dict, b: dict) -> dict:
    return {p: (a[p] / b[p] if b.get(p) else None) for p in ("p50", "p99")}


UNIT_LABELS = {
    "processing_us": "verdict: knowable -> produced (device)",
    "read_us": "verdict: produced -> host read returned",
    "delivered_us": "verdict: produced -> waiting code has it",
    "command_rtt_us": "command round trip (STATUS)",
}
LINK_LABELS = {
    "event_read_us": "event: written -> harness read returned",
    "event_delivered_us": "event: written -> waiting code has it",
    "floor_one_way_us": "floor: raw pty one-way (os.read)",
    "floor_round_trip_us": "floor: raw pty echo round trip",
    "floor_timer_us": "floor: emulator's wait for a due time, no work",
}


def distribution_table(title: str, rows):
    """A table of distributions: rows of (label, distribution) or (label, distribution, mean); a
    percentile shows only when enough samples back it (n/a otherwise: see unbacked)."""
    from rich.table import Table
    t = Table(title=title, header_style="bold")
    t.add_column("figure")
    t.add_column("n", justify="right")
    for name, _ in PCTS:
        t.add_column(name, justify="right", no_wrap=True)
    means = any(len(r) > 2 for r in rows)
    if means:
        t.add_column("mean", justify="right", no_wrap=True)
    for label, d, *mean in rows:
        n = d.get("n", 0)
        cells = ["-" if name not in d else duration(d[name], exact=False) if backed(pct, n) else "n/a"
                 for name, pct in PCTS]
        t.add_row(label, str(n), *cells, *(duration(round(m), exact=False) for m in mean))
    return t


def unbacked(rows) -> bool:
    """Whether a table of these rows shows n/a somewhere: a percentile with too few samples."""
    return any(name in d and not backed(pct, d.get("n", 0)) for _, d, *_ in rows for name, pct in PCTS)


UNBACKED_NOTE = ("  n/a: too few samples for that percentile (pX is shown from 100 / (100 - X) samples, one beyond "
                 "it: p90 from 10, p99 from 100, p99.9 from 1000)")


def print_report(result: dict, console) -> None:
    rows = [(f"{kind}: {label}", u["distributions"].get(key, {}))
            for kind, u in result["units"].items() for key, label in UNIT_LABELS.items()]
    rows += [(label, result["distributions"].get(key, {})) for key, label in LINK_LABELS.items()]
    console.print(distribution_table(f"Adjudication latency, {result['races']} races per unit on {result['device']} "
                                     f"(emission time: {result['emission_time']})", rows))
    if unbacked(rows):
        console.print(UNBACKED_NOTE, soft_wrap=True)

    def ratio_line(prefix: str, name: str, r: dict, dists: dict) -> None:
        n = min(dists.get(k, {}).get("n", 0) for k in name.split("/"))
        p99 = f", p99 {r['p99']:.2f}x" if r.get("p99") is not None and backed(99, n) else ""
        p50 = f"{r['p50']:.2f}x" if r.get("p50") is not None else "n/a"
        console.print(f"  {prefix}ratio {name}: p50 {p50}{p99}")

    timer = result["distributions"].get("floor_timer_us")
    for kind, u in result["units"].items():
        spread = ", ".join(f"{k} {v}" for k, v in u["outcomes"].items())
        console.print(f"  {kind}: verdicts {spread}", soft_wrap=True)
        if u.get("late_stimuli"):
            console.print(f"  {kind}: {u['late_stimuli']} race(s) run again: the host stalled past a press's "
                          f"{AHEAD_US} us margin and the device refused it as too late")
        for name, r in u["ratios"].items():
            ratio_line(f"{kind}: ", name, r, {**result["distributions"], **u["distributions"]})
        proc = u["distributions"].get("processing_us")
        if proc and timer and backed(99, proc["n"]) and backed(99, timer["n"]):
            tail = f", p99.9 {duration(timer['p99.9'], exact=False)}" if backed(99.9, timer["n"]) else ""
            console.print(f"  {kind}: verdict processing p99 {duration(proc['p99'], exact=False)}; the emulator's "
                          f"wait alone (no work) p99 {duration(timer['p99'], exact=False)}{tail} on this machine in "
                          f"this run", soft_wrap=True)
    for name, r in result["ratios"].items():
        ratio_line("", name, r, result["distributions"])
