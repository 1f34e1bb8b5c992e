"""Text for people: durations in human units, and strings made safe to print on a terminal.

Pure and dependency-free, so every layer (run's messages, report's console, the CLI) says a
duration and escapes a name the same way.
"""
from __future__ import annotations

import unicodedata


def duration(us: int | float | None, *, exact: bool = True) -> str:
    """A duration in microseconds in the largest unit that reads well: `250 ms`, `1 s`, `37 us`.

    exact=True (the default) never loses a microsecond: 200001 is `200.001 ms`, 1234567 is
    `1234.567 ms` (seconds only when whole milliseconds), so a diff that hinges on one
    microsecond still shows it. exact=False rounds to three significant digits, for statistics
    (p50 24.6 us, p99 1.23 ms) where the last digit is noise.
    """
    if us is None:
        return "-"
    if us != us:                    # NaN: a statistic of no samples
        return "-"
    sign = "-" if us < 0 else ""
    a = abs(us)
    if not exact:
        return sign + _rounded(float(a))
    a = int(round(a))
    if a >= 1_000_000 and a % 1000 == 0:
        return f"{sign}{_decimals(a // 1000, 3)} s"
    if a >= 1000:
        return f"{sign}{_decimals(a, 3)} ms"
    return f"{sign}{a} us"


def duration_rounded(us: int | float | None) -> str:
    """duration(us, exact=False): three significant digits, for a chart's labels and statistics."""
    return duration(us, exact=False)


def clock_span(us: int) -> str:
    """A long span of microseconds in hours, minutes and seconds, exact to the microsecond: '30 min',
    '1 h 6 min 40 s', '35 min 47.483648 s' (how far a race schedules against the device clock's wrap)."""
    s, micro = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    sec = f"{s}.{micro:06d}".rstrip("0") if micro else str(s)
    parts = ([f"{h} h"] if h else []) + ([f"{m} min"] if m else []) + ([f"{sec} s"] if s or micro else [])
    return " ".join(parts) or "0 s"


def _decimals(n: int, places: int) -> str:
    """n / 10**places written without trailing zeros: 250000, 3 -> '250'; 1500, 3 -> '1.5'."""
    whole, frac = divmod(n, 10 ** places)
    text = f"{frac:0{places}d}".rstrip("0")
    return f"{whole}.{text}" if text else str(whole)


def _rounded(a: float) -> str:
    for limit, div, unit in ((999_500.0, 1e6, "s"), (999.5, 1e3, "ms")):
        if a >= limit:
            return f"{_sig3(a / div)} {unit}"
    return f"{_sig3(a)} us"


def _sig3(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.2f}".rstrip("0").rstrip(".")


def printable(text: object) -> str:
    """text with every character that would act on a terminal instead of showing written visibly
    (`\\x1b`, `\\n`, `\\u202e`): C0 and C1 controls, DEL, and the format characters (bidi
    overrides, zero-width joiners) that reorder or hide what follows. A scenario name or a
    device's string reaches the screen as text, never as a command to it."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() or ch == " " else _escape(ch) for ch in s)


def _escape(ch: str) -> str:
    if ch in "\n\t\r":
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch]
    if unicodedata.category(ch) == "Zs":        # a no-break or other space: harmless, keep it
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
