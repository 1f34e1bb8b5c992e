"""The served emulator: a separate process on a pty or TCP, and the in-process real-clock
thread. Time-independent checks only: races use INJECT at device times, and no test
asserts how long anything took."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from unohil.protocol import ENUMS, PARAMS_BY_NAME, msg
from unohil.protocol.catalogue import NONE_U32
from unohil.protocol.devtime import wrap

from unohil.emulator.inprocess import start_real
from unohil.emulator.probe import Probe, SelectLink

ROOT = Path(__file__).resolve().parents[1]
R = ENUMS["showdown_reason"]
A, B, TIMER, LOAD = 0, 1, 2, 3
D = 500_000
FLIGHT = 20_000


def spawn(*args: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "unohil.emulator", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    count = int(args[args.index("--count") + 1]) if "--count" in args else 1
    lines = [proc.stdout.readline().strip() for _ in range(count)]
    if not all(lines):
        proc.kill()
        raise AssertionError(f"emulator printed {lines!r}; stderr: {proc.stderr.read()}")
    return proc, lines


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> str:
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    return err


def race(p: Probe) -> None:
    """Handshake and a full race driven by INJECT at device times."""
    ident = p.request(msg.HELLO(1, 0), timeout_us=5_000_000).msg
    assert ident.kind == ENUMS["unit_kind"].showdown
    for name, value in (("countdown_min_us", D), ("countdown_max_us", D), ("flight_us", FLIGHT)):
        r = p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value), timeout_us=5_000_000)
        assert r.name == "CONFIG_VALUE"
    now = p.request(msg.TIME_SYNC(0), timeout_us=5_000_000).msg.t3_us
    t0 = wrap(now + 50_000)
    green = wrap(t0 + D)
    for at, inp, value in ((wrap(now + 40_000), LOAD, 2), (t0, TIMER, 0), (wrap(green + 150_000), B, 0),
                           (wrap(green + 150_400), A, 0)):
        assert p.request(msg.INJECT(at, inp, 1, value), timeout_us=5_000_000).name == "ACK"
    v = p.wait_event("SD_VERDICT", 10_000_000)
    m = v.msg
    assert m.green_us == green and m.press_b_us == wrap(green + 150_000)
    assert m.press_a_us == wrap(green + 150_400) and m.decisive_us == m.press_a_us
    assert m.reason in (R.line_tiebreak, R.even_split)
    assert m.knowable_us == wrap(green + 150_000 + FLIGHT)
    return v


@pytest.fixture
def pty_unit():
    proc, (path,) = spawn("showdown", "--pty", "--seed", "5")
    try:
        yield proc, path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_pty_handshake_and_race(pty_unit):
    proc, path = pty_unit
    assert path.startswith("/dev/")
    link = SelectLink.open_path(path)
    try:
        p = Probe(link)
        v = race(p)
        assert v.time_us - v.msg.knowable_us >= 0
        boot = p.events("BOOT")
        assert boot and boot[0].msg.event_seq == 0
    finally:
        link.close()
    assert "stopped" in stop(proc)


def test_pty_reopen_gets_the_same_unit(pty_unit):
    proc, path = pty_unit
    link = SelectLink.open_path(path)
    boot_id = Probe(link).request(msg.HELLO(1, 0), timeout_us=5_000_000).msg.boot_id
    link.close()
    link = SelectLink.open_path(path)
    try:
        p = Probe(link)
        link.write(b"\0")                            # end any partial frame left behind
        assert p.request(msg.HELLO(1, 0), timeout_us=5_000_000).msg.boot_id == boot_id
    finally:
        link.close()
    stop(proc, signal.SIGINT)


def test_tcp_two_units_and_reconnect():
    serial = pytest.importorskip("serial")
    proc, urls = spawn("showdown", "--tcp", "127.0.0.1:0", "--count", "2", "--serial", "70", "--seed", "3")
    try:
        assert all(u.startswith("socket://127.0.0.1:") for u in urls) and urls[0] != urls[1]
        serials = []
        for url in urls:
            ser = serial.serial_for_url(url, timeout=5)
            link = SelectLink(sock=ser._socket)
            ident = Probe(link).request(msg.HELLO(1, 0), timeout_us=5_000_000).msg
            serials.append((ident.serial, ident.seed))
            ser.close()
        assert serials == [(70, 3), (71, 4)]
        ser = serial.serial_for_url(urls[0], timeout=5)         # reconnect: a working unit
        p = Probe(SelectLink(sock=ser._socket))
        race(p)
        ser.close()
    finally:
        if proc.poll() is None:
            stop(proc)


def test_start_real_race_and_stop():
    sock, stop_unit = start_real("showdown", seed=9, serial=3)
    try:
        p = Probe(SelectLink(sock=sock))
        v = race(p)
        assert v.time_us - v.msg.knowable_us >= 0         # never early
    finally:
        stop_unit()
        sock.close()
    assert stop_unit.device.serial == 3


def test_start_real_pinned_timers_are_exact():
    sock, stop_unit = start_real("showdown", seed=9, pin_due=True)
    try:
        v = race(Probe(SelectLink(sock=sock)))
        assert v.time_us == v.msg.knowable_us
    finally:
        stop_unit()
        sock.close()


def test_served_virtual_clock_over_pty():
    proc, (path,) = spawn("showdown", "--pty", "--clock", "virtual")
    link = SelectLink.open_path(path)
    try:
        v = race(Probe(link))
        assert v.time_us == v.msg.knowable_us
    finally:
        link.close()
        stop(proc)


def test_bad_arguments_exit_2():
    r = subprocess.run([sys.executable, "-m", "unohil.emulator", "showdown", "--tcp", "nope"], cwd=ROOT,
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr
    r = subprocess.run([sys.executable, "-m", "unohil.emulator", "showdown", "--card-capacity", "0"], cwd=ROOT,
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "card_capacity" in r.stderr


def test_mountable_argument_parser():
    import argparse
    from unohil.emulator.cli import add_arguments
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["showdown", "--tcp", "127.0.0.1:0", "--count", "3", "--clock", "virtual"])
    assert (args.kind, args.count, args.clock, args.tcp) == ("showdown", 3, "virtual", "127.0.0.1:0")
    assert os.environ.get("NO_SUCH") is None


def test_spin_until_gives_way_to_bytes_that_arrive_before_the_due_time():
    import selectors

    from unohil.emulator.clock import RealClock, VirtualClock
    from unohil.emulator.serve import spin_until
    r, w = os.pipe()
    watching = selectors.DefaultSelector()
    watching.register(r, selectors.EVENT_READ)
    try:
        os.write(w, b"x")
        assert spin_until(VirtualClock(0), 10, watching) is False     # would spin for ever without the byte
        os.read(r, 1)
        assert spin_until(VirtualClock(10), 10, watching) is True     # due already: no wait
        clock = RealClock()
        due = clock.now() + 1_000
        assert spin_until(clock, due, watching) is True and clock.now() >= due
    finally:
        watching.close()
        os.close(r)
        os.close(w)


def test_without_serial_each_served_unit_has_one_of_its_own():
    """pid * 4096 + i: two emulator processes on one host never report one serial (claims lock by it)."""
    from unohil.emulator.build import own_serial
    from unohil.harness.session.driver import Driver
    served = [spawn("showdown", "--tcp", "127.0.0.1:0", "--count", "2") for _ in range(2)]
    try:
        got = []
        for proc, urls in served:
            for url in urls:
                with Driver.open(url) as d:
                    got.append(d.identity.serial)
    finally:
        for proc, _urls in served:
            stop(proc, signal.SIGINT)
    assert got == [own_serial(i, pid=proc.pid) for proc, _urls in served for i in range(2)]
    assert len(set(got)) == 4
    assert own_serial(4095, pid=2**20 - 1) != NONE_U32          # pid * 4096 + i would be NONE_U32 itself
