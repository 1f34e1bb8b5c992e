"""Device time: the u32 microsecond counter, its wrap, and unwrapping on the host."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unohil.protocol import devtime
from unohil.protocol.devtime import HALF, WRAP, Unwrapper, diff, wrap


def test_wrap_period_is_71_min_34_967296_s():
    assert WRAP == 2**32
    minutes, rest = divmod(WRAP, 60_000_000)
    assert (minutes, rest) == (71, 34_967_296)


def test_diff_is_signed_and_wrap_aware():
    assert diff(5, 3) == 2
    assert diff(3, 5) == -2
    assert diff(0x00000010, 0xFFFFFFF0) == 0x20          # across the wrap, forward
    assert diff(0xFFFFFFF0, 0x00000010) == -0x20
    assert diff(HALF - 1, 0) == HALF - 1                 # the furthest "ahead"
    assert diff(HALF, 0) == -HALF                        # exactly half a wrap counts as behind
    assert diff(0, 0) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**40), st.integers(-HALF, HALF - 1))
def test_diff_recovers_any_offset_within_half_a_wrap(t, d):
    assume_t = t + d
    if assume_t < 0:
        return
    assert diff(wrap(t + d), wrap(t)) == d


def test_unwrap_first_value_is_taken_as_is():
    u = Unwrapper()
    assert u.unwrap(123) == 123
    assert u.latest == 123


def test_unwrap_across_several_wraps():
    """A stream of event times 10 s apart for 5 hours crosses the wrap four times."""
    u = Unwrapper()
    step = 10_000_000
    for i in range(5 * 3600 // 10):
        t = 1_000 + i * step
        assert u.unwrap(wrap(t)) == t
    assert u.latest > 4 * WRAP


def test_unwrap_just_before_and_after_the_wrap():
    u = Unwrapper()
    assert u.unwrap(0xFFFFFFFF) == 0xFFFFFFFF
    assert u.unwrap(0) == WRAP
    assert u.unwrap(1) == WRAP + 1
    assert u.unwrap(0xFFFFFFFF) == WRAP - 1           # an older, resent time: before the wrap
    assert u.latest == WRAP + 1                         # latest never moves back


def test_resent_older_events_unwrap_to_their_original_time():
    """EVENT_RESEND delivers events with their original header time, after newer ones."""
    u = Unwrapper()
    rng = random.Random(3)
    t = WRAP - 5_000_000                                # 5 s before the first wrap
    history = []
    for _ in range(400):
        t += rng.randrange(1, 200_000)
        history.append(t)
        assert u.unwrap(wrap(t)) == t
        if rng.random() < 0.2:                          # resend a few older ones (within 64 events)
            for old in rng.sample(history[-64:], k=min(5, len(history))):
                assert u.unwrap(wrap(old)) == old
    assert history[0] < WRAP < history[-1]


def test_unwrap_with_a_start_reference():
    u = Unwrapper(start=3 * WRAP + 100)
    assert u.unwrap(50) == 3 * WRAP + 50
    assert u.unwrap(wrap(-50)) == 3 * WRAP - 50


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10 * WRAP), st.lists(st.integers(-(HALF - 1) // 2, HALF - 1), min_size=1, max_size=50))
def test_unwrap_tracks_any_sequence_within_half_a_wrap_of_the_latest(start, steps):
    """Each new time within +/- half a wrap of the latest one seen unwraps exactly."""
    u = Unwrapper(start=start)
    latest = start
    t = start
    for s in steps:
        t = t + s
        if t < 0 or abs(t - latest) >= HALF:
            continue
        assert u.unwrap(wrap(t)) == t
        latest = max(latest, t)
        assert u.latest == latest


def test_reset_forgets_the_reference():
    u = Unwrapper()
    u.unwrap(0xFFFFFF00)
    u.unwrap(0x10)
    u.reset()
    assert u.latest is None
    assert u.unwrap(0x10) == 0x10


@pytest.mark.parametrize("now, at, ok", [
    (1000, 1001, True),                  # 1 us ahead: accepted
    (1000, 1000, False),                 # at the completion time: too late
    (1000, 999, False),
    (0xFFFFFFF0, 0x00000005, True),      # ahead across the wrap
    (0x00000005, 0xFFFFFFF0, False),     # behind across the wrap
    (0, HALF - 1, True),                 # the furthest time INJECT can name
    (0, HALF, False),                    # half a wrap ahead is indistinguishable from behind: too late
])
def test_inject_time_rule(now, at, ok):
    """SPEC.md, test mode: INJECT.at_us is accepted iff diff(at_us, now) > 0."""
    assert (devtime.diff(at, now) > 0) is ok
