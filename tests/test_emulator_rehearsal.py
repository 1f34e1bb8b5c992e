"""Rehearsals (emulator/rehearsal.py): a throwaway copy replays the served unit's game up to
its coming due time, and the served unit is never touched. Virtual clocks only."""
from __future__ import annotations

import socket

import pytest

from unohil.protocol import ENUMS, PARAMS_BY_NAME, msg
from unohil.protocol.devtime import wrap

from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe
from unohil.emulator.rehearsal import Rehearsal
from unohil.emulator.serve import Server, SocketPort

R = ENUMS["showdown_reason"]
A, B, TIMER, LOAD = 0, 1, 2, 3
PRESS = 1
COUNTDOWN = 500_000


def unit(**config) -> tuple[VirtualLink, Probe]:
    link = VirtualLink("showdown", 1)
    p = Probe(link)
    p.wait_event("BOOT")
    for name, value in dict(countdown_min_us=COUNTDOWN, countdown_max_us=COUNTDOWN, **config).items():
        assert p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value)).name == "CONFIG_VALUE"
    assert p.request(msg.RESET(ENUMS["reset_mode"].new_game)).name == "ACK"
    return link, p


def copy_events(r: Rehearsal) -> list:
    return [m for _seq, _t, m in r.copy._ring]


def served_state(link: VirtualLink) -> tuple:
    d = link.device
    return (link.clock.now(), d.next_event_seq, d.pending_injects, d.rng.getstate(), bytes(d.output),
            d.model.state, list(d.game_inputs), d._tx_seq)


def test_a_false_start_is_replayed_to_its_verdict_and_the_served_unit_is_untouched():
    link, p = unit()
    p.request(msg.INPUT(LOAD, PRESS, 2))
    p.request(msg.INPUT(TIMER, PRESS, 0))
    now = link.device.now()
    p.request(msg.INJECT(wrap(now + 50_000), B, PRESS, 0))       # during the countdown: a false start
    before = served_state(link)
    r = Rehearsal(link.device)
    due = link.clock.next_due()
    assert r.run(due) is True
    assert served_state(link) == before
    events = copy_events(r)
    seen = [(e.input, e.action, e.value) for e in events if e.NAME == "INPUT_SEEN"]
    assert seen[-3:] == [(LOAD, PRESS, 2), (TIMER, PRESS, 0), (B, PRESS, 0)]
    verdict = [e for e in events if e.NAME == "SD_VERDICT"][-1]
    assert (verdict.loser, verdict.reason) == (B, R.false_start)
    # The copy's game runs 1 us behind the unit's (so an edge at the game's own first instant is
    # still in the copy's future), and its clock stops 1 us past the replayed due time.
    unit_edges = [t - link.device.game_start for t, *_ in link.device.game_inputs]
    copy_edges = [t - r.copy.game_start for t, *_ in r.copy.game_inputs]
    assert copy_edges == [t + 1 for t in unit_edges] + [now + 50_000 - link.device.game_start + 1]
    assert r.copy.now() - r.copy.game_start == link.device.from_clock(due) - link.device.game_start + 2
    assert r.run(due) is True and r.runs == 2                  # and again, from a new game each time


def test_a_first_press_race_is_replayed_up_to_each_due_time_and_no_further():
    link, p = unit()
    p.request(msg.INPUT(LOAD, PRESS, 2))
    start = p.request(msg.INPUT(TIMER, PRESS, 0)).time_us
    press = start + COUNTDOWN + 180_000
    p.request(msg.INJECT(wrap(press), A, PRESS, 0))
    r = Rehearsal(link.device)
    link.device.take_output()
    # next due: green; the copy goes green and stops short of the press
    assert r.run(link.clock.next_due())
    names = [e.NAME for e in copy_events(r)]
    assert "SD_GREEN" in names and "SD_LAUNCH" not in names
    # the served unit reaches its press; its next due time is the first_press verdict
    p.run_for(COUNTDOWN + 180_000 + 1 - (link.device.now() - start))
    assert link.device.game_inputs[-1] == (press, A, PRESS, 0)
    assert r.run(link.clock.next_due())
    verdict = [e for e in copy_events(r) if e.NAME == "SD_VERDICT"][-1]
    assert (verdict.loser, verdict.reason, verdict.reaction_a_us) == (B, R.first_press, 180_000)


def test_nothing_to_replay_before_the_game_has_an_input():
    link, p = unit()
    r = Rehearsal(link.device)
    assert r.run(link.clock.now() + 1_000) is False and r.runs == 0


def test_the_replay_keeps_to_the_inject_queue_and_to_the_game_since_its_reset():
    link, p = unit()
    for _ in range(20):
        p.request(msg.INPUT(LOAD, PRESS, 1))
        p.request(msg.INPUT(LOAD, 0, 1))              # load and unload: 40 edges, no state reached
    assert len(link.device.game_inputs) == 16
    p.request(msg.RESET(ENUMS["reset_mode"].new_game))
    assert link.device.game_inputs == [] and link.device.game_start == link.device.now()


class SteppingClock:
    """A serving clock whose every reading is 100 us after the last: a replay takes a fixed time."""

    def __init__(self) -> None:
        self.t = 0

    def now(self) -> int:
        self.t += 100
        return self.t


