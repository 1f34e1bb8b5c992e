"""The clocks' scheduling rules: time order, inputs before timers at one instant,
scheduling order within a priority, cancellation."""
from __future__ import annotations

from unohil.emulator.clock import INPUT, TIMER, RealClock, VirtualClock


def test_order_time_then_inputs_then_scheduling_order():
    c = VirtualClock()
    log = []
    c.call_at(10, log.append, "timer 10 first")
    c.call_at(10, log.append, "input 10 first", priority=INPUT)
    c.call_at(5, log.append, "timer 5")
    c.call_at(10, log.append, "timer 10 second")
    c.call_at(10, log.append, "input 10 second", priority=INPUT)
    c.advance_to(10)
    assert log == ["timer 5", "input 10 first", "input 10 second", "timer 10 first", "timer 10 second"]
    assert c.now() == 10


def test_entries_run_at_their_own_time():
    c = VirtualClock()
    seen = []
    for t in (3, 7, 7, 12):
        c.call_at(t, lambda: seen.append(c.now()))
    c.advance_to(100)
    assert seen == [3, 7, 7, 12] and c.now() == 100


def test_cancel_and_next_due():
    c = VirtualClock()
    log = []
    h = c.call_at(5, log.append, "x")
    c.call_at(9, log.append, "y")
    assert c.next_due() == 5
    h.cancel()
    assert not h.active and c.next_due() == 9
    c.advance_to(20)
    assert log == ["y"] and c.next_due() is None


def test_entry_scheduled_while_running_at_the_same_time_runs_in_the_same_step():
    c = VirtualClock()
    log = []
    c.call_at(4, lambda: c.call_at(4, log.append, "chained"))
    assert c.run_next(limit=10) == 4
    assert log == ["chained"] and c.now() == 4


def test_run_next_respects_the_limit():
    c = VirtualClock()
    c.call_at(50, lambda: None)
    assert c.run_next(limit=49) is None and c.now() == 0
    assert c.run_next(limit=50) == 50 and c.now() == 50


def test_real_clock_runs_due_entries_in_order_and_can_pin_time():
    for pin in (False, True):
        c = RealClock(pin_due=pin)
        now = c.now()
        seen = []
        c.call_at(now - 5, lambda: seen.append(("timer", c.now())), priority=TIMER)
        c.call_at(now - 5, lambda: seen.append(("input", c.now())), priority=INPUT)
        c.call_at(now + 10_000_000, lambda: seen.append("far"))
        assert c.run_due() == 2
        assert [s[0] for s in seen] == ["input", "timer"]
        if pin:
            assert [s[1] for s in seen] == [now - 5, now - 5]
        else:
            assert all(s[1] >= now for s in seen)
