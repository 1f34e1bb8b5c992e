"""A session's start and end, and a lost link, on the virtual clock: exact, never flaky.

A unit outlives the processes that drive it (a served unit, a unit on a cable); `Connection`
gives each Driver its own connection to one emulated unit, so what one session leaves on the unit
is what the next one finds. Connect and reconnect go through the Driver's opener, which a test
replaces to make the link fail as a server that went away does.
"""
import pytest

from unohil import protocol
from unohil.harness import DeviceURLError, Driver
from unohil.harness.errors import LinkClosed
from unohil.harness.links import open_link
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads
from unohil.harness.session.outage import Outage, parse_budget
from unohil.harness.session.prepare import prepare
from unohil.protocol import StreamDecoder, catalogue as cat
from test_faults import GOOD

URL = "emu://showdown?clock=virtual"
PADDLE_A = cat.ENUM_VALUES["showdown_input"]["paddle_a"]



def races(n: int):
    """n scenarios of one clean Showdown race each."""
    return loads("---\n".join(GOOD.replace("name: clean win", f"name: clean win {i}") for i in range(1, n + 1)),
                 "t.yaml")


class Connection:
    """One host's connection to a unit that outlives it. on_write(frame) may cut it (return
    "cut") or change what reaches the unit (return bytes, or None to lose the frame)."""

    virtual = True

    def __init__(self, unit, on_write=None):
        self.unit = unit
        self.url = unit.url
        self.on_write = on_write
        self.closed = False

    def now_us(self) -> int:
        return self.unit.now_us()

    def read(self, timeout_us: int):
        self._check()
        return self.unit.read(timeout_us)

    def write(self, data: bytes) -> None:
        self._check()
        if self.on_write is not None:
            (frame,) = StreamDecoder().feed(data)
            data = self.on_write(frame, data)
            if data == "cut":
                self.closed = True
                raise LinkClosed(f"{self.url}: the connection was lost: Connection reset by peer")
            if data is None:
                return
        self.unit.write(data)

    def close(self) -> None:
        self.closed = True

    def _check(self) -> None:
        if self.closed:
            raise LinkClosed(f"{self.url}: link is closed")


def damaged(frame) -> bytes:
    """The frame with one header bit flipped and its CRC left as it was: the unit's check 4 fails."""
    raw = bytearray(frame.raw)
    raw[2] ^= 0x01
    return protocol.codec.cobs_encode(bytes(raw)) + b"\x00"


# ---- a session's start and end: the unit clean whatever the last one did ----

def test_a_session_abandoned_with_stimuli_pending_does_not_reach_into_the_next_one():
    """A process killed mid-race never closes: its stimuli stay pending on the unit, and RESET
    new_game keeps them (SPEC 4.9). The next session cancels them when it starts."""
    unit = open_link(URL)
    first = Driver.open(URL, opener=lambda url: Connection(unit))
    prepare(first)
    first.inject(first.last_reply_dev_us + 2_100_000, "paddle_b")     # inside the next race, after its green
    assert unit.device.pending_injects == 1
    second = Driver.open(URL, opener=lambda url: Connection(unit))     # the first is never closed
    assert unit.device.pending_injects == 0
    (sc,) = races(1)
    res = Runner(second).run(sc)
    assert res.status == "pass", res.races[0].failures


def test_closing_a_session_leaves_the_unit_clean():
    unit = open_link(URL)
    d = Driver.open(URL, opener=lambda url: Connection(unit))
    d.inject(d.last_reply_dev_us + 5_000_000, "load_cards", value=2)
    d.input("load_cards", value=1)
    d.close()
    assert unit.device.pending_injects == 0
    assert unit.device.model.state.name == cat.UNITS["showdown"].power_on_state


# ---- connect: lost samples, a reboot during the handshake, damaged commands ----

def test_a_time_sync_lost_three_times_costs_that_sample_only():
    """The third exchange's TIME_SYNC and both its resends are lost: the other samples are kept
    and the session starts."""
    sent = []

    def lose_the_third_exchange(frame, data):
        if frame.msg.NAME == "TIME_SYNC":
            sent.append(frame)
            if 3 <= len(sent) <= 5:
                return None
        return data
    unit = open_link(URL)
    d = Driver.open(URL, opener=lambda url: Connection(unit, lose_the_third_exchange), command_timeout_us=200_000)
    assert len(sent) == 11 and d.health.retries == 2
    assert len(d.clock.samples) == 8 and d.clock.estimate.best_rtt_us == 0


@pytest.mark.parametrize("after_frame", [1, 2, 4, 5, 9])
def test_a_reboot_during_the_handshake_starts_it_again(after_frame):
    """The unit reboots right after its Nth frame of the handshake (its IDENTITY, a STATUS, the
    RESET's ACK, a TIME_SYNC reply): the session starts on the new boot, and a race passes."""
    with Driver.open(f"{URL}&faults=reset_after={after_frame}") as d:
        assert d.link.faults.stats.get("resets") == 1
        assert d.identity.boot_id == d.status().boot_id == d.link.device.boot_id
        (sc,) = races(1)
        res = Runner(d).run(sc)
        assert res.status == "pass", (res.races[0].error, res.races[0].failures)


