"""Durations for people: 250 ms, 1.5 s, 180 us; exact microseconds stay in the results file."""
from __future__ import annotations


def human_us(us: float | int | None) -> str:
    if us is None:
        return "-"
    a = abs(us)
    if a >= 1_000_000:
        return f"{us / 1_000_000:.3g} s"
    if a >= 1_000:
        return f"{us / 1_000:.3g} ms"
    return f"{us:.0f} us" if isinstance(us, float) else f"{us} us"
