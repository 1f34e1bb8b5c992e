"""The recorder's live view (harness/record/view.py): on a terminal a panel with the latest events and what was
recorded so far, anywhere else a line per event; both fed by a real recording on the virtual clock."""
from __future__ import annotations

import io

from rich.console import Console

from unohil.protocol import catalogue as cat

from unohil.harness.record.live import LiveRecording
from unohil.harness.record.view import LATEST, RecordingView
from unohil.harness.scenarios.units import UNITS
from unohil.harness.session.driver import Driver


def _session(view_of) -> RecordingView:
    """A person loads a card, starts the countdown and presses A after green; the view shows it."""
    with Driver.open("emu://showdown?clock=virtual&seed=3") as d:
        dev, inputs = d.link.device, cat.UNITS["showdown"].inputs
        press = cat.ENUM_VALUES["action"]["press"]
        rec = LiveRecording(d)
        rec.start()
        view = view_of(d)
        t0 = d.device_now() + 100_000
        dev.physical_input(t0, inputs["load_cards"], press, 1)
        dev.physical_input(t0 + 50_000, inputs["timer"], press, 0)
        with view:
            rec.run(8_000_000, lambda f: (view.event(f), f.msg.NAME == "SD_GREEN" and dev.physical_input(
                f.dev_us + 200_000, inputs["paddle_a"], press, 0)))
    return view


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=110, color_system=None if not terminal else "standard"), out


def test_on_a_terminal_the_panel_counts_what_was_recorded_and_keeps_the_latest_events():
    console, out = _console(True)
    view = _session(lambda d: RecordingView(console, "auto", UNITS["showdown"], "recording showdown unit 1",
                                            d.device_now()))
    assert view.fmt == "rich"
    assert view.inputs == 3 and view.verdicts == 1 and view.events > LATEST
    assert len(view.latest) == LATEST and view.latest[-1][1] in ("SD_VERDICT", "STATE")
    shown = Console(file=io.StringIO(), width=110, record=True)
    shown.print(view.panel())
    text = shown.export_text()
    assert "recording showdown unit 1" in text
    assert "3 input edges · 1 verdicts (SD_VERDICT)" in text
    assert "SD_VERDICT" in text and "loser=b" in text and "reason=first_press" in text
    assert "\x1b[" in out.getvalue()            # drawn as a live display, not printed line by line


def test_anywhere_else_each_event_is_one_line_as_it_arrives():
    console, out = _console(False)
    view = _session(lambda d: RecordingView(console, "auto", UNITS["showdown"], "recording showdown unit 1",
                                            d.device_now()))
    assert view.fmt == "lines" and not view.latest
    lines = out.getvalue().splitlines()
    assert lines[0] == "recording showdown unit 1"
    assert len(lines) == 1 + view.events
    assert sum("INPUT_SEEN" in line and "source=physical" in line for line in lines) == 3
    (verdict,) = [line for line in lines if " SD_VERDICT " in line]
    assert verdict.split()[1] == "s" and "loser=b" in verdict       # "   12.345678 s  SD_VERDICT  loser=b ..."
