"""Claims: one process drives a unit at a time, whatever URL names it; a second opener is refused
before it connects (a TCP unit would be taken over) or waits when asked to. A claim is keyed by
what answers now (the endpoint, and the unit's identity as it answers on this open), never by what
answered on that endpoint before. The real-process cases are in test_claims_processes.py."""
import logging
import os
import socket
import threading

import pytest

from unohil.harness.cli import main
from unohil.harness.errors import DeviceBusy, DeviceMismatch
from unohil.harness.links import claim
from unohil.harness.links.endpoint import endpoint_of
from unohil.harness.session.driver import Driver
from unohil.protocol.catalogue import NONE_U32


def _tcp_unit(emulator_process, tmp_path, *extra):
    log = tmp_path / "connections.log"
    proc, (url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0", "--connection-log", str(log), *extra)
    return url, int(url.rsplit(":", 1)[1]), log


def _connects(log) -> list[str]:
    return [line for line in log.read_text().splitlines() if " connect " in line]


@pytest.fixture
def said(caplog):
    """The warnings the claims gave, each said once per process: forgotten before and after the test."""
    claim._said.clear()
    caplog.set_level(logging.WARNING, logger="unohil.claim")
    yield lambda: [r.getMessage() for r in caplog.records if r.name == "unohil.claim"]
    claim._said.clear()


def test_two_spellings_of_one_unit_share_one_lock(emulator_process, tmp_path):
    url, port, log = _tcp_unit(emulator_process, tmp_path)
    with Driver.open(url):
        for other in (f"socket://localhost:{port}", f"rfc2217://127.0.0.1:{port}?ign_set_control"):
            with pytest.raises(DeviceBusy, match=rf"the unit at localhost:{port} is in use by pid {os.getpid()}"):
                Driver.open(other)
        assert len(_connects(log)) == 1, "a refused opener must not have connected"
    with Driver.open(f"socket://localhost:{port}") as d:       # released at close: the other spelling opens
        assert d.kind == "showdown"


def test_hello_on_a_unit_in_use_is_refused_not_a_kick(emulator_process, tmp_path, capsys):
    url, port, log = _tcp_unit(emulator_process, tmp_path)
    with Driver.open(url) as d:
        assert main(["hello", "--device", f"socket://localhost:{port}"]) == 2
        err = capsys.readouterr().err
        assert f"is in use by pid {os.getpid()}" in err and "--wait SECONDS" in err and "UNOHIL_LOCK_DIR" in err
        d.status()                      # the holder's session goes on
    text = log.read_text()
    assert len(_connects(log)) == 1 and "replacing" not in text


def test_wait_takes_the_unit_once_its_holder_lets_go(emulator_process, tmp_path, capsys):
    url, port, log = _tcp_unit(emulator_process, tmp_path, "--serial", "1234")
    d = Driver.open(url)
    threading.Timer(0.5, d.close).start()
    assert main(["hello", "--device", f"socket://localhost:{port}", "--wait", "20"]) == 0
    assert "showdown unit, serial 1234" in capsys.readouterr().out
    assert "replacing" not in log.read_text()
    assert len(_connects(log)) == 2


def test_one_unit_reached_by_a_second_route_is_refused_naming_the_ways_out(said):
    """Two endpoints, one unit (two ser2net ports on one tty): it answers both with one boot id."""
    first = claim.Claim("socket://rig-a:7000", "tcp 10.0.0.1:7000").take()
    first.identified("showdown", 42, 0xB007)
    second = claim.Claim("socket://rig-a:7001", "tcp 10.0.0.1:7001").take()
    with pytest.raises(DeviceBusy) as err:
        second.identified("showdown", 42, 0xB007)
    text = str(err.value)
    assert f"the showdown unit serial 42 (boot id 0x0000b007, reached here by a second route) is in use by " \
           f"pid {os.getpid()}" in text
    assert "as socket://rig-a:7000" in text and "through 10.0.0.1:7000" in text
    assert "--wait SECONDS" in text and "UNOHIL_LOCK_DIR" in text and "--serial N" in text
    assert err.value.holder["boot_id"] == 0xB007
    second.release()
    first.release()
    again = claim.Claim("socket://rig-a:7001", "tcp 10.0.0.1:7001").take()
    again.identified("showdown", 42, 0xB007)        # free once the first route lets go
    again.release()
    assert said() == []


def test_two_units_sharing_a_serial_are_each_locked_by_endpoint_and_the_run_says_so_once(said):
    first = claim.Claim("socket://rig-a:7000", "tcp 10.0.0.1:7000").take()
    first.identified("showdown", 7, 0x1111)
    second = claim.Claim("/dev/ttyUSB9", "port /dev/ttyUSB9").take()
    second.identified("showdown", 7, 0x2222)        # another boot: another unit, not refused
    second.release()
    again = claim.Claim("/dev/ttyUSB9", "port /dev/ttyUSB9").take()
    again.identified("showdown", 7, 0x2222)
    (message,) = said()
    assert "/dev/ttyUSB9: another showdown unit reports serial 7 at once" in message
    assert f"held by pid {os.getpid()}" in message and "as socket://rig-a:7000" in message
    assert "locked by its endpoint only" in message
    with pytest.raises(DeviceBusy, match="the unit at /dev/ttyUSB9 is in use"):      # its endpoint still is
        claim.Claim("/dev/ttyUSB9", "port /dev/ttyUSB9").take()
    again.release()
    first.release()


def test_a_unit_without_a_serial_is_locked_by_endpoint_only_said_once(said):
    a = claim.Claim("socket://h:1", "tcp 10.0.0.2:1").take()
    a.identified("flash", NONE_U32, 0x10)
    a.identified("flash", NONE_U32, 0x10)
    b = claim.Claim("socket://h:2", "tcp 10.0.0.2:2").take()
    b.identified("flash", NONE_U32, 0x10)            # even one boot id: no identity to lock
    assert a.unit_lock is None and b.unit_lock is None
    messages = said()
    assert [m.split(": ", 1)[1] for m in messages] == \
        ["the flash unit reports no serial (NONE_U32): it is locked by its endpoint only, so this host "
         "cannot tell it from the same unit reached by another route"] * 2
    assert messages[0].startswith("socket://h:1") and messages[1].startswith("socket://h:2")
    a.release()
    b.release()


def test_an_endpoint_remembers_no_unit(said):
    """A pty number or ttyACM name reused by another unit: what answered there before is no lock."""
    here = claim.Claim("/dev/ttyACM0", "port /dev/ttyACM0").take()
    here.identified("showdown", 5, 0xA)
    here.release()
    elsewhere = claim.Claim("socket://rig:9", "tcp 10.0.0.9:9").take()
    elsewhere.identified("showdown", 5, 0xA)         # that unit, now reached somewhere else and held
    reused = claim.Claim("/dev/ttyACM0", "port /dev/ttyACM0").take()
    reused.identified("showdown", 6, 0xB)
    reused.release()
    elsewhere.release()
    assert not list(claim.lock_dir().glob("*.unit"))


def test_another_unit_on_the_same_port_moves_the_claim():
    c = claim.Claim("/dev/ttyX", "port /dev/ttyX").take()
    c.identified("showdown", 1, 0x1)
    c.identified("flash", 9, 0x2)            # the board was swapped: the old unit's lock goes
    other = claim.Claim("socket://h:1", "tcp 10.0.0.2:1").take()
    other.identified("showdown", 1, 0x1)
    with pytest.raises(DeviceBusy):
        other.identified("flash", 9, 0x2)
    c.release()
    other.release()


def test_a_reboot_keeps_the_unit_claimed_under_its_new_boot_id():
    c = claim.Claim("/dev/ttyY", "port /dev/ttyY").take()
    c.identified("launcher", 3, 0x1)
    c.identified("launcher", 3, 0x2)         # the unit rebooted: the second route sees the new boot id
    other = claim.Claim("socket://h:3", "tcp 10.0.0.2:3").take()
    with pytest.raises(DeviceBusy, match="launcher unit serial 3"):
        other.identified("launcher", 3, 0x2)
    other.release()
    c.release()


def _own_addresses() -> list[str]:
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)})
    except OSError:
        return []


