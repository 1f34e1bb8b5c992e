"""Waits and leads from SPEC 4.3 and the link (harness/session/timing.py), and the emulator's slow line
(faults baud=B, split_burst=A..B). Everything on the virtual clock: exact, no wall time asserted."""
import pytest

from unohil.emulator.faults import FaultSpecError, Line, parse
from unohil.harness import Driver
from unohil.harness.cli import main
from unohil.harness.errors import Nak
from unohil.harness.links import open_link
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_paths
from unohil.harness.session import timing as T
from unohil.protocol import catalogue as cat, encode, msg as M

from test_faults import Eater, ROOT

LAUNCHER_HITS = ROOT / "fixtures" / "scenarios" / "launcher" / "hits.yaml"
SPLIT = "split_burst=20ms..40ms"


def wild_hit_fire():
    (sc,) = [s for s in load_paths([str(LAUNCHER_HITS)]) if s.name.startswith("Wild Hit-Fire")]
    return sc


# ---- the slow line ----

def test_a_baud_rate_holds_every_frame_to_its_byte_time_both_ways():
    with open_link("emu://launcher?baud=115200") as link:
        link.read(100_000)          # the BOOT of power-on
        cmd = encode(M.STATUS_GET(), 1, 0)
        t0 = link.now_us()
        link.write(cmd)
        data, t = link.read(1_000_000)
    # 10 bits a byte at 115200: the command's delimiter reaches the unit, then the STATUS's last byte the host
    want = -(-len(cmd) * 10_000_000 // 115200) + len(data) * 10_000_000 / 115200
    assert t - t0 == pytest.approx(want, abs=1)
    assert t - t0 > 2500


def test_a_split_burst_delivers_the_second_frame_of_a_burst_that_much_later():
    with open_link("emu://launcher?split_burst=30ms") as link:
        link.read(100_000)          # the BOOT of power-on
        link.write(encode(M.RESET(mode=cat.ENUM_VALUES["reset_mode"]["new_game"]), 1, 0))
        first, t1 = link.read(1_000_000)
        rest, t2 = link.read(1_000_000)
    assert first.count(0) == 1 and rest           # the ACK alone, then the events RESET caused
    assert t2 - t1 == 30_000


def test_slow_line_items_parse_and_bad_ones_name_themselves():
    spec = parse("baud=115200,split_burst=20ms..40ms")
    assert spec.baud == 115200 and spec.split_burst == (20_000, 40_000) and spec.timed
    with pytest.raises(FaultSpecError, match="baud"):
        parse("baud=fast")
    with pytest.raises(FaultSpecError, match="empty"):
        parse("split_burst=40ms..20ms")
    assert Line(spec, "x").paces_input


# ---- reply timeouts ----

def test_a_reply_is_waited_for_the_spec_s_50_ms_plus_the_link_not_a_second():
    with Driver.open("emu://showdown") as d:
        # an instant link: SPEC 4.3's 50 ms and the host's margin
        assert d.command_timeout_us == T.SPEC_REPLY_US + T.MARGIN_US
    with Driver.open("emu://showdown?baud=115200") as d:
        t = d.timing
        assert t.baud == 115200 and t.worst_round_trip_us() > 2500
        assert d.command_timeout_us == (T.SPEC_REPLY_US + t.bytes_us(2 * T.MAX_FRAME_BYTES) + t.worst_round_trip_us()
                                        + t.jitter_us() + T.MARGIN_US)
        assert d.command_timeout_us < 100_000


def test_before_anything_was_timed_a_reply_gets_room_for_an_unknown_link():
    t = T.LinkTiming()
    assert t.reply_timeout_us() == T.SPEC_REPLY_US + T.UNMEASURED_US + T.MARGIN_US
    t.observe_reply(3000)
    assert t.reply_timeout_us() == T.SPEC_REPLY_US + 3000 + T.MARGIN_US


def test_a_real_clock_adds_the_host_s_scheduling_slack_and_no_more():
    t = T.LinkTiming(virtual=False)
    t.observe_reply(150)
    assert t.reply_timeout_us() == T.SPEC_REPLY_US + 150 + T.HOST_SLACK_US + T.MARGIN_US < 1_000_000


def test_a_lost_reply_costs_the_derived_timeout_of_virtual_time():
    lost = []

    def lose(f):
        if f.msg.NAME == "STATUS" and not lost:
            lost.append(f)
            return True
        return False
    d = Driver(Eater(open_link("emu://showdown"), lose))
    d.hello()
    d.status()      # one round trip timed
    lost.clear()
    t0, retries = d.now_us(), d.health.retries
    d.status()      # its first reply lost, the retry answered
    assert d.health.retries == retries + 1
    assert d.now_us() - t0 == T.SPEC_REPLY_US + T.MARGIN_US


def test_a_lost_inject_ack_no_longer_carries_the_unit_past_the_next_stimulus():
    """The old fixed 1 s wait for the lost ACK moved the unit's clock past a stimulus 90 ms ahead: too_late."""
    state = {"lost": False}

    def lose(f):
        if f.msg.NAME == "ACK" and f.msg.cmd_type == 0x08 and not state["lost"]:
            state["lost"] = True
            return True
        return False
    d = Driver(Eater(open_link("emu://launcher"), lose))
    d.handshake()
    now = d.device_now()
    assert d.inject(now + 80_000, "button") == 0             # taken, its ACK lost: STATUS said so
    assert d.inject(now + 90_000, "button", "release") > 0   # still ahead: not too_late
    d.wait_until(now + 100_000)
    seen = [f for f in d.history if f.msg.NAME == "INPUT_SEEN"]
    assert [f.dev_us - now for f in seen] == [80_000, 90_000]


# ---- a lost INPUT reply ----

def _losing_first(name: str):
    state = {"n": 0}

    def lose(f):
        if f.msg.NAME == name and f.msg.cmd_type == 0x07 and not state["n"]:
            state["n"] = 1
            return True
        return False
    return lose


def test_a_lost_input_ack_is_resolved_from_its_input_seen_not_sent_again():
    d = Driver(Eater(open_link("emu://showdown"), _losing_first("ACK")))
    d.handshake()
    f = d.input("load_cards", value=2)
    assert f.msg.NAME == "INPUT_SEEN" and f.msg.value == 2
    assert d.health.retries == 0
    loads = [e for e in d.history if e.msg.NAME == "INPUT_SEEN" and e.msg.input == 3]
    assert len(loads) == 1


def test_a_lost_input_nak_is_the_refusal_its_input_seen_reports():
    d = Driver(Eater(open_link("emu://showdown"), _losing_first("NAK")))
    d.handshake()
    with pytest.raises(Nak) as exc:
        d.input("timer")            # an empty tray: TIMER refused wrong_state
    assert exc.value.error == "wrong_state"
    assert exc.value.detail == cat.ENUM_VALUES["showdown_state"]["empty"]


def test_an_input_the_unit_never_saw_is_sent_again_once():
    # the command itself lost on the way in (its bytes): no INPUT_SEEN follows, so it is sent again
    link = open_link("emu://showdown?wire=bytes")
    d = Driver(link)
    d.handshake()
    real_write, dropped = link.write, []

    def write(data):
        if data[1:2] and not dropped and _is_input(data):
            dropped.append(data)
            return None
        return real_write(data)
    link.write = write
    d.input("load_cards", value=2)
    assert dropped and d.health.retries == 1
    assert len([e for e in d.history if e.msg.NAME == "INPUT_SEEN" and e.msg.input == 3]) == 1


def _is_input(data: bytes) -> bool:
    from unohil.protocol import StreamDecoder
    return any(getattr(f, "msg", None) is not None and f.msg.NAME == "INPUT" for f in StreamDecoder().feed(data))


# ---- leads ----

def test_the_lead_holds_the_inject_s_bytes_usb_frames_jitter_and_the_clock():
    t = T.LinkTiming(baud=115200, usb=True)
    for rt in (3000, 5000):
        t.observe_reply(rt)
    assert t.bytes_us(T.INJECT_BYTES) == 1650          # 19 bytes at 115200, 8N1
    assert t.stimulus_lead_us(100) == 5000 + 2000 + 1650 + 2 * T.USB_FRAME_US + 200 + T.MARGIN_US


def test_a_link_that_splits_bursts_gets_a_lead_beyond_its_queueing():
    with Driver.open(f"emu://launcher?{SPLIT}") as d:
        # a reply queued behind a burst's held frames shows the link's delay; the lead covers it and its jitter
        assert d.timing.worst_round_trip_us() >= 20_000
        assert d.stimulus_lead_us() >= d.timing.worst_round_trip_us() + d.timing.jitter_us()
        assert d.timing.late_us() >= 20_000


@pytest.mark.parametrize("line", ["baud=115200", SPLIT])
def test_wild_hit_fire_passes_on_a_slow_line(line):
    sc = wild_hit_fire()
    with Driver.open(f"emu://launcher?{line}") as d:
        leads = []
        inject = d.inject

        def spy(at, *a, **kw):
            leads.append(at - d.device_now())
            return inject(at, *a, **kw)
        d.inject = spy
        res = Runner(d).run(sc)
        assert res.status == "pass", [r.error or r.failures for r in res.races]
        assert min(leads) >= T.LinkTiming(baud=d.timing.baud).bytes_us(T.INJECT_BYTES)


# ---- conform ----

@pytest.mark.parametrize("kind", ["showdown", "launcher", "flash"])
def test_conform_s_protocol_checks_pass_behind_a_burst_splitting_link(kind, capsys):
    """The 4.3 refusals' INPUT_SEEN comes 20-40 ms after their NAK: the quiet window is the link's."""
    assert main(["conform", "--device", f"emu://{kind}?{SPLIT}", "--no-scenarios", "-q"]) == 0
    out = capsys.readouterr().out
    assert "0 failed" in out


def test_conform_s_inject_checks_pass_with_25_ms_after_each_reply(capsys):
    assert main(["conform", "--device", "emu://launcher?faults=delay=25ms", "--no-scenarios", "-q"]) == 0
    assert "0 failed" in capsys.readouterr().out


def test_the_worst_round_trip_jitter_and_reply_timeout_follow_the_window_as_round_trips_come():
    """The least and most of the window are kept as round trips come (a command asks for its timeout twice):
    whatever leaves or joins the window, they are the window's, and the timeout is the one computed afresh."""
    import random
    rng = random.Random(5)
    t = T.LinkTiming(virtual=False)
    assert t.reply_timeout_us() == T.SPEC_REPLY_US + T.UNMEASURED_US + T.HOST_SLACK_US + T.MARGIN_US
    for i in range(400):
        # runs of equal values, spikes, and values leaving the window as the least or the most of it
        us = rng.choice([100, 100, 250, rng.randrange(50, 400), rng.randrange(0, 5000), -3])
        t.observe_reply(us)
        window = list(t.round_trips)
        assert t.worst_round_trip_us() == max(window) and t.jitter_us() == max(window) - min(window), i
        assert t.reply_timeout_us() == (T.SPEC_REPLY_US + max(window) + (max(window) - min(window))
                                        + T.HOST_SLACK_US + T.MARGIN_US), i
