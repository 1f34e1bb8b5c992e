"""The interactive unit (unohil emulate KIND --interactive): one emulated unit served on a pty like any
other, whose lights and state are drawn in the terminal and whose buttons are the keyboard's keys.

A key is a person's edge on the unit's own switch (source physical, Device.physical_input) at the
device's current time. A terminal reports no key release, so a key on a button is a press released
HOLD_US later; its upper case (Shift) holds the button down until pressed again, for what must be held
(the Flash reset: PLAY/PAUSE and BUZZER together). A key on a switch (the catalogue's `switches`)
moves it to its next position; a key on a valued input (a card feeder) adds one card, its upper case
takes one out. Which inputs exist, their names and what each edge means come from the catalogue;
only the choice of keys is this module's (KEYS).

The screen is redrawn every TICK_US from the model (state, lights, what its timers show) and from
the events the unit produced (the last of each of its own kinds, and a log). q or Ctrl-C quits.
"""
from __future__ import annotations

import os
import termios
import tty
from collections import deque
from dataclasses import dataclass

from unohil.protocol import BY_NAME, ENUMS, NONE_I32, NONE_U8, NONE_U16, NONE_U32
from unohil.protocol.catalogue import UNITS, enum_name

NONE = {"u8": NONE_U8, "u16": NONE_U16, "u32": NONE_U32, "i32": NONE_I32}   # a field's "none" (PR-2)
HOLD_US = 80_000        # a key on a button: released this long after the press
TICK_US = 100_000       # the screen is redrawn this often (the timers on it count)
LOG_LINES = 10          # events shown at the bottom

PRESS, RELEASE = int(ENUMS["action"].press), int(ENUMS["action"].release)

# The keys of each kind, as (key, input name). The Flash buttons a base lacks (players) are left out.
KEYS = {
    "showdown": (("a", "paddle_a"), ("l", "paddle_b"), ("t", "timer"), ("c", "load_cards")),
    "flash": tuple((str(i + 1), button) for i, button in enumerate(UNITS["flash"].roles.buttons))
    + (("p", "play_pause"), ("b", "buzzer"), ("t", "speed_switch"), ("o", "power")),
    "launcher": ((" ", "button"), ("d", "door"), ("c", "load_cards"), ("o", "power")),
}
QUIT_KEYS = ("q", "\x03")       # \x03: Ctrl-C where the terminal does not turn it into SIGINT


@dataclass
class Key:
    char: str
    input: str
    id: int
    how: str            # button | switch | valued

    def label(self) -> str:
        shown = "space" if self.char == " " else self.char
        if self.how == "button" and self.char.isalpha():
            return f"{shown} {self.input} ({shown.upper()} holds)"
        if self.how == "valued":
            return f"{shown}/{shown.upper()} {self.input} +1/-1"
        return f"{shown} {self.input}" + (" (next position)" if self.how == "switch" else "")


def keys_for(kind: str, model) -> dict[str, Key]:
    """The key map of a unit kind: the catalogue's inputs behind KEYS' characters."""
    unit = UNITS[kind]
    players = getattr(model, "players", None)
    keys = {}
    for char, name in KEYS[kind]:
        if name.startswith("player_") and players is not None and int(name[7:]) >= players:
            continue
        how = "switch" if name in unit.switches else "valued" if name in unit.valued_inputs else "button"
        keys[char] = Key(char, name, unit.inputs[name], how)
    return keys


def fields_text(m, kind: str) -> str:
    """An event's fields by name, enums by their names (event_seq left out)."""
    unit = UNITS[kind]
    parts = []
    for f, value in zip(m.DEF.fields, m):
        if f.name == "event_seq":
            continue
        enum = unit.enum_for(m.NAME, f.name) or f.enum
        shown = enum_name(enum, value) if enum and not isinstance(value, tuple) else \
            "none" if value == NONE.get(f.type) else value
        parts.append(f"{f.name}={list(shown) if isinstance(shown, tuple) else shown}")
    return " ".join(parts)


def _seconds(us: int) -> str:
    return f"{us / 1e6:.1f} s"


