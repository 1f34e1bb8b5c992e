"""One emulator process serving thousands of units, and what it does when the process may not
open enough descriptors for them. Every unit is talked to through a real socket or pty (a HELLO
each, answered with the unit's own serial); nothing here asserts how long anything took."""
from __future__ import annotations

import math
import os
import resource
import socket
import subprocess
import sys

import pytest

from unohil.emulator.serve import FDS_PER_UNIT, ensure_fd_limit, fds_needed, selector_timeout
from tools.serve_scale import ROOT, connect, hello_round, open_ptys, spawn, stop

TCP_UNITS = 2000
PTY_UNITS = 1000        # well past the 510 that select() allowed; fewer if the system has fewer ptys
PTY_AT_LEAST = 600


def fds_for(units: int) -> None:
    """This process and the emulator it spawns (which inherits its limits) may open what units need."""
    try:
        ensure_fd_limit(fds_needed(units) + units, f"{units} units and a connection to each")
    except ValueError as exc:
        pytest.skip(f"RLIMIT_NOFILE too low on this machine: {exc}")


def assert_each_answers_with_its_serial(fds: list[int], first_serial: int) -> None:
    got = hello_round(fds)
    silent = [i for i, fd in enumerate(fds) if fd not in got]
    assert not silent, f"{len(silent)} of {len(fds)} units never answered HELLO (first: unit {silent[0]})"
    assert [got[fd].serial for fd in fds] == [first_serial + i for i in range(len(fds))]
    assert len({got[fd].boot_id for fd in fds}) == len(fds)        # independent units, not one seen twice


def test_one_process_serves_2000_tcp_units_and_each_answers_with_its_own_serial():
    fds_for(TCP_UNITS)
    proc, urls = spawn(TCP_UNITS, pty=False, serial=5000)
    socks: list[socket.socket] = []
    try:
        assert len(set(urls)) == TCP_UNITS and all(u.startswith("socket://127.0.0.1:") for u in urls)
        socks = connect(urls)
        assert_each_answers_with_its_serial([s.fileno() for s in socks], 5000)
        # a unit keeps working across connections, the last one as well as the first
        for i in (0, TCP_UNITS - 1):
            socks[i].close()
            (socks[i],) = connect([urls[i]])
            assert hello_round([socks[i].fileno()])[socks[i].fileno()].serial == 5000 + i
    finally:
        for s in socks:
            s.close()
        stop(proc)
    assert proc.returncode == 0


def ptys_free() -> int:
    """Ptys this process may still get: the system's maximum less those in use and (unless this is
    the initial devpts instance, which cannot be told from here) those reserved for it."""
    try:
        values = [int(open(f"/proc/sys/kernel/pty/{name}").read()) for name in ("max", "nr", "reserve")]
    except (OSError, ValueError):
        return 0
    top, used, reserved = values
    return top - used - reserved


def test_one_process_serves_more_ptys_than_select_allowed():
    count = min(PTY_UNITS, ptys_free() - 50)        # leave some to whoever else runs on this machine
    if count < PTY_AT_LEAST:
        pytest.skip(f"only {count + 50} ptys free here; this test needs {PTY_AT_LEAST}")
    fds_for(count)
    proc, paths = spawn(count, pty=True, serial=100)
    fds: list[int] = []
    try:
        assert len(set(paths)) == count and all(p.startswith("/dev/") for p in paths)
        fds = open_ptys(paths)      # the emulator holds two descriptors per pty: well past select()'s 1024
        assert_each_answers_with_its_serial(fds, 100)
    finally:
        for fd in fds:
            os.close(fd)
        stop(proc)
    assert proc.returncode == 0


def _soft_limit(soft: int, hard: int | None = None):
    def set_it() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                                                    if hard is None else hard))
    return set_it


def test_a_soft_descriptor_limit_below_what_the_units_need_is_raised_to_the_hard_limit():
    units = 200
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < fds_needed(units) + units:
        pytest.skip("RLIMIT_NOFILE hard limit too low on this machine")
    proc, urls = spawn(units, pty=False, serial=1, preexec_fn=_soft_limit(64))
    socks: list[socket.socket] = []
    try:
        socks = connect(urls)
        assert_each_answers_with_its_serial([s.fileno() for s in socks], 1)
    finally:
        for s in socks:
            s.close()
        stop(proc)


@pytest.mark.parametrize("where", [["--tcp", "127.0.0.1:0"], ["--pty"]])
def test_a_hard_descriptor_limit_too_low_for_the_units_is_one_message_and_exit_2_before_serving(where):
    units = 200
    r = subprocess.run([sys.executable, "-m", "unohil.emulator", "showdown", *where, "--count", str(units)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, preexec_fn=_soft_limit(64, 64))
    assert r.returncode == 2
    assert r.stdout == ""                                    # not one unit was served
    (line,) = r.stderr.splitlines()
    need = int(line.split(" need ")[1].split()[0])
    assert need >= FDS_PER_UNIT * units
    assert line.startswith(f"emulator: {units} unit(s)") and "only 64" in line and "RLIMIT_NOFILE" in line


def test_selector_timeouts_never_end_a_wait_later_than_asked():
    """What the loop asks for, through the selector's own rounding (up to whole milliseconds), as
    epoll_wait gets it (CPython converts the seconds to nanoseconds and then to milliseconds,
    rounding up both times), is never more than asked, and short of it by less than a millisecond,
    or two for the few that the second rounding would make one more."""
    import selectors

    passed = []

    class Epoll:
        def poll(self, timeout, max_events):
            passed.append(timeout)
            return []

    selector = selectors.DefaultSelector()
    if not isinstance(selector, selectors.EpollSelector):
        pytest.skip("no epoll here")
    real, selector._selector = selector._selector, Epoll()
    try:
        for us in range(0, 3_000_000, 997):
            passed.clear()
            selector.select(selector_timeout(us))
            (seconds,) = passed
            waited_ms = -(-math.ceil(seconds * 1e9) // 1_000_000)
            assert us - 2000 < waited_ms * 1000 <= us
    finally:
        selector._selector = real
        selector.close()


def test_a_tcp_client_replaced_while_the_old_one_hangs_up_leaves_the_unit_serving_the_new_one():
    """The old connection's hang-up and the new one's arrival reach the loop together, in either
    order: the descriptor closed by one event is not served by the next, and registrations follow."""
    import threading

    from unohil.emulator.clock import RealClock
    from unohil.emulator.device import Device
    from unohil.emulator.serve import Server, TcpPort
    clock = RealClock()
    server = Server(clock)
    port = TcpPort("127.0.0.1", 0)
    device = Device("showdown", clock, serial=77)
    server.add(device, port)
    device.start()
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = [port.name]
    try:
        (old,) = connect(url)
        for _ in range(20):
            assert hello_round([old.fileno()], timeout_s=10)[old.fileno()].serial == 77
            (new,) = connect(url)
            old.close()
            old = new
        assert hello_round([old.fileno()], timeout_s=10)[old.fileno()].serial == 77
        old.close()
        server.stop()
        thread.join(timeout=10)
        assert not thread.is_alive()
        # registered: the wake-up pipe, the listener and the client the unit has now, nothing stale
        assert set(server._selector.get_map()) == {server._wake_r, *port.read_fds()}
    finally:
        server.stop()
        server.close()
