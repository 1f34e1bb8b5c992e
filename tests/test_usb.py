"""usb:// through pyusb's own code (find, string descriptors, configuration, claiming, bulk
transfers) against emulated units on an emulated bus (emulator/usb_backend.py)."""
import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import usb.core
import usb.util

from unohil import protocol
from unohil.emulator.usb_backend import EP_IN, EP_OUT, EmulatedBackend
from unohil.harness import DeviceURLError, Driver, LinkClosed, cli
from unohil.harness.links import usb as usb_link
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_paths
from unohil.protocol import StreamDecoder, encode, msg

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bus():
    backend = EmulatedBackend()
    previous = usb_link.set_backend(backend)
    yield backend
    usb_link.set_backend(previous)
    backend.close()


def _race(d):
    d.config_set("countdown_min_us", 600_000)
    d.config_set("countdown_max_us", 600_000)
    d.input("load_cards", value=2)
    d.input("timer")
    green = d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 3_000_000, "green")
    d.inject(green.dev_us + 150_000, "paddle_b")
    d.inject(green.dev_us + 190_000, "paddle_a")
    v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 3_000_000, "verdict")
    m = v.msg
    assert m.loser == 0 and m.press_b_us == (green.dev_us + 150_000) & 0xFFFFFFFF
    assert m.press_a_us == protocol.NONE_U32 or m.press_a_us == (green.dev_us + 190_000) & 0xFFFFFFFF
    assert m.reaction_b_us == m.press_b_us - m.green_us
    return v


