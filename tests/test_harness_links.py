"""The driver over real links: a pty and TCP to an emulator in another process, and a
socketpair to a real-clock emulator in this one. Behaviour only; no wall-clock asserts."""
import os
import socket
import subprocess
import sys
import tty

import pytest

from unohil.harness import DeviceURLError, Driver
from unohil.harness.errors import LinkClosed
from unohil.harness.links import FdLink


def _full_race(d):
    d.config_set("countdown_min_us", 600_000)
    d.config_set("countdown_max_us", 600_000)
    d.input("load_cards", value=2)
    d.input("timer")
    green = d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 3_000_000, "green")
    d.inject(green.dev_us + 150_000, "paddle_b")
    d.inject(green.dev_us + 190_000, "paddle_a")
    v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 3_000_000, "verdict")
    m = v.msg
    # injected presses land at their exact device times, even over a real link on the real clock
    assert m.loser == 0 and m.press_b_us == (green.dev_us + 150_000) & 0xFFFFFFFF
    assert m.knowable_us == m.press_b_us + 1000 and v.dev_us >= m.knowable_us
    assert m.reaction_b_us == m.press_b_us - m.green_us
    return green, v


def test_pty_to_a_separate_emulator_process(emulator_process):
    proc, (path,) = emulator_process("showdown", "--pty", "--seed", "3")
    with Driver.open(path, kind="showdown") as d:
        assert d.identity.seed == 3
        green, v = _full_race(d)
        # host arrival is after emission, mapped through clock sync, within its uncertainty
        est = d.clock.estimate
        assert v.host_us >= est.to_host(v.dev_us) - est.uncertainty_us - 1


def test_pty_port_is_exclusive(emulator_process):
    proc, (path,) = emulator_process("showdown", "--pty")
    with Driver.open(path):
        with pytest.raises(DeviceURLError, match="in use"):
            Driver.open(path)


def test_socket_url_to_a_tcp_emulator(emulator_process):
    proc, (addr,) = emulator_process("showdown", "--tcp", "127.0.0.1:0")
    url = addr if addr.startswith("socket://") else f"socket://{addr.split()[-1]}"
    with Driver.open(url) as d:
        _full_race(d)
    # a client that reconnects gets a working unit
    with Driver.open(url) as d:
        _full_race(d)


def test_emulator_process_gone_is_a_link_error(emulator_process):
    proc, (path,) = emulator_process("showdown", "--pty")
    d = Driver.open(path)
    try:
        proc.terminate()
        proc.wait(timeout=10)
        with pytest.raises(LinkClosed):
            d.wait_for(lambda f: False, 5_000_000, "anything")
    finally:
        d.close()


def test_real_clock_in_process_clock_sync_within_uncertainty():
    with Driver.open("emu://showdown?clock=real") as d:
        est = d.sync_clock(16)
        dev = d.link._on_close.device          # the emulator's Device, for the true clock
        host = d.now_us()
        true_dev = dev.now()
        # device time read after host time: the true value can only be later, by the call's duration
        assert est.to_device(host) - est.uncertainty_us - 1 <= true_dev
        host2 = d.now_us()
        assert abs(est.to_device(host2) - dev.now()) <= est.uncertainty_us + (d.now_us() - host) + 1


# ---- FdLink's blocking reads: the kernel's own timeout, in slices ----

class _CountingReads:
    """os.read as FdLink sees it, counted."""

    def __init__(self, monkeypatch):
        import unohil.harness.links.fd as links
        self.calls = 0
        real = os.read

        def read(fd, n):
            self.calls += 1
            return real(fd, n)
        monkeypatch.setattr(links.os, "read", read)


def _pty():
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    return master, slave


