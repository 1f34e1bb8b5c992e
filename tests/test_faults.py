"""Fault injection (emulator/faults.py) and what the harness guarantees under each fault.

Everything runs on the virtual clock: delays, stalls and timeouts cost no wall time, and
a fault spec with a seed gives the same faults on every run, so each test is exact.
"""
import json
import random
from pathlib import Path

import pytest

from unohil import protocol
from unohil.emulator.faults import FaultSpecError, Line, parse
from unohil.harness import DeviceURLError, Driver
from unohil.harness.cli import main
from unohil.harness.errors import CommandTimeout, LinkError
from unohil.harness.links import open_link
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import load_paths, loads
from unohil.protocol import StreamDecoder, catalogue as cat, msg as M
from samples import GOOD     # one clean win for A: fixtures/samples/clean_win.yaml

ROOT = Path(__file__).resolve().parent.parent
SHOWDOWN_LIBRARY = ROOT / "fixtures" / "scenarios" / "showdown"
SIDE = cat.ENUM_VALUES["side"]



# ---- the vocabulary ----

def test_the_documented_example_parses_into_every_fault():
    spec = parse("corrupt=1e-3,drop=1e-3,dropframe=1e-3,dup=1e-4,garbage=1e-4,delay=50us..2ms,"
                 "stall=1e-4:200ms,reset=1e-6,disconnect_after=5000,reset_after=700,seed=7,"
                 "in.corrupt=1e-4,in.drop=2e-4,in.dropframe=3e-4,in.garbage=4e-4")
    assert (spec.out.corrupt, spec.out.drop, spec.out.dropframe, spec.out.dup, spec.out.garbage) == \
        (1e-3, 1e-3, 1e-3, 1e-4, 1e-4)
    assert spec.out.reset == 1e-6
    assert (spec.into.corrupt, spec.into.drop, spec.into.dropframe, spec.into.garbage) == (1e-4, 2e-4, 3e-4, 4e-4)
    assert spec.delay == (50, 2000) and spec.stall == (1e-4, 200_000)
    assert (spec.disconnect_after, spec.reset_after, spec.seed) == (5000, 700, 7)
    assert parse("delay=1s").delay == (1_000_000, 1_000_000)
    assert parse("delay=250").delay == (250, 250)
    assert parse("") is None and parse(None) is None


@pytest.mark.parametrize("text, words", [
    ("corupt=1e-3", "'corupt=1e-3': unknown fault 'corupt'"),
    ("corrupt=2", "'corrupt=2': a probability must be in [0, 1]"),
    ("drop=often", "'drop=often': 'often' is not a probability"),
    ("delay=2ms..1ms", "'delay=2ms..1ms': the range is empty"),
    ("delay=fast", "'delay=fast': 'fast' is not a duration"),
    ("stall=1e-3", "'stall=1e-3': expected stall=P:DURATION"),
    ("stall=1e-3:1h", "'1h' is not a duration"),
    ("in.dup=1e-3", "'in.dup=1e-3': unknown fault 'in.dup' on the host's bytes"),
    ("reset_after=-1", "'reset_after=-1': '-1' is not a frame count"),
    ("seed=x", "'seed=x': the seed must be an integer"),
    ("corrupt", "'corrupt': expected ITEM=VALUE"),
    ("drop=1e-3,drop=1e-2", "'drop=1e-2': drop is given twice"),
])
def test_a_bad_spec_names_the_bad_item(text, words):
    with pytest.raises(FaultSpecError) as exc:
        parse(text)
    assert words in str(exc.value)


def test_a_bad_spec_in_a_device_url_is_a_url_error_naming_the_item():
    url = "emu://showdown?faults=corrupt=1e-3,dorp=1e-3"
    with pytest.raises(DeviceURLError) as exc:
        open_link(url)
    assert url in str(exc.value) and "unknown fault 'dorp'" in str(exc.value)