def test_descriptors_seen_through_pyusb(bus):
    bus.add("showdown", serial=0x2A)
    dev = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=bus)
    assert dev.bcdUSB == 0x0200 and dev.serial_number == "0000002A"
    assert "Showdown" in dev.product and dev.manufacturer
    intf = dev.get_active_configuration()[(0, 0)]
    assert (intf.bInterfaceClass, intf.bInterfaceSubClass, intf.bInterfaceProtocol) == (0xFF, 0, 0)
    eps = {e.bEndpointAddress: e for e in intf}
    assert set(eps) == {EP_OUT, EP_IN}
    assert all(usb.util.endpoint_type(e.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK and e.wMaxPacketSize == 64
               for e in eps.values())
    usb.util.dispose_resources(dev)


def test_handshake_and_a_full_race_over_usb(bus):
    bus.add("showdown", serial=5, seed=3)
    with Driver.open("usb://1209:0001", kind="showdown") as d:
        assert d.identity.serial == 5 and d.identity.seed == 3
        assert d.link.serial == "00000005" and not d.link.virtual
        v = _race(d)
        est = d.clock.estimate
        assert v.host_us >= est.to_host(v.dev_us) - est.uncertainty_us - 1


def test_plain_usb_url_means_the_development_ids(bus):
    bus.add("showdown")
    with Driver.open("usb://") as d:
        assert d.kind == "showdown"


def test_serial_selects_among_two_units(bus):
    bus.add("showdown", serial=0x2A, seed=4)
    bus.add("showdown", serial=7, seed=9)
    for query, serial, seed in (("0000002A", 42, 4), ("2a", 42, 4), ("00000007", 7, 9), ("7", 7, 9)):
        with Driver.open(f"usb://1209:0001?serial={query}") as d:
            assert (d.identity.serial, d.identity.seed) == (serial, seed)
    # both open at once, each on its own unit
    with Driver.open("usb://1209:0001?serial=2A") as a, Driver.open("usb://1209:0001?serial=7") as b:
        assert a.identity.boot_id != b.identity.boot_id
        assert a.status().boot_id == a.identity.boot_id and b.status().boot_id == b.identity.boot_id


def test_several_units_without_serial_is_an_error_listing_their_serials(bus):
    bus.add("showdown", serial=0x2A)
    bus.add("showdown", serial=7)
    with pytest.raises(DeviceURLError) as exc:
        Driver.open("usb://1209:0001")
    text = str(exc.value)
    assert "2 1209:0001 devices" in text and "0000002A (IDENTITY.serial 42)" in text and "00000007" in text
    assert "?serial=" in text


def test_missing_device_lists_what_is_attached(bus):
    with pytest.raises(DeviceURLError, match="no USB devices are visible"):
        Driver.open("usb://1209:0001")
    bus.add("showdown", pid=0x0002)
    with pytest.raises(DeviceURLError, match=r"no USB device 1209:0001 is attached \(attached: 1209:0002\)"):
        Driver.open("usb://1209:0001")
    with Driver.open("usb://1209:0002") as d:
        assert d.kind == "showdown"


def test_unknown_serial_lists_the_serials_present(bus):
    bus.add("showdown", serial=3)
    with pytest.raises(DeviceURLError, match=r"no 1209:0001 device with serial 99; attached: 00000003"):
        Driver.open("usb://1209:0001?serial=99")


def test_access_denied_names_the_udev_rule(bus):
    bus.add("showdown", access=False)
    with pytest.raises(DeviceURLError) as exc:
        Driver.open("usb://1209:0001")
    assert "permission denied" in str(exc.value) and 'ATTR{idVendor}=="1209"' in str(exc.value)
    with pytest.raises(DeviceURLError, match="permission denied.*udev"):
        Driver.open("usb://1209:0001?serial=1")


def test_a_claimed_unit_is_in_use(bus):
    bus.add("showdown")
    with Driver.open("usb://1209:0001"):
        with pytest.raises(DeviceURLError, match="in use by another program"):
            Driver.open("usb://1209:0001")
    with Driver.open("usb://1209:0001"):      # released on close
        pass


def test_an_unconfigured_unit_is_configured(bus):
    unit = bus.add("showdown", configured=False)
    with Driver.open("usb://1209:0001") as d:
        assert unit.configuration == 1 and d.kind == "showdown"


def test_without_libusb_the_error_says_what_to_install(monkeypatch):
    import usb.backend.libusb0
    import usb.backend.libusb1
    import usb.backend.openusb
    for mod in (usb.backend.libusb1, usb.backend.libusb0, usb.backend.openusb):
        monkeypatch.setattr(mod, "get_backend", lambda *a, **k: None)
    monkeypatch.delenv("UNOHIL_USB_BACKEND", raising=False)
    previous = usb_link.set_backend(None)
    try:
        with pytest.raises(DeviceURLError, match="no USB backend: libusb-1.0 is not installed"):
            Driver.open("usb://1209:0001")
    finally:
        usb_link.set_backend(previous)


@pytest.mark.parametrize("url, what", [
    ("usb://12:34:56", "expected usb://VID:PID"), ("usb://xyz:0001", "expected usb://VID:PID"),
    ("usb://1209:0001?read_size=100", "multiple of 64"), ("usb://1209:0001?speed=9", "unknown option"),
])
def test_bad_usb_urls(bus, url, what):
    with pytest.raises(DeviceURLError, match=what):
        Driver.open(url)


def test_unplugged_mid_run_is_a_clear_link_closed_and_reconnect_works(bus):
    unit = bus.add("showdown")
    d = Driver.open("usb://1209:0001")
    try:
        boot = d.identity.boot_id
        d.config_set("countdown_min_us", 2_000_000)
        d.input("load_cards", value=1)
        d.input("timer")
        threading.Timer(0.15, unit.unplug).start()
        # LinkClosed, not WaitTimeout: the blocked read woke up at the unplug instead of running out
        with pytest.raises(LinkClosed) as exc:
            d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 5_000_000, "verdict")
        assert "usb://1209:0001: the unit was unplugged" in str(exc.value) and d.link.closed
        with pytest.raises(LinkClosed):
            d.status()
        with pytest.raises(DeviceURLError, match="no USB devices are visible"):
            d.reconnect()
        unit.plug()
        ident = d.reconnect()
        assert ident.boot_id != boot and d.status().next_event_seq >= 1
    finally:
        d.close()