@pytest.mark.parametrize("command", ["STATUS_GET", "INJECT"])
def test_a_command_the_unit_got_damaged_is_sent_again_at_once(command):
    """SPEC 2.6: the unit answers a frame that failed its CRC with an unattributed NAK bad_crc. A
    command that may be resent is, at once; an INJECT is resent once STATUS says the unit did not
    take it. Either way without waiting for the reply timeout."""
    armed = []

    def damage_once(frame, data):
        if armed and frame.msg.NAME == command:
            armed.clear()
            return damaged(frame)
        return data
    unit = open_link(URL)
    d = Driver.open(URL, opener=lambda url: Connection(unit, damage_once))
    armed.append(True)
    t0 = d.now_us()
    if command == "INJECT":
        d.inject(d.last_reply_dev_us + 1_000_000, "load_cards", value=2)
        assert unit.device.pending_injects == 1
    else:
        d.status()
    assert d.now_us() == t0         # no time passed waiting: the NAK came at once, and so did the answer
    assert d.health.naks_unattributed == 1 and d.health.retries == 1


@pytest.mark.parametrize("command", ["status", "config_get"])
def test_the_command_sent_with_seq_0xffff_gets_its_reply(command):
    """Our seqs wrap through 0xFFFF (SPEC 3.1), and the reply to that command names cmd_seq 0xFFFF: it is
    the command's, not an unattributed NAK (that also names type 0xFF). A long fairness sweep sends
    65,536 commands and more."""
    with Driver.open(URL) as d:
        d._tx_seq = 0xFFFE
        for _ in range(3):           # seqs 0xFFFE, 0xFFFF, 0
            d.status() if command == "status" else d.config_get("countdown_min_us")
        assert d._tx_seq == 1
        assert d.health.naks_unattributed == 0 and d.health.retries == 0


# ---- a lost link: waited for with growing pauses, within the outage budget ----

class FakeTime:
    def __init__(self):
        self.us = 0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.us += round(s * 1e6)

    def now(self) -> int:
        return self.us


class Server:
    """A unit behind a server that can go away: go_away_at_next_press(n) cuts the connection at the
    next paddle press, after which the server refuses n connections (-1: until back() is called)."""

    def __init__(self):
        self.unit = open_link(URL)
        self.refusing = 0
        self.refused = 0
        self._then_refuse: int | None = None

    def open(self, url):
        if self.refusing:
            self.refused += 1
            self.refusing -= self.refusing > 0
            raise DeviceURLError(f"{url}: connection refused: is the server running on that port?")
        return Connection(self.unit, self._on_write)

    def go_away_at_next_press(self, refusals: int) -> None:
        self._then_refuse = refusals

    def back(self) -> None:
        self.refusing = 0

    def _on_write(self, frame, data):
        m = frame.msg
        if self._then_refuse is not None and m.NAME == "INJECT" and m.input == PADDLE_A:
            self.refusing, self._then_refuse = self._then_refuse, None
            return "cut"
        return data


def runner_behind(server: Server, budget_us: int):
    time = FakeTime()
    said: list[str] = []
    d = Driver.open(URL, opener=server.open)
    return Runner(d, outage=Outage(budget_us, say=said.append, sleep=time.sleep, clock_us=time.now)), time, said


def test_a_short_outage_costs_only_the_race_it_cut():
    server = Server()
    runner, time, said = runner_behind(server, budget_us=10_000_000)
    server.go_away_at_next_press(refusals=4)
    results = [runner.run(sc) for sc in races(3)]
    assert [r.status for r in results] == ["link-error", "pass", "pass"]
    assert time.sleeps == [0.05, 0.1, 0.2, 0.4]         # doubling from 50 ms, no wait before the first try
    assert server.refused == 4 and len(said) == 4
    assert all("connection refused" in s and "outage budget of 10 s" in s for s in said), said
    error = results[0].races[0].error
    assert error.startswith(f"{URL}: the connection was lost: Connection reset by peer; the link was back after "
                            f"0.8 s and 5 tries (until then: {URL}: connection refused"), error


def test_an_outage_longer_than_the_budget_makes_the_races_during_it_link_errors_and_the_run_goes_on():
    server = Server()
    runner, time, said = runner_behind(server, budget_us=1_000_000)
    scenarios = races(4)
    server.go_away_at_next_press(refusals=-1)
    results = [runner.run(scenarios[0])]
    assert time.sleeps == [0.05, 0.1, 0.2, 0.4, 0.25]    # the last pause ends with the budget
    assert "not back within the outage budget of 1 s (6 tries)" in results[0].races[0].error
    refused = server.refused
    results += [runner.run(sc) for sc in scenarios[1:3]]   # each tries once, without waiting, and says why not
    assert server.refused == refused + 2 and len(time.sleeps) == 5
    assert [r.status for r in results] == ["link-error"] * 3
    assert results[1].races[0].error.startswith(f"not run: {URL}: connection refused")
    server.back()
    results.append(runner.run(scenarios[3]))
    assert results[3].status == "pass", (results[3].races[0].error, results[3].races[0].failures)


@pytest.mark.parametrize("text, us", [("30s", 30_000_000), ("500ms", 500_000), ("2min", 120_000_000),
                                      ("30", 30_000_000), ("1.5s", 1_500_000), ("0", 0)])
def test_outage_budgets_are_durations(text, us):
    assert parse_budget(text) == us


def test_a_bad_outage_budget_is_a_usage_error(capsys):
    from unohil.harness.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["run", "--outage-budget", "soon"])
    assert exc.value.code == 2
    assert "'soon' is not a duration" in capsys.readouterr().err