def _showdown_clock(screen, now: int) -> str:
    state = screen.state_name()
    since = screen.last_time("SD_COUNTDOWN") if state == "countdown" else \
        screen.last_time("SD_GREEN") if state in ("go", "racing") else None
    if since is None:
        return f"tray {screen.device.model.tray} card(s)"
    return f"{'countdown' if state == 'countdown' else 'GREEN'} for {_seconds(now - since)}" + \
        (f" (beep {screen.device.model.beep_k - 1})" if state == "countdown" else "")


def _flash_clock(screen, now: int) -> str:
    model = screen.device.model
    timer = "no timer runs" if model.due is None else f"timer {_seconds(model.remaining(now))} left"
    return f"{timer} · players registered {sorted(model.registered)}" + \
        (f" · turn of player {model.current}" if model.current is not None else "")


def _launcher_clock(screen, now: int) -> str:
    model = screen.device.model
    return f"inside {model.inside} · fired {model.fired_total} · loaded {model.loaded_total}" + \
        (" · door open" if model.door_is_open else "")


CLOCKS = {"showdown": _showdown_clock, "flash": _flash_clock, "launcher": _launcher_clock}


class Screen:
    """The terminal side of one served unit: keys in (on_key, the Server's extra reader), screen out."""

    def __init__(self, server, device, path: str, fd_in: int, fd_out: int):
        self.server, self.device, self.path = server, device, path
        self.fd_in, self.fd_out = fd_in, fd_out
        self.kind = device.kind
        self.unit = UNITS[self.kind]
        self.keys = keys_for(self.kind, device.model)
        self.log: deque = deque(maxlen=LOG_LINES)
        self.latest: dict[str, tuple[int, object]] = {}     # event name -> (device time, message)
        self.held: set[str] = set()                          # inputs a key holds down
        self.down: dict[str, tuple] = {}                     # inputs pressed -> their release HOLD_US later
        self.positions = dict(self.unit.boot_positions)     # switch -> the position a key last put it in
        self.note = ""
        self.origin = device.now()
        self._shown = ""
        self._saved = None
        self._tick = None
        self._observed = device.observer

    # ---- life cycle ----
    def __enter__(self):
        self._saved = termios.tcgetattr(self.fd_in)
        tty.setcbreak(self.fd_in)                # keys one by one, unechoed; Ctrl-C stays SIGINT
        self._write("\x1b[?1049h\x1b[?25l")      # the alternate screen, no cursor: the shell's is kept as it was
        self.device.observer = self._seen
        self.server.add_reader(self.fd_in, self.on_readable)
        self._redraw()
        return self

    def __exit__(self, *exc):
        self.device.observer = self._observed
        if self._tick is not None:
            self._tick.cancel()
        self._write("\x1b[?25h\x1b[?1049l")
        termios.tcsetattr(self.fd_in, termios.TCSADRAIN, self._saved)
        return False

    def _write(self, text: str) -> None:
        data = text.encode()
        while data:
            data = data[os.write(self.fd_out, data):]

    # ---- keys ----
    def on_readable(self) -> None:
        try:
            data = os.read(self.fd_in, 64)
        except (BlockingIOError, InterruptedError):
            return
        if not data:                              # the terminal went away: nobody can play any more
            self.server.stop()
            return
        for char in data.decode(errors="replace"):
            self.on_key(char)

    def on_key(self, char: str) -> None:
        if char in QUIT_KEYS:
            self.server.stop()
            return
        key = self.keys.get(char) or self.keys.get(char.lower())
        if key is None:
            return
        upper = char != key.char
        now = self.device.now()
        if key.how == "switch":
            positions = list(self.unit.switches[key.input])
            step = -1 if upper else 1
            self.positions[key.input] = position = \
                positions[(positions.index(self.positions[key.input]) + step) % len(positions)]
            action, value = self.unit.switches[key.input][position]
            self._edge(now, key, int(ENUMS["action"][action]), value, f"{key.input} to {position}")
        elif key.how == "valued":
            self._edge(now, key, RELEASE if upper else PRESS, 1, f"{key.input} {'-1' if upper else '+1'}")
        elif upper:
            if key.input in self.held:
                self.held.discard(key.input)
                self._edge(now, key, RELEASE, 0, f"{key.input} released")
            elif key.input not in self.down:
                self.held.add(key.input)
                self._edge(now, key, PRESS, 0, f"{key.input} held down")
        elif key.input in self.held:
            self.note = f"{key.input} is held down: {key.char.upper()} releases it"
        else:
            if key.input in self.down:          # pressed again before its release: released now, then pressed
                for handle in self.down.pop(key.input):
                    handle.cancel()
                self.device.physical_input(now, key.id, RELEASE, 0)
            self._edge(now, key, PRESS, 0, f"{key.input} pressed")
            self.down[key.input] = (self.device.physical_input(now + HOLD_US, key.id, RELEASE, 0),
                                    self.device.clock.call_at(self.device.to_clock(now + HOLD_US), self._up, key.input))

    def _edge(self, now: int, key: Key, action: int, value: int, note: str) -> None:
        self.device.physical_input(now, key.id, action, value)
        self.note = note

    def _up(self, name: str) -> None:
        self.down.pop(name, None)

    # ---- what the unit did ----
    def _seen(self, m, t: int) -> None:
        if self._observed is not None:
            self._observed(m, t)
        if m.NAME == "BOOT":
            self.positions = dict(self.unit.boot_positions)
        self.latest[m.NAME] = (t, m)
        self.log.append((t, m))

    def last_time(self, name: str) -> int | None:
        seen = self.latest.get(name)
        return seen[0] if seen else None

    def state_name(self) -> str:
        return enum_name(self.unit.enum_for("STATE", "state"), self.device.model.state)

    # ---- the screen ----
    def _redraw(self) -> None:
        clock = self.device.clock
        self._tick = clock.call_at(clock.now() + TICK_US, self._redraw)
        text = self.render()
        if text != self._shown:
            self._shown = text
            self._write("\x1b[H" + text.replace("\n", "\x1b[K\n") + "\x1b[K\x1b[J")

    def render(self) -> str:
        device, unit = self.device, self.unit
        now = device.now()
        try:
            width = os.get_terminal_size(self.fd_out).columns
        except OSError:
            width = 100
        own = sorted((name for name in self.latest if BY_NAME[name].units == (self.kind,)),
                     key=lambda name: BY_NAME[name].id)     # the kind's own events, in the catalogue's order
        lines = [
            f"{unit.title} {device.serial} (emulated, seed {device.seed}) on {self.path}    q quits",
            "",
            f"state   {self.state_name()}",
            f"lights  {self._lights()}",
            f"now     {CLOCKS[self.kind](self, now)}",
            f"sound   " + (fields_text(self.latest['SOUND'][1], self.kind) if "SOUND" in self.latest else "-"),
            *[f"last    {name} {fields_text(self.latest[name][1], self.kind)}" for name in own],
            "",
            "keys    " + " · ".join(k.label() for k in self.keys.values()),
            f"held    {', '.join(sorted(self.held)) or '-'}    switches: "
            + (", ".join(f"{s} {p}" for s, p in self.positions.items()) or "-"),
            f"        {self.note}",
            "",
            "events (device time from the start, s)",
            *[f"  {(t - self.origin) / 1e6:10.3f}  {m.NAME:<17} {fields_text(m, self.kind)}" for t, m in self.log],
        ]
        return "\n".join(line[:width - 1] for line in lines)

    def _lights(self) -> str:
        model = self.device.model
        light_enum = self.unit.enum_for("LIGHT", "light")
        target_enum = self.unit.enum_for("LIGHT", "target")
        shown = []
        for name, light in ENUMS[light_enum].__members__.items():
            if model.light_key(light, 1) != model.light_key(light, 0) and hasattr(model, "players"):
                # one lamp per Player button: each is shown, lit or not
                shown += [f"{name} {b} {enum_name('light_mode', model.light_mode(light, b))}"
                          for b in range(model.players)]
                continue
            lit = [value for key, value in model.lights.items() if key[0] == light]
            for mode, target in lit or [(0, NONE_U8)]:
                toward = f" toward {enum_name(target_enum, target)}" if mode and target_enum and target != NONE_U8 else ""
                shown.append(f"{name} {enum_name('light_mode', mode)}{toward}")
        return " · ".join(shown)
