"""unohil ports: listing, probing in parallel, and what a port that does not answer looks like."""
import json
import os
import threading

import pytest

from unohil.emulator.usb_backend import EmulatedBackend
from unohil.harness import cli
from unohil.harness.links import usb as usb_link
from unohil.harness.links.ports import scan


@pytest.fixture
def bus():
    backend = EmulatedBackend()
    previous = usb_link.set_backend(backend)
    yield backend
    usb_link.set_backend(previous)
    backend.close()


@pytest.fixture
def silent_pty():
    """A pty pair whose far end never answers."""
    fds = []

    def make():
        master, slave = os.openpty()
        fds.extend((master, slave))
        return os.ttyname(slave)

    yield make
    for fd in fds:
        os.close(fd)


def test_an_emulated_unit_on_a_pty_answers(emulator_process, tmp_path, capsys):
    _proc, (path,) = emulator_process("showdown", "--pty", "--serial", "9")
    out = tmp_path / "ports.json"
    rc = cli.main(["ports", "--also", path, "--no-serial", "--no-usb", "--json", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    (p,) = [p for p in doc["ports"] if p["port"] == path]
    assert (p["status"], p["kind"], p["serial"], p["firmware"], p["protocol"]) == \
        ("unit", "showdown", 9, "0.1.0", "1.0")
    assert p["boot_id"]
    assert "showdown" in capsys.readouterr().out


def test_silent_ports_are_no_answer_and_probed_in_parallel(silent_pty, monkeypatch):
    import unohil.harness.links.ports as ports_mod
    paths = [silent_pty() for _ in range(4)]
    order: list[tuple[str, str]] = []
    lock = threading.Lock()
    real_probe = ports_mod.probe

    def probe(info, timeout_us):
        with lock:
            order.append(("start", info.port))
        try:
            return real_probe(info, timeout_us)
        finally:
            with lock:
                order.append(("end", info.port))
    monkeypatch.setattr(ports_mod, "probe", probe)
    ports, _ = scan(also=paths, timeout_ms=300, serial=False, usb=False)
    assert [p.status for p in ports] == ["no answer"] * 4
    assert all(p.probe_ms is not None for p in ports)
    # in parallel: every probe had started before the first one gave up (one timeout, not four)
    assert [kind for kind, _ in order[:4]] == ["start"] * 4


def test_a_port_that_cannot_be_opened_says_why(tmp_path):
    ports, _ = scan(also=[str(tmp_path / "ttyNOPE")], timeout_ms=100, serial=False, usb=False)
    (p,) = ports
    assert p.status == "error" and "no such port" in p.reason


def test_something_that_is_not_a_unit(silent_pty):
    master, slave = os.openpty()
    path = os.ttyname(slave)

    def echo():                           # a loopback plug: our own HELLO comes back
        try:
            data = os.read(master, 256)
            os.write(master, data)
        except OSError:
            pass

    threading.Thread(target=echo, daemon=True).start()
    try:
        import tty
        tty.setraw(master)
        ports, _ = scan(also=[path], timeout_ms=300, serial=False, usb=False)
        (p,) = ports
        assert p.status == "not a unit" and "no answer to HELLO" in p.reason
    finally:
        os.close(master)
        os.close(slave)


def test_usb_units_on_the_emulated_bus(bus, tmp_path):
    bus.add("showdown", serial=0x11, seed=2)
    bus.add("showdown", serial=0x12)
    bus.add("showdown", serial=0x13, pid=0x0002)         # a unit id we were not told about
    bus.add("showdown", serial=0x14, pid=0x0003, access=False)
    ports, notes = scan(timeout_ms=300, serial=False, usb_ids=[(0x1209, 0x0003)])
    by_port = {p.port: p for p in ports}
    a = by_port["usb://1209:0001?serial=00000011"]
    b = by_port["usb://1209:0001?serial=00000012"]
    assert (a.status, a.kind, a.serial, b.serial) == ("unit", "showdown", 0x11, 0x12)
    assert a.boot_id != b.boot_id and "Showdown" in a.description
    other = by_port["usb://1209:0002?serial=00000013"]
    assert other.status == "not probed" and "--usb-id" in other.reason
    (denied,) = [p for p in ports if p.port.startswith("usb://1209:0003")]
    assert denied.status == "error" and "permission denied" in denied.reason and "udev" in denied.reason
    assert not notes
    # the URL listed is one the harness opens
    from unohil.harness import Driver
    with Driver.open(a.port) as d:
        assert d.identity.serial == 0x11 and d.identity.seed == 2


def test_without_libusb_ports_says_so_in_one_line(monkeypatch, capsys):
    import usb.backend.libusb0
    import usb.backend.libusb1
    import usb.backend.openusb
    for mod in (usb.backend.libusb1, usb.backend.libusb0, usb.backend.openusb):
        monkeypatch.setattr(mod, "get_backend", lambda *a, **k: None)
    monkeypatch.delenv("UNOHIL_USB_BACKEND", raising=False)
    previous = usb_link.set_backend(None)
    try:
        rc = cli.main(["ports", "--no-serial"])
    finally:
        usb_link.set_backend(previous)
    out = capsys.readouterr().out
    assert rc == 0
    lines = [line for line in out.splitlines() if "libusb" in line]
    assert len(lines) == 1 and lines[0].startswith("USB: not listed: no libusb backend")


def test_bad_arguments_are_exit_2(capsys):
    assert cli.main(["ports", "--usb-id", "nope", "--no-serial", "--no-usb"]) == 2
    assert "--usb-id wants VID:PID" in capsys.readouterr().err
    assert cli.main(["ports", "--timeout-ms", "0"]) == 2