def test_cli_bad_fault_spec_is_exit_2(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert main(["run", str(good), "-q", "--device", "emu://showdown?faults=dup=lots"]) == 2
    assert "'dup=lots'" in capsys.readouterr().err


# ---- the line, byte by byte ----

def _frames(n: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        m = M.SD_BEEP(event_seq=i & 0xFFFF, index=rng.randrange(256)) if i % 3 else \
            M.SD_VERDICT(i & 0xFFFF, 0, 1, 2, 255, 255, rng.getrandbits(32), 5, 6, 7, 8, 9, 10)
        out.append(protocol.encode(m, i, rng.getrandbits(32)))
    return out


def test_corrupt_frames_are_dropped_counted_and_the_stream_resyncs_within_one_frame():
    """Flip bits at random: exactly the frames holding a flipped byte are lost (and the next
    one too when the flip hit the delimiter between them); every other frame decodes."""
    frames = _frames(3000)
    line = Line(parse("corrupt=2e-3,seed=11"), "")
    sent = b"".join(frames)
    got = b""
    for f in frames:                       # one burst per frame, as a unit sends them
        line.out(f, 0)
    got = line.take(0)
    assert len(got) == len(sent)           # corruption never adds or removes bytes
    hit = set()
    pos = 0
    for i, f in enumerate(frames):
        for k in range(len(f)):
            if got[pos + k] != sent[pos + k]:
                hit.add(i)
                if k == len(f) - 1:        # the delimiter: this frame runs into the next
                    hit.add(i + 1)
        pos += len(f)
    assert 5 <= line.stats["corrupted_bytes"] <= 500
    dec = StreamDecoder()
    out = dec.feed(got)
    good = [x for x in out if not isinstance(x, protocol.FrameError)]
    assert [f.seq for f in good] == [i for i in range(len(frames)) if i not in hit]
    bad = [x for x in out if isinstance(x, protocol.FrameError)]
    assert 0 < len(bad) <= len(hit)
    assert dec.stats.bad_frames == len(bad)


def test_each_frame_fault_does_what_it_says():
    frames = _frames(2000)
    data = b"".join(frames)

    def through(spec):
        line = Line(parse(spec), "")
        line.out(data, 0)
        return line, line.take(0)

    line, out = through("dropframe=0.1,seed=1")
    n = line.stats["dropped_frames"]
    assert 150 < n < 250 and out.count(0) == len(frames) - n
    line, out = through("dup=0.1,seed=1")
    n = line.stats["duplicated_frames"]
    assert 150 < n < 250 and out.count(0) == len(frames) + n
    seqs = [f.seq for f in StreamDecoder().feed(out)]
    assert sorted(set(seqs)) == list(range(len(frames)))         # every frame, some twice
    line, out = through("drop=1e-2,seed=1")
    assert len(out) == len(data) - line.stats["dropped_bytes"]
    line, out = through("garbage=0.05,seed=1")
    assert len(out) == len(data) + line.stats["garbage_bytes"]
    assert through("corrupt=0,drop=0,seed=1")[1] == data


def test_host_to_unit_faults_touch_only_the_host_bytes():
    line = Line(parse("in.corrupt=1,seed=3"), "")
    data = b"".join(_frames(10))
    line.out(data, 0)
    assert line.take(0) == data
    mangled = line.into(data)
    assert len(mangled) == len(data) and all(a != b for a, b in zip(mangled, data))
    assert line.stats["in.corrupted_bytes"] == len(data)


def test_delays_keep_order_and_stalls_hold_everything_behind_them():
    line = Line(parse("delay=100us..2ms,seed=5"), "")
    frames = _frames(200)
    arrivals = []
    for t, f in enumerate(frames):
        now = t * 100
        while line.next_delivery() is not None and line.next_delivery() <= now:
            at = line.next_delivery()
            arrivals.append((at, line.take(at)))
        line.out(f, now)
    while line.next_delivery() is not None:
        at = line.next_delivery()
        arrivals.append((at, line.take(at)))
    assert b"".join(d for _, d in arrivals) == b"".join(frames)     # nothing lost, nothing reordered
    assert all(b[0] >= a[0] for a, b in zip(arrivals, arrivals[1:]))
    assert line.stats["delayed_bursts"] == len(frames) and "overflow_bytes" not in line.stats
    line = Line(parse("stall=1:200ms"), "")
    line.out(frames[0], 1000)
    line.out(frames[1], 2000)
    assert line.take(200_999) == b""
    assert line.take(201_000) == frames[0]
    assert line.next_delivery() == 401_000 and line.stats["stalls"] == 2


def test_faults_never_change_what_the_unit_decides():
    """The same seeded unit makes the same draws (countdowns here) behind a clean and a faulty
    line: faults have their own generators."""
    def countdowns(url):
        with Driver.open(url) as d:
            out = []
            for _ in range(8):
                d.reset("new_game", retries=2)
                # INJECT, not INPUT: a lost reply is recovered (SPEC 4.3), so the line's faults
                # never cut the sequence short, wherever they fall
                t = d.last_reply_dev_us + 3_000_000          # room for a lost reply and its STATUS
                d.inject(t, "load_cards", value=1)
                d.inject(t + 1000, "timer")
                c = d.wait_for(lambda f: f.msg.NAME == "SD_GREEN", 20_000_000, "green")
                out.append(c.dev_us)
                t0 = max(f.dev_us for f in d.history if f.msg.NAME == "SD_COUNTDOWN")
                out[-1] -= t0
            return out
    clean = countdowns("emu://showdown?seed=9")
    faulty = countdowns("emu://showdown?seed=9&faults=corrupt=2e-3,dropframe=2e-2,dup=1e-2,delay=10us..500us")
    assert clean == faulty and len(set(clean)) > 4


# ---- what the harness guarantees ----

class Eater:
    """A link that loses the unit's frames chosen by want(frame) -> bool (True: lose it)."""

    def __init__(self, link, lose):
        self.inner, self.virtual, self.url, self.lose = link, link.virtual, link.url, lose
        self.dec = StreamDecoder()
        self.lost = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read(self, timeout_us):
        data, t = self.inner.read(timeout_us)
        out = b""
        for f in self.dec.feed(data):
            if isinstance(f, protocol.FrameError):
                continue
            if self.lose(f):
                self.lost.append(f)
                continue
            out += protocol.codec.cobs_encode(f.raw) + b"\x00"
        return out, t


def run_scenario(text, url="emu://showdown", wrap=None, **driver_kw):
    scenarios = loads(text, "t.yaml")
    link = open_link(url)
    if wrap is not None:
        link = wrap(link)
    d = Driver(link, **driver_kw)
    try:
        d.hello()
        return [Runner(d).run(sc) for sc in scenarios], d
    finally:
        d.close()


def test_a_unit_that_goes_silent_never_hangs_the_run_and_the_error_names_what_was_awaited():
    silent = {"on": False}

    def lose(f):
        if f.msg.NAME == "SD_GREEN":
            silent["on"] = True
        return silent["on"]
    (res,), d = run_scenario(GOOD, wrap=lambda link: Eater(link, lose))
    (race,) = res.races
    assert race.status == "link-error"
    assert race.error == ("emu://showdown: no SD_GREEN (anchor of step at line 10 in 'clean win') by 2.201 s: "
                          "2 s (countdown_max_us, the most it takes the unit) after the step time 1 ms, "
                          "plus a margin of 200 ms, and the unit does not answer; "
                          "emu://showdown: no reply to HELLO (seq 35) within 51000 us")    # the new session's:
    # SPEC 4.3's 50 ms and the host's margin, the round trips of this instant link being 0
    with pytest.raises(CommandTimeout, match="no reply to HELLO"):
        Driver.open("emu://showdown?faults=dropframe=1")


def test_a_wait_on_a_dead_line_ends_at_its_deadline_naming_what_it_waited_for():
    with Driver.open("emu://showdown?faults=disconnect_after=16") as d:
        with pytest.raises(LinkError, match="the line was cut"):
            d.input("load_cards", value=1)
            d.input("timer")
            d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 60_000_000, "the verdict")
    with Driver.open("emu://showdown") as d:
        d.link.device.drop_next_events(1000)
        d.input("load_cards", value=1)
        with pytest.raises(LinkError, match="no the verdict within 2000000 us"):
            d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 2_000_000, "the verdict")


