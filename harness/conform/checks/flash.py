"""Conformance checks of SPEC 8 that no scenario can make: the Flash base's rules about RESET new_game, the
power switch and an inactivity period longer than a race may schedule (FL-23, FL-24, FL-25, FL-28)."""
from __future__ import annotations

from contextlib import contextmanager

from unohil.protocol import catalogue as cat, devtime, msg

from unohil.harness.conform.checks.reset import reboot
from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import ACTION, QUIET_US, REPLY_TIMEOUT_US, expect, show

SLEEP = cat.PARAMS_BY_NAME["sleep_after_us"]
#: how late a timer event may come (PR-1 allows lateness, never earliness) before these checks call it wrong
TIMER_LATENESS_US = 100_000
#: FL-23's mis-armed period (one wrapped deadline, signed comparison) ends at once: what the check waits for
AT_ONCE_US = 2_000_000
#: the longest a host lets pass between two replies it must order (well inside 3.2's half-wrap)
REPLY_SPACING_US = 1 << 30


def is_flash(cs) -> bool:
    return cs.kind == "flash"


def _since(later: int, earlier: int) -> int:
    """Device microseconds from one u32 stamp to a later one (SPEC 3.2), for spans up to 2^32 - 1."""
    return (later - earlier) % devtime.WRAP


def _set_sleep_after(cs, value: int) -> None:
    """A new game with sleep_after_us at value. A unit asleep at once (a period it mis-arms, left by a check
    before) takes no configuration: it is rebooted, which restores the defaults, and configured then."""
    w = cs.w
    cs.new_game()
    r = w.command(msg.CONFIG_SET(param=SLEEP.id, value=value))
    if r.msg.NAME != "CONFIG_VALUE":
        reboot(cs)
        cs.new_game()
        w.command(msg.CONFIG_SET(param=SLEEP.id, value=value), expect="CONFIG_VALUE")


@contextmanager
def _sleep_after(cs, value: int):
    """sleep_after_us at value for the block, back to its default after it (a new game then)."""
    _set_sleep_after(cs, value)
    try:
        yield
    finally:
        _set_sleep_after(cs, SLEEP.default)


def _edge(cs):
    """One input edge that changes nothing (the kind's `report` situation): its INPUT_SEEN's time."""
    w = cs.w
    name, action, value = cs.recipe["report"]
    n = len(w.frames)
    w.command(msg.INPUT(input=cs.input_id(name), action=ACTION[action], value=value), expect="ACK")
    seen = w.wait(lambda f: f.msg.NAME == "INPUT_SEEN", REPLY_TIMEOUT_US, n)
    expect(seen is not None, f"no INPUT_SEEN for INPUT {name} {action}")
    return seen.time_us


def _sleep_event(w, timeout_us: int, start: int):
    return w.wait(lambda f: f.msg.NAME == "FL_SLEEP" and f.msg.asleep == 1, timeout_us, start)


def _wait_long(w, timeout_us: int, start: int):
    """FL_SLEEP(1) within timeout_us, which may pass the half-wrap: a STATUS_GET (no input, so no activity)
    every REPLY_SPACING_US keeps two consecutive stamps the host reads ordered (SPEC 3.2, 3.3)."""
    waited = 0
    while waited < timeout_us:
        step = min(REPLY_SPACING_US, timeout_us - waited)
        found = _sleep_event(w, step, start)
        if found is not None:
            return found
        waited += step
        w.command(msg.STATUS_GET(), expect="STATUS")
    return None


@check("8", "an inactivity period beyond the half-wrap (sleep_after_us at its maximum) is not over at once",
       decisions=("FL-23",), needs=("config_set", "host_input"), when=is_flash)
