"""The driver against the in-process emulator on the virtual clock: exact and deterministic."""
import pytest

from unohil.harness import Driver, DeviceMismatch, DeviceReset, Nak, WaitTimeout
from unohil.harness.links import open_link
from unohil.protocol import catalogue as cat


def showdown(**opts):
    q = "&".join(f"{k}={v}" for k, v in opts.items())
    return Driver.open("emu://showdown?clock=virtual" + ("&" + q if q else ""))


def test_handshake_reports_identity_and_capabilities():
    with showdown(seed=7, serial=42) as d:
        assert d.kind == "showdown"
        assert d.identity.serial == 42
        assert d.identity.seed == 7
        assert d.identity.proto_major == cat.MAJOR
        assert d.identity.catalog_crc == cat.CATALOG_CRC
        assert d.has_cap("test_mode") and d.has_cap("time_sync") and d.has_cap("event_resend")


def test_expect_kind_mismatch_is_a_clear_error():
    with pytest.raises(DeviceMismatch, match="showdown unit, not a flash"):
        Driver.open("emu://showdown", kind="flash")


def test_config_get_set_and_nak_for_out_of_range():
    with showdown() as d:
        assert d.config_get("tie_window_us") == 1000
        assert d.config_set("tie_window_us", 2500) == 2500
        assert d.config_get("tie_window_us") == 2500
        with pytest.raises(Nak) as exc:
            d.config_set("tie_window_us", 0)
        assert exc.value.error == "bad_value" and exc.value.command == "CONFIG_SET"
        with pytest.raises(Nak, match="unknown_param"):
            d.config_set("turn_short_us", 4_000_000)


def test_input_refused_with_no_cards_is_a_nak_naming_the_command():
    with showdown() as d:
        with pytest.raises(Nak) as exc:
            d.input("timer")
        assert exc.value.error == "wrong_state" and exc.value.command == "INPUT"


def _race_to_green(d, countdown=3_000_000):
    d.config_set("countdown_max_us", countdown)
    d.config_set("countdown_min_us", countdown)
    d.input("load_cards", value=2)
    ack = d.input("timer")
    green = d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 10_000_000, "green")
    return ack, green


def test_injection_lands_at_the_exact_device_time():
    with showdown() as d:
        ack, green = _race_to_green(d)
        assert green.dev_us - ack.dev_us == 3_000_000
        d.inject(green.dev_us + 180_000, "paddle_a")
        seen = d.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.input == 0, 1_000_000, "paddle press")
        assert seen.dev_us == green.dev_us + 180_000
        verdict = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 1_000_000, "verdict")
        assert verdict.msg.reaction_a_us == 180_000
        assert verdict.dev_us == seen.dev_us + d.config_get("tie_window_us")


def test_inject_in_the_past_is_too_late():
    with showdown() as d:
        now = d.status() and d.last_reply_dev_us
        with pytest.raises(Nak, match="too_late"):
            d.inject(now, "paddle_a")


def test_wait_for_times_out_naming_what_it_waited_for():
    with showdown() as d:
        with pytest.raises(WaitTimeout, match="no the green light within 5000000 us"):
            d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 5_000_000, "the green light")


def test_reboot_is_reported_as_a_reset_then_reconnect_works():
    with showdown() as d:
        old = d.identity.boot_id
        d.reset("reboot")
        with pytest.raises(DeviceReset, match="rebooted"):
            d.wait_for(lambda f: False, 1_000_000, "anything")
        assert d.health.resets == 1
        d.reconnect()
        assert d.identity.boot_id != old
        _race_to_green(d)


def test_lost_event_is_detected_and_recovered_in_order():
    with showdown() as d:
        d.link.device.drop_next_events(2, name="SD_BEEP")
        d.config_set("countdown_max_us", 3_000_000)
        d.config_set("countdown_min_us", 3_000_000)
        d.input("load_cards", value=1)
        d.input("timer")
        got = []
        d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 10_000_000, "green", collect=got)
        beeps = [f.msg.index for f in got if f.msg.NAME == "SD_BEEP"]
        assert beeps == list(range(6))
        seqs = [f.msg.event_seq for f in got]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert d.health.gaps_detected >= 1 and d.health.events_recovered == 2 and d.health.events_lost == 0


def test_lost_trailing_verdict_is_recovered_by_the_timeout_probe():
    with showdown() as d:
        ack, green = _race_to_green(d)
        d.link.device.drop_next_events(1, name="SD_VERDICT")
        d.inject(green.dev_us + 200_000, "paddle_b")
        v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 2_000_000, "verdict")
        assert v.msg.loser == cat.ENUM_VALUES["side"]["a"]
        assert d.health.events_recovered == 1 and d.health.events_lost == 0


def test_duplicate_event_frames_are_counted_once():
    with showdown() as d:
        _race_to_green(d)
        n_before = len(d.history)
        # replay the last two events: same event_seq, new frames
        last = d.history[-1].msg.event_seq
        d.command(__import__("unohil.protocol").protocol.msg.EVENT_RESEND(first_seq=(last - 1) & 0xFFFF, count=2))
        d.drain()
        assert len(d.history) == n_before
        assert d.health.duplicates == 2