def scripted_races(d, n, rng):
    """n Showdown races through the driver, stimuli far enough ahead that a lost ACK (one
    command timeout) still leaves time. Returns [(expected loser, verdict frame)]."""
    d.config_set("countdown_min_us", 500_000)
    d.config_set("countdown_max_us", 500_000)
    d.config_set("beep_interval_us", 2_000_000)
    out = []
    now = d.last_reply_dev_us
    for _ in range(n):
        t = now + 3_000_000
        ra, rb = rng.randrange(100_000, 400_000), rng.randrange(100_000, 400_000)
        if abs(ra - rb) < 1000:
            rb = ra + 5000
        d.inject(t, "load_cards", value=2)
        d.inject(t + 1, "timer")
        g = t + 1 + 500_000
        d.inject(g + ra, "paddle_a")
        d.inject(g + rb, "paddle_b")
        v = d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 20_000_000, "verdict")
        now = max(v.dev_us, g + ra, g + rb)
        d.wait_until(now)
        out.append((SIDE["b"] if ra < rb else SIDE["a"], v))
    return out


def test_lost_events_and_verdicts_are_detected_by_their_gap_and_recovered():
    with Driver.open("emu://showdown?faults=dropframe=0.03,seed=4") as d:
        races = scripted_races(d, 60, random.Random(1))
        assert all(v.msg.loser == want for want, v in races)
        h = d.health
        assert h.gaps_detected >= 10 and h.events_recovered >= 10 and h.events_lost == 0
        assert h.frames_missed >= 30
        seqs = [f.msg.event_seq for f in d.history]
        assert len(seqs) == len(set(seqs))              # each event delivered once, in order
        assert all((b - a) & 0xFFFF == 1 for a, b in zip(seqs, seqs[1:]))