def test_several_frames_in_one_write_span_packets(bus):
    bus.add("showdown")
    with Driver.open("usb://1209:0001") as d:
        link = d.link
        cmds = [msg.STATUS_GET(), msg.CONFIG_GET(param=0x10), msg.TIME_SYNC(t1_host_us=123), msg.HELLO(1, 0),
                msg.INJECT_CANCEL(), msg.STATUS_GET()]
        blob = b"".join(encode(m, 1000 + i, 0) for i, m in enumerate(cmds))
        assert len(blob) > 64
        link.write(blob)
        replies = []
        dec = StreamDecoder()
        deadline = time.monotonic() + 2
        while len(replies) < len(cmds) and time.monotonic() < deadline:
            data, _ = link.read(100_000)
            replies += [f for f in dec.feed(data) if f.msg.KIND == "reply"]
        assert [f.msg.cmd_seq for f in replies] == [1000 + i for i in range(len(cmds))]
        assert [f.msg.NAME for f in replies] == ["STATUS", "CONFIG_VALUE", "TIME_SYNC_REPLY", "IDENTITY", "ACK",
                                                 "STATUS"]


def test_a_reader_taking_one_packet_at_a_time_reassembles_frames(bus):
    bus.add("showdown")
    with Driver.open("usb://1209:0001?read_size=64") as d:
        link = d.link
        assert link.read_size == 64
        for _ in range(3):
            d.input("load_cards", value=1)
            d.input("load_cards", "release", value=1)
        d.drain(50_000)
        # resend of the whole buffer: one burst of events, far more than one packet
        link.write(encode(msg.EVENT_RESEND(first_seq=0, count=40), 77, 0))
        sizes, frames, dec = [], [], StreamDecoder()
        t_end = time.monotonic() + 2
        while time.monotonic() < t_end:
            data, _ = link.read(50_000)
            if not data and frames and frames[-1].msg.KIND == "event" and len(frames) > 5:
                break
            sizes.append(len(data))
            frames += dec.feed(data)
        assert max(sizes) == 64 and sum(sizes) > 3 * 64
        assert not any(isinstance(f, protocol.FrameError) for f in frames)
        ack = next(f for f in frames if f.msg.NAME == "ACK" and f.msg.cmd_seq == 77)
        events = [f for f in frames if f.msg.KIND == "event"]
        assert len(events) == ack.msg.value and [e.msg.event_seq for e in events] == list(range(ack.msg.value))


def _exactly_one_packet_of_replies():
    # two ACKs (17 wire bytes each) and a TIME_SYNC_REPLY (30): 64 bytes, one full packet
    return (encode(msg.INJECT_CANCEL(), 1, 0) + encode(msg.INJECT_CANCEL(), 2, 0)
            + encode(msg.TIME_SYNC(t1_host_us=0x0101010101010101), 3, 0))


def _open_raw(bus, serial):
    dev = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=bus,
                        custom_match=lambda d: d.serial_number == f"{serial:08X}")
    usb.util.claim_interface(dev, 0)
    while True:                                   # the BOOT event
        try:
            dev.read(EP_IN, 512, 20)
        except usb.core.USBTimeoutError:
            break
    return dev


def test_zero_length_packet_ends_a_transfer_of_whole_packets(bus):
    good_unit = bus.add("showdown", serial=1)
    buggy_unit = bus.add("showdown", serial=2, zlp=False)
    good, buggy = _open_raw(bus, 1), _open_raw(bus, 2)
    try:
        good.write(EP_OUT, _exactly_one_packet_of_replies())
        good_unit.wait_output(64)                 # all three replies made before the IN token
        assert len(good.read(EP_IN, 512, 2000)) == 64
        assert good_unit.last_end == "zlp"        # ended by the ZLP, not by the timeout
        # a reader of one packet at a time sees the ZLP as a transfer of its own
        good.write(EP_OUT, _exactly_one_packet_of_replies())
        good_unit.wait_output(64)
        assert len(good.read(EP_IN, 64, 2000)) == 64 and len(good.read(EP_IN, 64, 2000)) == 0
        # without the ZLP a multi-packet read only ends at its timeout (and libusb returns the data)
        buggy.write(EP_OUT, _exactly_one_packet_of_replies())
        buggy_unit.wait_output(64)
        assert len(buggy.read(EP_IN, 512, 300)) == 64
        assert buggy_unit.last_end == "timeout"
        # a buffer smaller than a packet is an overflow, as with libusb
        good.write(EP_OUT, _exactly_one_packet_of_replies())
        good_unit.wait_output(64)
        with pytest.raises(usb.core.USBError) as exc:
            good.read(EP_IN, 10, 500)
        assert exc.value.errno == errno.EOVERFLOW
    finally:
        usb.util.dispose_resources(good)
        usb.util.dispose_resources(buggy)


