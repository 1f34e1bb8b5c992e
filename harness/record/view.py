"""What `unohil record --device` shows while it listens: on a terminal a live panel (what was recorded so far
and the latest events), anywhere else one line per event as it arrives."""
from __future__ import annotations

from collections import deque

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from unohil.harness.report.console import choose_format
from unohil.harness.run.judge import named_fields
from unohil.harness.text import printable

LATEST = 16             # events the panel keeps on screen


class RecordingView:
    """Shows the events of a live recording (unit: the catalogue's view of its kind, origin: device us at 0)."""

    def __init__(self, console: Console, fmt: str, unit, title: str, origin: int):
        self.console, self.unit, self.title, self.origin = console, unit, title, origin
        self.fmt = choose_format(fmt, console)
        self.latest: deque = deque(maxlen=LATEST)
        self.inputs = self.verdicts = self.events = 0
        self.last_us = origin
        self._live: Live | None = None

    def __enter__(self) -> "RecordingView":
        if self.fmt == "rich":
            self._live = Live(self.panel(), console=self.console, refresh_per_second=10, transient=False)
            self._live.__enter__()
        else:
            self.console.print(self.title, markup=False, highlight=False, soft_wrap=True)
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self.panel())
            self._live.__exit__(*exc)

    def event(self, f) -> None:
        """One event as it arrived."""
        self.events += 1
        self.inputs += f.msg.NAME == "INPUT_SEEN"
        self.verdicts += f.msg.NAME == self.unit.verdict
        self.last_us = max(self.last_us, f.dev_us)
        row = (self.seconds(f.dev_us), f.msg.NAME, self.fields(f))
        if self._live is None:
            self.console.print(f"{row[0]:>12}  {row[1]:<18} {row[2]}", markup=False, highlight=False,
                               soft_wrap=True)
        else:
            self.latest.append(row)
            self._live.update(self.panel())

    def seconds(self, dev_us: int) -> str:
        return f"{(dev_us - self.origin) / 1e6:.6f} s"

    def fields(self, f) -> str:
        return printable(" ".join(f"{k}={v}" for k, v in named_fields(f, self.unit).items()))

    def panel(self) -> Group:
        head = Text(self.title, style="bold")
        counts = Text(f"{self.seconds(self.last_us)} of device time · {self.events} events · {self.inputs} input "
                      f"edges · {self.verdicts} verdicts ({self.unit.verdict})")
        table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
        table.add_column("device time", justify="right", no_wrap=True)
        table.add_column("event", no_wrap=True)
        table.add_column("fields", overflow="fold")
        for t, name, fields in self.latest:
            style = "bold cyan" if name == "INPUT_SEEN" else "bold green" if name == self.unit.verdict else None
            table.add_row(t, Text(name, style=style), fields)
        return Group(head, counts, table)