def test_clock_sync_on_the_virtual_clock_is_exact_within_its_uncertainty():
    link_opts = dict(host_offset_us=123_456_789, drift_ppm=50)
    with Driver.open("emu://showdown?clock=virtual&" + "&".join(f"{k}={v}" for k, v in link_opts.items())) as d:
        for _ in range(5):
            d.wait_until(d.device_now() + 1_000_000)
            d.sync_clock(4)
        est = d.clock.estimate
        host = d.now_us()
        true_dev = d.link.device_time_at(host)
        assert abs(est.to_device(host) - true_dev) <= est.uncertainty_us + 1
        assert est.drift_ppm == pytest.approx(-50, abs=1)


def test_device_time_unwraps_across_the_u32_wrap():
    start = (1 << 32) - 2_000_000
    with showdown(boot_time_us=start) as d:
        ack, green = _race_to_green(d)
        assert green.time_us < ack.time_us            # the raw counter wrapped
        assert green.dev_us - ack.dev_us == 3_000_000  # the unwrapped one did not
        assert green.dev_us > 1 << 32
        d.inject(green.dev_us + 100, "paddle_a")
        v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 1_000_000, "verdict")
        assert v.msg.reaction_a_us == 100


@pytest.mark.parametrize("url, words", [
    ("", "empty device URL"),
    ("ftp://x", "unknown scheme 'ftp'"),
    ("emu://toaster", "unknown emulated unit 'toaster'"),
    ("emu://showdown?sed=1", "unknown option 'sed'"),
    ("emu://showdown?seed=abc", "bad value 'abc' for option 'seed'"),
    ("emu://showdown?clock=fast", "clock must be"),
    ("/dev/ttyDOES_NOT_EXIST9", "no such port"),
    ("socket://127.0.0.1:1", "connection refused"),
])
def test_bad_urls_give_one_clear_error(url, words):
    from unohil.harness import DeviceURLError
    with pytest.raises(DeviceURLError) as exc:
        open_link(url)
    assert words in str(exc.value)
    assert url in str(exc.value) or not url


def test_open_error_explanations_for_permission_and_busy():
    import errno
    import serial
    from unohil.harness.links.serial import _explain_open_error
    e = serial.SerialException(errno.EACCES, "could not open port /dev/ttyACM0: [Errno 13] Permission denied")
    assert "dialout" in _explain_open_error("/dev/ttyACM0", e)
    e = serial.SerialException(errno.EBUSY, "Could not exclusively lock port /dev/ttyACM0")
    assert "in use" in _explain_open_error("/dev/ttyACM0", e)
    e = serial.SerialException("Remote does not accept parameter change (RFC2217): control")
    msg = _explain_open_error("rfc2217://h:1", e)
    assert "ign_set_control" in msg


def test_a_refusal_caused_by_an_unseen_reboot_is_reported_as_the_reboot():
    """The unit rebooted and its BOOT was lost on the line: the next stimulus, timed on the old
    session's clock, is refused too_late. The cause is the reboot, not the stimulus."""
    d = Driver.open("emu://showdown?clock=virtual")
    try:
        dev, clock = d.link.device, d.link.clock
        dev.drop_next_events(1, "BOOT")
        dev._boot(1)
        clock.advance_to(clock.now() + 2_000_000)
        with pytest.raises(DeviceReset, match="seen in STATUS"):
            d.inject(d.last_reply_dev_us + 1000, "timer")
    finally:
        d.close()


def test_a_reboot_read_with_the_awaited_event_stops_the_next_stimulus_before_it_is_sent():
    """The unit reboots at the instant of the event a wait is for, so the BOOT arrives in the same
    read: the wait returns the event, and the next stimulus, timed on the old boot's clock (in the
    new boot's future), is not sent. Sent, the new boot would hold it into the next session, where
    STATUS's pending_injects would count it as a stimulus whose ACK was lost."""
    d = Driver.open("emu://showdown?clock=virtual")
    try:
        dev, clock = d.link.device, d.link.clock
        old = d.identity.boot_id
        t = d.last_reply_dev_us + 500_000
        d.inject(t, "load_cards", value=1)
        clock.call_at(dev.to_clock(t), lambda: dev._boot(1))     # after the stimulus's events (INPUT first)
        seen = d.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN", 1_000_000, "the loading")
        assert seen.dev_us == t and d.reset_detected is not None
        with pytest.raises(DeviceReset, match="rebooted"):
            d.inject(t + 3_000_000, "timer")
        d.reconnect()
        assert d.identity.boot_id != old
        assert dev.pending_injects == 0 and d.status().pending_injects == 0
    finally:
        d.close()


def test_a_refusal_without_a_reboot_stays_the_refusal():
    d = Driver.open("emu://showdown?clock=virtual")
    try:
        d.link.clock.advance_to(d.link.clock.now() + 2_000_000)
        with pytest.raises(Nak, match="too_late"):
            d.inject(d.last_reply_dev_us + 1000, "timer")
    finally:
        d.close()