def test_zero_length_packets_do_not_disturb_the_link(bus):
    unit = bus.add("showdown")
    with Driver.open("usb://1209:0001?read_size=64") as d:
        d.link.write(_exactly_one_packet_of_replies())
        unit.wait_output(64)
        frames = []
        dec = StreamDecoder()
        t_end = time.monotonic() + 1
        while len(frames) < 3 and time.monotonic() < t_end:
            data, _ = d.link.read(100_000)
            frames += dec.feed(data)
        assert [f.msg.NAME for f in frames] == ["ACK", "ACK", "TIME_SYNC_REPLY"]
        data, _ = d.link.read(20_000)
        assert data == b"" and d.link.zero_length_packets == 1


def test_library_scenarios_through_the_runner_over_usb(bus):
    # timers at their exact due times (as `python -m unohil.emulator --clock virtual`): the exact scenarios
    # anchor on the green event's header time
    bus.add("showdown", clock="virtual")
    wanted = {"loading during the countdown is refused", "second press exactly one tie window later is not a tie",
              "exact tie, the line puts both cards on A's side"}
    scenarios = [s for s in load_paths([str(ROOT / "fixtures/scenarios/showdown")]) if s.name in wanted]
    assert len(scenarios) == len(wanted)
    with Driver.open("usb://1209:0001") as d:
        runner = Runner(d)
        results = [runner.run(sc) for sc in scenarios]
    bad = [(r.scenario.name, [(x.status, x.error, x.failures) for x in r.races]) for r in results
           if r.status != "pass"]
    assert not bad
    assert {r.mode for r in results} == {"test-mode"}


def test_cli_run_with_a_usb_device(bus, tmp_path, capsys):
    bus.add("showdown")
    scenario = tmp_path / "quick.yaml"
    scenario.write_text("""
- name: quick win over usb
  unit: showdown
  seed: 5
  config: {countdown_min_us: 500000, countdown_max_us: 500000}
  steps:
    - load: 1
    - press: timer
      at: start + 1000
    - press: paddle_a
      at: green + 200000
  expect:
    verdict: {loser: b, reason: first_press, reaction_a_us: {min: 200000, max: 205000}}
""")
    out = tmp_path / "r.json"
    rc = cli.main(["run", str(scenario), "--device", "usb://1209:0001", "--json", str(out), "-q"])
    assert rc == 0, capsys.readouterr()
    assert '"usb://1209:0001"' in out.read_text()
    rc = cli.main(["run", str(scenario), "--device", "usb://1209:0001?serial=99", "-q"])
    assert rc == 2 and "no 1209:0001 device with serial 99" in capsys.readouterr().err


def test_the_backend_can_come_from_the_environment():
    env = dict(os.environ, UNOHIL_USB_BACKEND="unohil.emulator.usb_backend",
               UNOHIL_USB_UNITS="showdown?serial=66&seed=8,showdown?serial=67")
    proc = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "hello", "--device", "usb://1209:0001?serial=42"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "showdown unit, serial 66" in proc.stdout and "seed 8" in proc.stdout


def test_the_environments_units_get_serials_of_the_process_own():
    """Two harness processes on one host, each with its emulated bus: two units, not one seen twice."""
    from unohil.emulator.build import own_serial
    env = dict(os.environ, UNOHIL_USB_BACKEND="unohil.emulator.usb_backend", UNOHIL_USB_UNITS="showdown")
    proc = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "hello", "--device", "usb://1209:0001"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"showdown unit, serial {own_serial(0, pid=proc.pid)}" in out