def test_a_lost_ack_of_inject_is_resolved_by_status_not_by_a_blind_resend():
    def lose(f):
        return f.msg.NAME == "ACK" and f.msg.cmd_type == 0x08 and not lose.done and not setattr(lose, "done", 1)
    lose.done = 0
    link = Eater(open_link("emu://showdown"), lose)
    d = Driver(link)
    d.hello()
    races = scripted_races(d, 3, random.Random(2))
    assert [v.msg.loser for _, v in races] == [w for w, _ in races]
    assert len(link.lost) == 1
    assert d.health.retries == 0                      # the unit had taken it: not sent twice
    seen = [f for f in d.history if f.msg.NAME == "INPUT_SEEN" and f.msg.input == 3]
    assert len(seen) == 3                             # one load per race, never two


def test_a_lost_inject_is_sent_again_once_status_shows_the_unit_never_took_it():
    spec = "in.dropframe=0.04,seed=8"
    with Driver.open(f"emu://showdown?faults={spec}") as d:
        races = scripted_races(d, 40, random.Random(3))
        assert all(v.msg.loser == want for want, v in races)
        assert d.link.faults.stats["in.dropped_frames"] >= 5
        loads = [f for f in d.history if f.msg.NAME == "INPUT_SEEN" and f.msg.input == 3]
        assert len(loads) == 40


def test_an_unrecoverable_lost_event_makes_the_race_a_link_error_never_a_pass_or_fail():
    # The last event of the race (STATE after the verdict) is lost, and so is every resend of it.
    def lose(f):
        return f.msg.NAME == "STATE" and f.msg.state == cat.ENUM_VALUES["showdown_state"]["empty"] \
            and f.msg.previous == cat.ENUM_VALUES["showdown_state"]["racing"]
    (res,), d = run_scenario(GOOD, wrap=lambda link: Eater(link, lose), command_timeout_us=200_000)
    (race,) = res.races
    assert race.status == "link-error" and "lost" in race.error
    assert res.health.events_lost == 1 and res.health.gaps_detected >= 1