def _server_with_a_game(clock) -> tuple[Server, socket.socket]:
    link, p = unit()
    p.request(msg.INPUT(LOAD, PRESS, 2))
    host, unit_end = socket.socketpair()
    server = Server(clock, rehearse=True)
    server.add(link.device, SocketPort(unit_end, "socketpair:showdown"))
    return server, host


def test_the_serving_loop_starts_no_replay_that_the_recent_ones_say_would_end_past_the_due_time():
    clock = SteppingClock()
    server, host = _server_with_a_game(clock)
    try:
        due = 5_000
        (r,) = server.rehearsals.values()
        server._rehearse_until(due, [r])
        assert r.runs >= 2
        assert clock.t <= due                      # every replay ended before the due time
        assert due - clock.t <= 2 * 200 + 100      # and it stopped only when one more would not fit
    finally:
        server.close()
        host.close()


def test_bytes_that_arrive_stop_the_replays_and_a_failing_replay_stops_them_for_good(capsys):
    clock = SteppingClock()
    server, host = _server_with_a_game(clock)
    try:
        (r,) = server.rehearsals.values()
        host.send(b"\x00")
        server._rehearse_until(1_000_000, [r])
        assert r.runs == 1      # one replay, then the byte waiting is served first

        def broken(due):
            raise RuntimeError("model bug")
        r.run = broken
        server._rehearse_until(1_000_000, [r])
        assert server.rehearsals == {}
        assert "rehearsals stopped: RuntimeError('model bug')" in capsys.readouterr().err
    finally:
        server.close()
        host.close()


@pytest.mark.parametrize("kind, edges", [
    ("flash", [(0, PRESS, 0), (1, PRESS, 0), (2, PRESS, 0), (8, PRESS, 0), (9, PRESS, 0)]),   # a buzzer race
    ("launcher", [(1, PRESS, 0), (2, PRESS, 5), (1, 0, 0), (0, PRESS, 0)]),                   # load, fire
])
def test_every_unit_kind_replays_its_game(kind, edges):
    link = VirtualLink(kind, 1)
    p = Probe(link)
    p.wait_event("BOOT")
    for inp, action, value in edges:
        assert p.request(msg.INPUT(inp, action, value)).name in ("ACK", "NAK")
        p.run_for(1_000)
    r = Rehearsal(link.device)
    assert r.run(link.clock.now() + 1)
    seen = [(e.input, e.action, e.value) for e in copy_events(r) if e.NAME == "INPUT_SEEN"]
    assert seen == edges


def test_races_without_a_reset_are_games_of_their_own():
    """A game begins again at the first edge that finds the unit idle after it played, so a unit
    raced over and over without RESET is rehearsed on its current race, not its first 16 edges."""
    link, p = unit()
    for i in range(6):
        p.request(msg.INPUT(LOAD, PRESS, 1))
        now = link.device.now()
        p.request(msg.INJECT(wrap(now + 10), TIMER, PRESS, 0))
        p.request(msg.INJECT(wrap(now + 10 + COUNTDOWN + (100_000 if i % 2 else -100_000)), A, PRESS, 0))
        if i == 5:
            break
        p.wait_event("SD_VERDICT", 10_000_000)
        p.run_for(1_000)
    d = link.device
    assert d.game_start == now and [e[1] for e in d.game_inputs] == [LOAD]
    r = Rehearsal(d)
    p.run_for(11)                                  # TIMER: the countdown runs; next due: green
    assert [e[1] for e in d.game_inputs] == [LOAD, TIMER]
    press = now + 10 + COUNTDOWN + 100_000
    assert r.run(link.clock.next_due()) and r.run(d.to_clock(press + 1_000))    # the tie window ends
    verdict = [e for e in copy_events(r) if e.NAME == "SD_VERDICT"][-1]
    assert (verdict.reason, verdict.reaction_a_us) == (R.first_press, 100_000)


def test_the_serving_loop_rehearses_the_unit_whose_timer_is_due_next():
    """Of many served units, the one about to run its timer is the one whose code must be warm:
    replaying every unit's game before each due time would take longer than the spin itself."""
    from unohil.emulator.clock import VirtualClock
    from unohil.emulator.device import Device
    from unohil.protocol import encode
    clock = VirtualClock()
    server = Server(clock, rehearse=True)
    hosts = []
    try:
        devices = []
        for serial, countdown in ((1, 1_500_000), (2, 700_000), (3, 1_100_000)):
            d = Device("showdown", clock, serial=serial)
            host, unit_end = socket.socketpair()
            hosts.append(host)
            server.add(d, SocketPort(unit_end, f"socketpair:{serial}"))
            d.start()
            for seq, m in enumerate((msg.CONFIG_SET(PARAMS_BY_NAME["countdown_min_us"].id, countdown),
                                     msg.CONFIG_SET(PARAMS_BY_NAME["countdown_max_us"].id, countdown),
                                     msg.CONFIG_SET(PARAMS_BY_NAME["beep_interval_us"].id, 2_000_000),
                                     msg.INPUT(LOAD, PRESS, 2), msg.INPUT(TIMER, PRESS, 0))):
                d.receive(encode(m, seq, 0))
            devices.append(d)
        order = []
        while (due := clock.next_due()) is not None and due < 1_600_000:
            (r,) = server._rehearsals_due()
            order.append(r.unit.serial)
            clock.advance_to(due)
        assert order[:3] == [2, 3, 1]          # the greens, soonest first
        assert all(server.rehearsals[d].unit is d for d in devices)
    finally:
        server.close()
        for host in hosts:
            host.close()
