"""Devices on other machines: an emulator on a pty, exposed by Debian's ser2net over RFC 2217
and raw TCP on 127.0.0.1, driven through rfc2217:// and socket:// URLs, as a rack would be.

.ci/run installs ser2net and sets UNOHIL_REQUIRE_SER2NET=1, so in CI a missing ser2net fails."""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from unohil.harness import DeviceURLError, Driver
from unohil.harness.cli import main

SER2NET = shutil.which("ser2net") or ("/usr/sbin/ser2net" if os.path.exists("/usr/sbin/ser2net") else None)
if SER2NET is None:
    if os.environ.get("UNOHIL_REQUIRE_SER2NET"):
        raise RuntimeError("ser2net is required (UNOHIL_REQUIRE_SER2NET=1) but not installed")
    pytest.skip("ser2net is not installed (apt-get install ser2net)", allow_module_level=True)

UNITS = 4


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def ser2net_config(ptys, rfc_ports, raw_ports) -> str:
    """The configuration users need: one RFC 2217 and one raw TCP accepter per unit, no chardelay."""
    out = []
    for i, (pty, rp, tp) in enumerate(zip(ptys, rfc_ports, raw_ports)):
        for name, accepter in ((f"unit{i}", f"telnet(rfc2217),tcp,127.0.0.1,{rp}"),
                               (f"unit{i}raw", f"tcp,127.0.0.1,{tp}")):
            out += [f"connection: &{name}",
                    f"    accepter: {accepter}",
                    f"    connector: serialdev,{pty},115200n81,local",
                    "    options:",
                    "      kickolduser: true",
                    "      chardelay: false",
                    ""]
    return "\n".join(out)


def wait_listening(ports) -> None:
    """Until ser2net accepts connections on every port (10 s at most)."""
    deadline = time.monotonic() + 10
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("ser2net did not start listening") from None
                time.sleep(0.05)


@pytest.fixture(scope="module")
def rack(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("ser2net")
    emu = subprocess.Popen([os.sys.executable, "-m", "unohil.emulator", "showdown", "--pty", "--count", str(UNITS),
                            "--clock", "virtual", "--seed", "5"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ptys = [emu.stdout.readline().strip() for _ in range(UNITS)]
    rfc_ports, raw_ports = _free_ports(UNITS), _free_ports(UNITS)
    cfg = tmp / "ser2net.yaml"
    cfg.write_text(ser2net_config(ptys, rfc_ports, raw_ports))
    s2n = subprocess.Popen([SER2NET, "-n", "-d", "-c", str(cfg), "-P", str(tmp / "ser2net.pid")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(rfc_ports + raw_ports)
    yield {"rfc2217": [f"rfc2217://127.0.0.1:{p}?ign_set_control" for p in rfc_ports],
           "socket": [f"socket://127.0.0.1:{p}" for p in raw_ports]}
    for p in (s2n, emu):
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def test_rfc2217_without_ign_set_control_says_what_to_add(rack):
    url = rack["rfc2217"][0].split("?")[0]
    with pytest.raises(DeviceURLError, match=r"Add `\?ign_set_control`"):
        Driver.open(url)


@pytest.mark.parametrize("scheme", ["rfc2217", "socket"])
def test_the_scenario_library_through_ser2net(rack, scheme, tmp_path):
    out = tmp_path / "r.json"
    args = ["run", "fixtures/scenarios/showdown", "-q", "--json", str(out),
            # the long repeats and the 81-race sweep run on the in-process and pty links
            "-k", "not sweep and not fifty and not three"]
    for url in rack[scheme]:
        args += ["--device", url]
    rc = main(args)
    doc = json.loads(out.read_text())
    bad = [(s["name"], s["results"][0]["failures"] or s["error"]) for s in doc["scenarios"]
           if s["status"] != "pass" and s["applicable"]]
    assert rc == 0, bad
    assert doc["summary"]["passed"] >= 25
    assert doc["health"]["events_lost"] == 0


def test_round_trip_rfc2217_against_socket_in_the_same_run(rack):
    """Reported, not asserted: wall-clock figures belong in benchmarks."""
    rtts = {}
    for scheme in ("rfc2217", "socket"):
        with Driver.open(rack[scheme][-1]) as d:
            d.sync_clock(32)
            rtts[scheme] = d.clock.estimate.best_rtt_us
    print(f"\nbest TIME_SYNC round trip: rfc2217 {rtts['rfc2217']} us, socket {rtts['socket']} us")
    assert all(v > 0 for v in rtts.values())