def test_a_duplicated_frame_is_recognised_and_not_counted_twice():
    scenarios = [s for s in load_paths([str(SHOWDOWN_LIBRARY / "first_press.yaml")])]
    with Driver.open("emu://showdown?faults=dup=1") as d:
        results = [Runner(d).run(sc) for sc in scenarios]
        assert all(r.status == "pass" for r in results)
        assert all(len(race.verdicts) == 1 for r in results for race in r.races)
        assert d.health.duplicates >= d.health.frames_rx // 2 - 1
        seqs = [f.msg.event_seq for f in d.history]
        assert len(seqs) == len(set(seqs))


def test_a_reset_mid_race_is_reported_as_reset_and_the_next_race_runs_on_the_reconnected_unit():
    text = GOOD + "repeat: 4\n"
    (res,), d = run_scenario(text, url="emu://showdown?faults=reset_after=60")
    assert [r.status for r in res.races] == ["pass", "reset", "pass", "pass"]
    assert res.health.resets == 1
    assert "rebooted" in res.races[1].error


def test_a_reboot_whose_boot_frame_is_lost_is_still_a_reset_not_a_failure():
    state = {"n": 0, "rebooted": False}

    def lose(f):
        return f.msg.NAME == "BOOT" and state["rebooted"]

    def wrap(link):
        dev = link.device
        original = dev.receive

        def receive(data):
            state["n"] += 1
            original(data)
            if state["n"] == 6:                  # mid-way through the first race
                state["rebooted"] = True
                dev._boot(cat.ENUM_VALUES["boot_reason"]["watchdog"])
        dev.receive = receive
        return Eater(link, lose)
    (res,), d = run_scenario(GOOD + "repeat: 3\n", wrap=wrap, command_timeout_us=200_000)
    statuses = [r.status for r in res.races]
    assert statuses[0] == "reset" and statuses[1:] == ["pass", "pass"]
    assert "seen in STATUS" in res.races[0].error
    assert res.health.resets == 1


def test_a_race_cut_short_leaves_nothing_behind_for_the_next_one():
    """The aborted race opened the launcher's door and left a stimulus pending; RESET new_game
    keeps both (LA-7, SPEC 4.9), so the runner starts the next race from a rebooted unit."""
    aborted = """
name: door left open
unit: launcher
timeout_us: 2000000
steps:
  - door: open
    at: start + 1000
  - press: button
    at: previous + 5000000
expect:
  verdict: {fired: 0}
"""
    door = load_paths([str(ROOT / "fixtures" / "scenarios" / "launcher" / "door.yaml")])
    (sc_abort,) = loads(aborted, "a.yaml")
    calls = {"n": 0}

    def lose(f):
        # lose the ACK of the second INJECT of the aborted race: the press is pending on the unit
        if f.msg.NAME == "ACK" and f.msg.cmd_type == 0x08 and f.msg.value == 2 and not calls["n"]:
            calls["n"] = 1
            return True
        return False
    link = Eater(open_link("emu://launcher"), lose)
    d = Driver(link, command_timeout_us=200_000)
    d.hello()
    r0 = Runner(d).run(sc_abort)
    assert r0.status in ("link-error", "fail")
    results = [Runner(d).run(sc) for sc in door]
    assert all(r.status == "pass" for r in results), [(r.scenario.name, r.races[0].failures) for r in results]


MODEST = ("corrupt=2e-4,drop=2e-4,dropframe=2e-4,dup=2e-4,garbage=2e-4,delay=50us..2ms,stall=1e-4:200ms,"
          "in.corrupt=1e-4,in.dropframe=1e-4")
HEAVY = "corrupt=3e-3,drop=1e-3,dropframe=1e-2,dup=1e-2,garbage=1e-2,reset=3e-4,stall=1e-3:300ms,in.corrupt=1e-3"