def test_fdlink_on_a_tty_blocks_in_read_slices_until_the_timeout(monkeypatch):
    master, slave = _pty()
    link = FdLink("pty", fd=slave)
    try:
        reads = _CountingReads(monkeypatch)
        start = link.now_us()
        data, host_us = link.read(250_000)
        assert data == b""
        assert host_us >= start + 250_000
        assert reads.calls <= 3          # two slices of 100 ms, the rest in select: no spinning
        os.write(master, b"\x01\x02")
        assert link.read(5_000_000)[0] == b"\x01\x02"
    finally:
        os.close(master)
        os.close(slave)


def test_fdlink_of_a_process_driving_many_units_waits_in_select_not_in_slices(monkeypatch):
    # a slice that runs out wakes its thread for nothing: with thousands of units that is the process's time
    monkeypatch.setattr(FdLink, "one_of_many", True)
    master, slave = _pty()
    link = FdLink("pty", fd=slave)
    try:
        reads = _CountingReads(monkeypatch)
        start = link.now_us()
        assert link.read(250_000)[0] == b""
        assert link.now_us() >= start + 250_000 and reads.calls == 0
        os.write(master, b"\x01\x02")
        assert link.read(5_000_000)[0] == b"\x01\x02" and reads.calls == 1
    finally:
        os.close(master)
        os.close(slave)


def test_fdlink_on_a_socket_blocks_in_read_slices_and_sees_the_peer_close(monkeypatch):
    ours, theirs = socket.socketpair()
    link = FdLink("socketpair", sock=ours)
    try:
        reads = _CountingReads(monkeypatch)
        start = link.now_us()
        assert link.read(250_000)[0] == b""
        assert link.now_us() >= start + 250_000 and reads.calls <= 3
        theirs.sendall(b"abc")
        data, host_us = link.read(5_000_000)
        assert data == b"abc" and host_us >= start
        theirs.close()
        with pytest.raises(LinkClosed, match="closed the connection"):
            link.read(5_000_000)
    finally:
        link.close()


def test_fdlink_sees_a_hung_up_pty_at_once_not_at_the_deadline(monkeypatch):
    master, slave = _pty()
    link = FdLink("pty", fd=slave)
    reads = _CountingReads(monkeypatch)
    os.close(master)
    try:
        with pytest.raises(LinkClosed):
            link.read(60_000_000)
        assert reads.calls <= 3          # an empty read at once is end of file, not a slice run out
    finally:
        os.close(slave)


def test_fdlink_starts_no_kernel_slice_it_could_not_finish_by_the_deadline(monkeypatch):
    # the kernel rounds a slice up to its tick: within that margin of the deadline, select() waits
    master, slave = _pty()
    link = FdLink("pty", fd=slave)
    try:
        reads = _CountingReads(monkeypatch)
        assert link.read(FdLink.SLICE_US + FdLink.SLICE_MARGIN_US - 1)[0] == b""
        assert reads.calls == 0
    finally:
        os.close(master)
        os.close(slave)


def test_fdlink_write_to_a_tty_nobody_reads_fails_after_its_timeout_not_never():
    master, slave = _pty()
    link = FdLink("pty", fd=slave)
    link.WRITE_TIMEOUT_US = 50_000
    try:
        with pytest.raises(LinkClosed, match="write timed out"):
            link.write(bytes(1_000_000))      # more than the pty holds; the other end never reads
        assert os.get_blocking(slave)          # reads still block in the kernel afterwards
    finally:
        os.close(master)
        os.close(slave)


def test_fdlink_reads_a_pty_master_and_a_line_mode_tty_with_select():
    master, slave = os.openpty()            # the slave stays in line mode (ICANON)
    try:
        for fd in (master, slave):
            link = FdLink("pty", fd=fd)
            assert not link._sliced
            assert link.read(150_000)[0] == b""    # VTIME would not end these reads
    finally:
        os.close(master)
        os.close(slave)


def test_harness_imports_and_reads_sockets_without_termios():
    code = ("import sys; sys.modules['termios'] = None\n"
            "import socket, unohil.harness.links as links\n"
            "a, b = socket.socketpair(); link = links.FdLink('pair', sock=a)\n"
            "assert not link._sliced; b.sendall(b'ok'); print(link.read(500_000)[0].decode())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