def long_sleep_period(cs):
    """FL-23: a period longer than 2^31 us is armed as a countdown in steps. A unit that arms it as one
    wrapped deadline compared as SPEC 3.2 compares times sees it already past and sleeps at once. The whole
    period (an hour) is waited for only on a virtual clock, where it costs nothing."""
    w = cs.w
    period = SLEEP.max
    n = len(w.frames)
    with _sleep_after(cs, period):
        t0 = _edge(cs)
        early = _sleep_event(w, AT_ONCE_US, n)
        expect(early is None, f"FL_SLEEP at once (within {AT_ONCE_US // 1000} ms) with sleep_after_us = {period}: "
                              f"a period beyond 2^31 us must be armed in steps (FL-23), not as one deadline")
        n = len(w.frames)
        if not getattr(w.link, "virtual", False):
            return f"no sleep within {AT_ONCE_US // 1000} ms; the hour itself is waited for on a virtual clock only"
        asleep = _wait_long(w, period + TIMER_LATENESS_US, n)
        expect(asleep is not None, f"no FL_SLEEP within {period + TIMER_LATENESS_US} us of the last edge")
        late = _since(asleep.time_us, t0) - period
        expect(0 <= late <= TIMER_LATENESS_US, f"FL_SLEEP {late:+d} us from the last edge + sleep_after_us "
                                               f"({period}): the period must end there (FL-23)")


@check("8", "RESET new_game restarts the inactivity period from the RESET",
       decisions=("FL-24",), needs=("config_set", "host_input"), when=is_flash)
def reset_restarts_sleep(cs):
    """FL-24: neither cancelled (no sleep at all) nor kept (a sleep counted from the edge before the RESET)."""
    w = cs.w
    period = SLEEP.min
    with _sleep_after(cs, period):
        _edge(cs)
        w.quiet(period * 6 // 10)
        ack = w.command(msg.RESET(mode=0), expect="ACK")
        n = w.frames.index(ack) + 1
        state = w.wait(lambda f: f.msg.NAME == "STATE", REPLY_TIMEOUT_US, n)
        expect(state is not None, "no STATE event after RESET new_game")
        asleep = _sleep_event(w, period + TIMER_LATENESS_US + QUIET_US, n)
        expect(asleep is not None, f"no FL_SLEEP within sleep_after_us ({period} us) of RESET new_game: the "
                                   f"RESET must restart the inactivity period, not cancel it (FL-24)")
        after = _since(asleep.time_us, state.time_us)
        expect(period <= after <= period + TIMER_LATENESS_US,
               f"FL_SLEEP {after} us after RESET new_game's STATE, expected sleep_after_us ({period}): the period "
               f"restarts at the RESET (FL-24)")


@contextmanager
def _switched_off(cs):
    w = cs.w
    cs.new_game()
    w.command(msg.INPUT(input=cs.input_id("power"), action=ACTION["release"], value=0), expect="ACK")
    try:
        yield
    finally:
        w.command(msg.INPUT(input=cs.input_id("power"), action=ACTION["press"], value=0), expect="ACK")
        cs.new_game()


@check("8", "switched off, a button the base lacks and a speed above 2 are still refused bad_value",
       decisions=("FL-25", "FL-29"), needs=("host_input",), when=is_flash)
def off_refuses_bad_values(cs):
    """FL-25: the value is refused before any state rule, off included (8.2's 'reported' is for the inputs
    the base has); the base's buttons are IDENTITY.players (FL-29)."""
    w = cs.w
    tried = [("speed_switch", 3)] + ([(f"player_{cs.ident.players}", 0)] if cs.ident.players < 8 else [])
    with _switched_off(cs):
        for name, value in tried:
            r = w.command(msg.INPUT(input=cs.input_id(name), action=ACTION["press"], value=value))
            expect(r.msg.NAME == "NAK" and r.msg.error == cat.ENUM_VALUES["error"]["bad_value"],
                   f"switched off, INPUT {name} press {value} answered {show(r)}, expected NAK bad_value (FL-25)")
    return "checked: " + "; ".join(f"{name} press {value}" for name, value in tried)


@check("8", "RESET new_game on a base switched off: STATE(off, previous off), and it stays off",
       decisions=("FL-28", "FL-17"), needs=("host_input",), when=is_flash)
def reset_while_off(cs):
    w = cs.w
    off = cs.state_id("off")
    with _switched_off(cs):
        ack = w.command(msg.RESET(mode=0), expect="ACK")
        state = w.wait(lambda f: f.msg.NAME == "STATE", REPLY_TIMEOUT_US, w.frames.index(ack) + 1)
        expect(state is not None, "no STATE event after RESET new_game on a base switched off (FL-28)")
        expect(state.msg.state == off and state.msg.previous == off,
               f"STATE({state.msg.state}, previous {state.msg.previous}) after RESET new_game switched off, "
               f"expected STATE({off}, previous {off}): the power switch stays off (FL-17, FL-28)")
        expect(w.status().state == off, "STATUS after RESET new_game switched off is not off")