@pytest.mark.parametrize("spec, least_pass", [
    (MODEST + ",seed=1", 0.93), (MODEST + ",seed=2", 0.93), (MODEST + ",seed=3", 0.93), (HEAVY + ",seed=4", 0.5),
])
def test_the_showdown_library_under_faults_never_fails_a_right_device(spec, least_pass):
    """Every race passes, or is a link error or a reset: never a failure (the unit is right),
    and never a pass the unit did not earn (each verdict is checked as on a clean line)."""
    scenarios = load_paths([str(SHOWDOWN_LIBRARY)])
    with Driver.open(f"emu://showdown?faults={spec}") as d:
        results = [Runner(d).run(sc) for sc in scenarios]
        stats = d.link.faults.stats
    races = [r for res in results for r in res.races]
    statuses = {r.status for r in races}
    assert statuses <= {"pass", "link-error", "reset"}, \
        [(res.scenario.name, r.index, r.status, r.error, r.failures) for res in results for r in res.races
         if r.status not in ("pass", "link-error", "reset")]
    passed = sum(r.status == "pass" for r in races)
    assert passed >= least_pass * len(races)
    assert stats.get("corrupted_bytes", 0) + stats.get("dropped_frames", 0) > 10
    gaps = sum(res.health.gaps_detected for res in results)
    recovered = sum(res.health.events_recovered for res in results)
    assert gaps > 0 and recovered > 0


def test_every_run_ends_with_the_link_health_in_the_table_and_the_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")        # every column header on one line
    out = tmp_path / "r.json"
    url = f"emu://showdown?faults={MODEST},seed=5,reset_after=900"
    rc = main(["run", str(SHOWDOWN_LIBRARY / "first_press.yaml"), str(SHOWDOWN_LIBRARY / "ties.yaml"),
               "--device", url, "--json", str(out), "-q"])
    assert rc in (0, 1)
    text = capsys.readouterr().out
    (line,) = [x for x in text.splitlines() if x.startswith("link health:")]
    for field in ("frames rx", "bytes dropped", "crc errors", "gaps detected", "events recovered",
                  "events lost", "duplicates", "resets 1"):
        assert field in line
    doc = json.loads(out.read_text())
    h = doc["health"]
    for key in ("frames_rx", "bytes_dropped", "crc_errors", "gaps_detected", "events_recovered", "events_lost",
                "duplicates", "resets"):
        assert key in h
    assert h["frames_rx"] > 0 and h["resets"] == 1 and h["crc_errors"] + h["bad_frames"] > 0
    assert doc["devices"][0]["health"] == h
    statuses = {r["status"] for s in doc["scenarios"] for r in s["results"]}
    assert "fail" not in statuses and "reset" in statuses


# ---- served units: the same faults in real time ----

FAST = GOOD.replace("2000000", "500000")


def test_a_served_unit_with_faults_on_a_pty_never_fails_and_says_what_the_faults_did(emulator_process):
    proc, (path,) = emulator_process("showdown", "--pty", "--faults",
                                     "corrupt=3e-3,dropframe=2e-2,dup=1e-2,delay=50us..2ms,seed=2")
    (sc,) = loads(FAST + "repeat: 3\n", "t.yaml")
    with Driver.open(path, command_timeout_us=200_000) as d:       # a lost reply costs 0.2 s, not 1 s
        res = Runner(d).run(sc)
    statuses = [r.status for r in res.races]
    assert set(statuses) <= {"pass", "link-error"} and statuses.count("pass") >= 2
    proc.terminate()
    err = proc.communicate(timeout=10)[1]
    assert f"faults on {path}: " in err and "delayed_bursts" in err


def test_a_disconnect_hangs_up_a_tcp_client_and_the_runner_reconnects(emulator_process):
    proc, (url,) = emulator_process("showdown", "--tcp", "127.0.0.1:0", "--faults", "disconnect_after=30")
    (sc,) = loads(FAST + "repeat: 3\n", "t.yaml")
    with Driver.open(url) as d:
        res = Runner(d).run(sc)
    statuses = [r.status for r in res.races]
    assert statuses.count("link-error") == 1 and statuses[-1] == "pass"
    cut = res.races[statuses.index("link-error")].error
    assert "closed the connection" in cut or "write failed" in cut


def test_emu_real_clock_takes_faults_too():
    (sc,) = loads(FAST, "t.yaml")
    with Driver.open("emu://showdown?clock=real&faults=dup=0.5,seed=2") as d:
        res = Runner(d).run(sc)
    assert res.status == "pass" and res.health.duplicates > 0