def test_endpoints_name_what_is_connected_to_not_the_spelling(tmp_path):
    one = endpoint_of("socket://127.0.0.1:7000")
    assert one == "tcp localhost:7000"
    for spelling in ("socket://localhost:7000", "rfc2217://127.0.0.1:7000?ign_set_control", "socket://0.0.0.0:7000",
                     "socket://[::ffff:127.0.0.1]:7000", "socket://[::1]:7000", "socket://[::]:7000",
                     "socket://127.0.0.2:7000", *(f"socket://{a}:7000" for a in _own_addresses())):
        assert endpoint_of(spelling) == one, spelling
    assert endpoint_of("socket://127.0.0.1:7001") != one
    assert endpoint_of("socket://192.0.2.1:7000") == "tcp 192.0.2.1:7000"     # TEST-NET-1: never this host's
    assert endpoint_of("socket://[::ffff:192.0.2.1]:7000") == "tcp 192.0.2.1:7000"
    assert endpoint_of("emu://showdown?clock=virtual") is None          # private to the process
    assert endpoint_of("labgrid://?unit=showdown") is None              # the coordinator locks
    link = tmp_path / "unit-link"
    link.symlink_to("/dev/null")
    assert endpoint_of(str(link)) == endpoint_of("/dev/null") == "port /dev/null"


def test_the_holder_is_written_where_the_next_opener_reads_it():
    c = claim.Claim("socket://rig:1", "tcp 10.0.0.3:1").take()
    with pytest.raises(DeviceBusy) as err:
        claim.Claim("socket://rig-alias:1", "tcp 10.0.0.3:1").take()
    holder = err.value.holder
    assert holder["pid"] == os.getpid() and holder["url"] == "socket://rig:1" and holder["host"]
    assert holder["endpoint"] == "tcp 10.0.0.3:1"
    c.release()


def test_waiting_gives_up_saying_how_long_it_waited():
    c = claim.Claim("socket://rig:2", "tcp 10.0.0.4:2").take()
    with claim.waiting(0.3), pytest.raises(DeviceBusy, match="still after waiting 0.3 s; .*UNOHIL_LOCK_DIR"):
        claim.Claim("socket://rig:2", "tcp 10.0.0.4:2").take()
    c.release()


def test_a_failed_open_releases_its_claim(emulator_process, tmp_path):
    url, port, _log = _tcp_unit(emulator_process, tmp_path)
    with pytest.raises(DeviceMismatch, match="not a flash"):
        Driver.open(url, kind="flash")
    with Driver.open(url):
        pass
