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
loop wakes for a due time when it has no work at all (python -m emulator.bench
--timer-floor), also measured in the run.
"""
from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import time
import tty

from protocol.devtime import diff

from harness.session.driver import Driver
from harness.errors import Nak
from harness.text import duration

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
    proc = subprocess.Popen([sys.executable, "-m", "emulator", kind, "--pty", "--clock", "real", "--seed",
                             str(seed), "--print-origin"] + (["--realtime"] if realtime else []),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    path = proc.stdout.readline().strip()
    origin_line = proc.stdout.readline().split()
    if not path or len(origin_line) != 3:
        proc.kill()
        raise RuntimeError("the emulator process did not start")
    return proc, path, int(origin_line[2])


def _pty_pair() -> tuple[int, int]:
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    return master, slave


def one_way(samples: int, interval_us: int = 2000) -> tuple[list[int], list[int], list[int]]:
    """One way on a pty, raw and through the harness, turn about (python -m harness.bench.floor paired).
    Returns the latencies in us of: the raw floor (os.read returned - write), the harness's
    read stamp (Frame.host_us - write), and delivery (wait_for returned - write)."""
    from harness.links import FdLink
    raw_master, raw_slave = _pty_pair()
    frame_master, frame_slave = _pty_pair()
    child = subprocess.Popen([sys.executable, "-m", "harness.bench.floor", "paired", str(raw_master), str(frame_master),
                              str(samples), str(interval_us)], pass_fds=(raw_master, frame_master),
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
    out = subprocess.run([sys.executable, "-m", "emulator.bench", "--timer-floor", str(samples)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return [int(v) for v in out.split()]


def floor_round_trip(samples: int) -> list[int]:
    master, slave = _pty_pair()
    child = subprocess.Popen([sys.executable, "-m", "harness.bench.floor", "echo", str(master)], pass_fds=(master,))
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


AHEAD_US = 50_000      # a stimulus this far ahead of the device's last word survives this VM's stalls


def race_latencies(d: Driver, races: int, origin_us: int | None, first_press_every: int = 10) -> dict:
    """Run races; return lists of processing, read and delivered latencies (us).

    A race whose press the device refused as too late (the host stalled for longer than
    AHEAD_US between hearing from the device and sending the INJECT) is run again and
    counted in late_stimuli."""
    d.apply_config({"countdown_min_us": 500_000, "countdown_max_us": 500_000, "beep_interval_us": 2_000_000})
    proc, read, delivered, rtt = [], [], [], []
    late = 0
    est = d.clock.estimate
    i = 0
    while i < races:
        d.reset("new_game")
        d.input("load_cards", value=1)
        t0 = d.now_us()
        d.status()
        rtt.append(d.now_us() - t0)
        start = d.input("timer")
        side = "paddle_a" if i % 2 else "paddle_b"
        try:
            if first_press_every and i % first_press_every == 0:
                green = d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 5_000_000, "green")
                d.inject(green.dev_us + AHEAD_US, side)
            else:
                d.inject(start.dev_us + AHEAD_US, side)      # a false start: adjudicated at the press
        except Nak as exc:
            if exc.error != "too_late" or late >= races:
                raise
            late += 1
            continue
        v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 5_000_000, "verdict")
        got = d.now_us()
        m = v.msg
        proc.append(diff(v.time_us, m.knowable_us))
        produced = (v.dev_us + origin_us) if origin_us is not None else est.to_host(v.dev_us)
        read.append(v.host_us - produced)
        delivered.append(got - produced)
        if i % 50 == 49:
            est = d.sync_clock(8)
        i += 1
    return {"processing_us": proc, "read_us": read, "delivered_us": delivered, "command_rtt_us": rtt,
            "late_stimuli": late}


def run_bench(url: str | None, races: int) -> dict:
    proc = None
    origin = None
    link_kind = "pty"
    try:
        if url is None:
            proc, url, origin = spawn_emulator()
        elif not url.startswith("/dev/"):
            link_kind = url.split("://", 1)[0]
        with Driver.open(url, kind="showdown") as d:
            d.sync_clock(32)
            lat = race_latencies(d, races, origin)
            clock = d.clock.estimate.as_dict()
        # Floor and harness alternate sample by sample, the timer floor in batches between,
        # so all of them see the same machine.
        n = max(200, races)
        batch = 100
        floor, h_read, h_delivered, timer = [], [], [], []
        for _ in range(0, n, batch):
            f, r, dl = one_way(batch)
            floor += f
            h_read += r
            h_delivered += dl
            timer += floor_timer(batch)
        floor_rtt = floor_round_trip(n)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
    late = lat.pop("late_stimuli")
    dists = {k: distribution(v) for k, v in lat.items()}
    dists["floor_one_way_us"] = distribution(floor)
    dists["event_read_us"] = distribution(h_read)
    dists["event_delivered_us"] = distribution(h_delivered)
    dists["floor_round_trip_us"] = distribution(floor_rtt)
    dists["floor_timer_us"] = distribution(timer)
    ratios = {}
    for name, base in (("event_delivered_us", "floor_one_way_us"), ("event_read_us", "floor_one_way_us"),
                       ("command_rtt_us", "floor_round_trip_us")):
        a, b = dists[name], dists[base]
        ratios[f"{name}/{base}"] = {p: (a[p] / b[p] if b.get(p) else None) for p in ("p50", "p99")}
    return {"device": url, "link": link_kind, "races": races, "late_stimuli": late, "emission_time": "exact" if origin else "clock sync",
            "clock": clock, "distributions": dists, "ratios": ratios}


def print_report(result: dict, console) -> None:
    from rich.table import Table
    t = Table(title=f"Adjudication latency, {result['races']} races on {result['device']} "
                    f"(emission time: {result['emission_time']})", header_style="bold")
    t.add_column("figure")
    t.add_column("n", justify="right")
    for name, _ in PCTS:
        t.add_column(name, justify="right", no_wrap=True)
    labels = {
        "processing_us": "verdict: knowable -> produced (device)",
        "read_us": "verdict: produced -> host read returned",
        "delivered_us": "verdict: produced -> waiting code has it",
        "event_read_us": "event: written -> harness read returned",
        "event_delivered_us": "event: written -> waiting code has it",
        "command_rtt_us": "command round trip (STATUS)",
        "floor_one_way_us": "floor: raw pty one-way (os.read)",
        "floor_round_trip_us": "floor: raw pty echo round trip",
        "floor_timer_us": "floor: emulator's wait for a due time, no work",
    }
    unbacked = False
    for key, label in labels.items():
        d = result["distributions"].get(key, {})
        n = d.get("n", 0)
        cells = []
        for name, pct in PCTS:
            if name not in d:
                cells.append("-")
            elif backed(pct, n):
                cells.append(duration(d[name], exact=False))
            else:
                cells.append("n/a")
                unbacked = True
        t.add_row(label, str(n), *cells)
    console.print(t)
    if unbacked:
        console.print("  n/a: too few samples for that percentile (pX is shown from 100 / (100 - X) samples, one "
                      "beyond it: p90 from 10, p99 from 100, p99.9 from 1000)", soft_wrap=True)
    for name, r in result["ratios"].items():
        n = min(result["distributions"].get(k, {}).get("n", 0) for k in name.split("/"))
        p99 = f", p99 {r['p99']:.2f}x" if r.get("p99") is not None and backed(99, n) else ""
        p50 = f"{r['p50']:.2f}x" if r.get("p50") is not None else "n/a"
        console.print(f"  ratio {name}: p50 {p50}{p99}")
    if result.get("late_stimuli"):
        console.print(f"  {result['late_stimuli']} race(s) run again: the host stalled past a press's "
                      f"{AHEAD_US} us margin and the device refused it as too late")
    proc, timer = result["distributions"].get("processing_us"), result["distributions"].get("floor_timer_us")
    if proc and timer and backed(99, proc["n"]) and backed(99, timer["n"]):
        tail = f", p99.9 {duration(timer['p99.9'], exact=False)}" if backed(99.9, timer["n"]) else ""
        console.print(f"  verdict processing p99 {duration(proc['p99'], exact=False)}; the emulator's wait alone "
                      f"(no work) p99 {duration(timer['p99'], exact=False)}{tail} on this machine in this run",
                      soft_wrap=True)
