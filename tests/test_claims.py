"""Claims: one process drives a unit at a time, whatever URL names it, and a second opener is
refused before it connects (a TCP unit would be taken over) or waits when asked to."""
import os
import threading
import time
from pathlib import Path

import pytest

from unohil.harness.cli import main
from unohil.harness.errors import DeviceBusy, DeviceMismatch
from unohil.harness.links import claim
from unohil.harness.session.driver import Driver


def _tcp_unit(emulator_process, tmp_path, *extra):
    log = tmp_path / "connections.log"
    proc, (url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0", "--connection-log", str(log), *extra)
    return url, int(url.rsplit(":", 1)[1]), log


def _connects(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if " connect " in line]


def test_two_spellings_of_one_unit_share_one_lock(emulator_process, tmp_path):
    url, port, log = _tcp_unit(emulator_process, tmp_path)
    with Driver.open(url):
        for other in (f"socket://localhost:{port}", f"rfc2217://127.0.0.1:{port}?ign_set_control"):
            with pytest.raises(DeviceBusy, match=rf"the unit at 127\.0\.0\.1:{port} is in use by pid {os.getpid()}"):
                Driver.open(other)
        assert len(_connects(log)) == 1, "a refused opener must not have connected"
    with Driver.open(f"socket://localhost:{port}") as d:       # released at close: the other spelling opens
        assert d.kind == "showdown"


def test_hello_on_a_unit_in_use_is_refused_not_a_kick(emulator_process, tmp_path, capsys):
    url, port, log = _tcp_unit(emulator_process, tmp_path)
    with Driver.open(url) as d:
        assert main(["hello", "--device", f"socket://localhost:{port}"]) == 2
        err = capsys.readouterr().err
        assert f"is in use by pid {os.getpid()}" in err and "--wait SECONDS" in err
        d.status()                      # the holder's session goes on
    text = log.read_text()
    assert len(_connects(log)) == 1 and "replacing" not in text


def test_wait_takes_the_unit_once_its_holder_lets_go(emulator_process, tmp_path, capsys):
    url, port, log = _tcp_unit(emulator_process, tmp_path)
    d = Driver.open(url)
    threading.Timer(0.5, d.close).start()
    assert main(["hello", "--device", f"socket://localhost:{port}", "--wait", "20"]) == 0
    assert "showdown unit, serial 1" in capsys.readouterr().out
    assert "replacing" not in log.read_text()
    assert len(_connects(log)) == 2


def test_a_unit_reached_by_a_second_route_is_refused_and_then_refused_unconnected(tmp_path):
    """Two endpoints, one unit (two ser2net ports on one tty): its identity is the lock."""
    first = claim.Claim("socket://rig-a:7000", "tcp 10.0.0.1:7000").take()
    first.identified("showdown", 42)
    second = claim.Claim("socket://rig-a:7001", "tcp 10.0.0.1:7001").take()
    with pytest.raises(DeviceBusy, match=r"the showdown unit serial 42 is in use by pid \d+ .*socket://rig-a:7000"):
        second.identified("showdown", 42)
    second.release()
    # the unit is now known on the second route: the next opener there is refused before connecting
    with pytest.raises(DeviceBusy, match="the showdown unit serial 42 last seen there"):
        claim.Claim("socket://rig-a:7001", "tcp 10.0.0.1:7001").take()
    first.release()
    again = claim.Claim("socket://rig-a:7001", "tcp 10.0.0.1:7001").take()
    again.identified("showdown", 42)
    again.release()


def test_another_unit_on_the_same_port_moves_the_claim(tmp_path):
    c = claim.Claim("/dev/ttyX", "port /dev/ttyX").take()
    c.identified("showdown", 1)
    c.identified("flash", 9)            # the board was swapped: the old unit's lock goes
    other = claim.Claim("socket://h:1", "tcp 10.0.0.2:1").take()
    other.identified("showdown", 1)
    with pytest.raises(DeviceBusy):
        other.identified("flash", 9)
    c.release()
    other.release()


def test_endpoints_name_what_is_connected_to_not_the_spelling():
    assert claim.endpoint_of("socket://localhost:7000") == claim.endpoint_of("rfc2217://127.0.0.1:7000?ign_set_control")
    assert claim.endpoint_of("socket://127.0.0.1:7000") != claim.endpoint_of("socket://127.0.0.1:7001")
    assert claim.endpoint_of("emu://showdown?clock=virtual") is None          # private to the process
    assert claim.endpoint_of("labgrid://?unit=showdown") is None              # the coordinator locks
    link = os.path.join("/tmp", f"unohil-link-{os.getpid()}")
    os.symlink("/dev/null", link)
    try:
        assert claim.endpoint_of(link) == claim.endpoint_of("/dev/null")
    finally:
        os.unlink(link)


def test_the_holder_is_written_where_the_next_opener_reads_it(tmp_path):
    c = claim.Claim("socket://rig:1", "tcp 10.0.0.3:1").take()
    with pytest.raises(DeviceBusy) as err:
        claim.Claim("socket://rig-alias:1", "tcp 10.0.0.3:1").take()
    holder = err.value.holder
    assert holder["pid"] == os.getpid() and holder["url"] == "socket://rig:1" and holder["host"]
    c.release()


def test_waiting_gives_up_saying_how_long_it_waited():
    c = claim.Claim("socket://rig:2", "tcp 10.0.0.4:2").take()
    t0 = time.monotonic()
    with claim.waiting(0.3), pytest.raises(DeviceBusy, match="still after waiting 0.3 s"):
        claim.Claim("socket://rig:2", "tcp 10.0.0.4:2").take()
    assert time.monotonic() - t0 >= 0.3
    c.release()


def test_a_failed_open_releases_its_claim(emulator_process, tmp_path):
    url, port, _log = _tcp_unit(emulator_process, tmp_path)
    with pytest.raises(DeviceMismatch, match="not a flash"):
        Driver.open(url, kind="flash")
    with Driver.open(url):
        pass
