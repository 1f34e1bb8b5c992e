"""The input and output path of an emulated unit, between its switches and lamps and its model.

On a real bench a press closes a switch; the unit's firmware sees the edge some time later (the wire,
a debounce, its poll loop or its interrupt) and stamps it when it sees it. A verdict reaches the world
some time after the unit decided it (a lamp driver, the launch solenoid). The emulated rig
(emulator/rig.py) puts this path in front of the unit's model; by default it is clean: the unit sees
every edge at the instant the rig drove it, and every output is on the line at the instant of the event.

A path spec is a set of options (URL options of an emurig:// link), each a duration with us, ms or s:

    skew_INPUT=D       a fixed delay on one input's way in (per side: skew_paddle_b=300us)
    debounce=D         an edge counts once the line has been steady this long (all inputs);
    debounce_INPUT=D   the same for one input. A pulse shorter than the debounce never reaches the unit.
    irq=D              interrupt latency: the firmware takes an edge this long after it (all inputs)
    poll=D             a poll loop of this period instead of interrupts: each input is read once per
                       period, in scan order, SCAN_STEP_US apart, and an edge is taken at its input's
                       next read
    scan=IN,IN,...     the scan order of the poll loop (the inputs named first are read first; the
                       others follow in id order)
    jitter=D           each edge is late by a further uniform 0..D us (drawn from seed)
    delay=D            every output reaches its line this late; delay_NAME=D one output (a watched
                       line's name in the wiring: green, red, launch, player, card, ...)
    seed=N             the jitter's generator
    capture=D          the rig's own capture lag: every watched line (the loopback's too, SPEC 13.7) is
                       stamped this long after it crossed its threshold; not the unit's path but the rig's,
                       what the floor of a bench measures

The unit stamps an edge when its firmware takes it: INPUT_SEEN and the verdict's press times carry
that moment, so a poll loop's unit reports its presses up to a poll period late (its timestamp error).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

SCAN_STEP_US = 1            # one input read of a poll loop: the next input is read this much later
_UNITS = {"us": 1, "ms": 1000, "s": 1_000_000}
_MAX_US = 10_000_000        # no path delay is longer than 10 s


class PathSpecError(ValueError):
    """A path option that cannot be parsed; the message names the option."""


@dataclass(frozen=True)
class PathSpec:
    skew: dict[str, int] = field(default_factory=dict)          # input name -> us
    debounce: dict[str, int] = field(default_factory=dict)      # input name -> us ("" = every input)
    irq_us: int = 0
    poll_us: int = 0
    scan: tuple[str, ...] = ()
    jitter_us: int = 0
    delay: dict[str, int] = field(default_factory=dict)         # output line name -> us ("" = every output)
    seed: int = 1
    capture_us: int = 0                                         # the rig's own, on every watched line

    @property
    def clean(self) -> bool:
        return not (any(self.skew.values()) or any(self.debounce.values()) or self.irq_us or self.poll_us
                    or self.jitter_us or any(self.delay.values()))


def _duration(key: str, value: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(us|ms|s)?\s*", value)
    if not m:
        raise PathSpecError(f"{key}: {value!r} is not a duration (an integer with us, ms or s, e.g. 300us)")
    us = int(m.group(1)) * _UNITS[m.group(2) or "us"]
    if us > _MAX_US:
        raise PathSpecError(f"{key}: {value} is longer than the {_MAX_US // 1_000_000} s a path delay may be")
    return us


def parse(options: dict[str, str], inputs: dict[str, int], outputs: set[str]) -> PathSpec:
    """The path spec of these options, for a unit with these inputs (name -> id) and watched lines (names)."""
    skew, debounce, delay = {}, {}, {}
    irq = poll = jitter = capture = 0
    scan: tuple[str, ...] = ()
    seed = 1

    def named(key: str, prefix: str, names, what: str) -> str:
        name = key[len(prefix):]
        if name not in names:
            raise PathSpecError(f"{key}: the unit has no {what} {name!r}; it has: {', '.join(sorted(names))}")
        return name

    for key, value in options.items():
        if key.startswith("skew_"):
            skew[named(key, "skew_", inputs, "input")] = _duration(key, value)
        elif key == "debounce":
            debounce[""] = _duration(key, value)
        elif key.startswith("debounce_"):
            debounce[named(key, "debounce_", inputs, "input")] = _duration(key, value)
        elif key == "irq":
            irq = _duration(key, value)
        elif key == "poll":
            poll = _duration(key, value)
            if poll < 2 * SCAN_STEP_US * len(inputs):
                raise PathSpecError(f"poll: {value} is too short to read {len(inputs)} inputs "
                                    f"{SCAN_STEP_US} us apart")
        elif key == "scan":
            scan = tuple(n.strip() for n in value.split(",") if n.strip())
            for n in scan:
                if n not in inputs:
                    raise PathSpecError(f"scan: the unit has no input {n!r}; it has: {', '.join(inputs)}")
            if len(set(scan)) != len(scan):
                raise PathSpecError(f"scan: {value!r} names an input twice")
        elif key == "jitter":
            jitter = _duration(key, value)
        elif key == "delay":
            delay[""] = _duration(key, value)
        elif key.startswith("delay_"):
            delay[named(key, "delay_", outputs, "watched output")] = _duration(key, value)
        elif key == "capture":
            capture = _duration(key, value)
        elif key == "seed":
            if not value.strip().isdigit():
                raise PathSpecError(f"seed: {value!r} is not a whole number")
            seed = int(value)
        else:
            raise PathSpecError(f"unknown path option {key!r}; options: skew_INPUT, debounce, debounce_INPUT, irq, "
                                f"poll, scan, jitter, delay, delay_OUTPUT, capture, seed")
    if scan and not poll:
        raise PathSpecError("scan: a scan order needs a poll loop (poll=...)")
    if poll and irq:
        raise PathSpecError("poll and irq: a unit takes its inputs by a poll loop or by interrupts, not both")
    return PathSpec(skew, debounce, irq, poll, scan, jitter, delay, seed, capture)


class InputPath:
    """When the unit's firmware takes each edge of each input: the edge's unit time in, the time out."""

    def __init__(self, spec: PathSpec, inputs: dict[str, int]):
        self.spec = spec
        self.names = {i: n for n, i in inputs.items()}
        order = list(spec.scan) + [n for n in sorted(inputs, key=inputs.get) if n not in spec.scan]
        self.slot = {inputs[n]: k for k, n in enumerate(order)}     # input id -> its read's place in a poll
        self.rng = random.Random(spec.seed)
        self.pending: dict[int, tuple] = {}      # input id -> (clock time it settles, handle) of its last edge

    def debounce_us(self, inp: int) -> int:
        d = self.spec.debounce
        return d.get(self.names[inp], d.get("", 0))

    def at_pin(self, inp: int, t: int) -> int:
        """The unit time at which an edge driven at unit time t has crossed the wire (skew, jitter)."""
        late = self.spec.skew.get(self.names[inp], 0)
        if self.spec.jitter_us:
            late += self.rng.randint(0, self.spec.jitter_us)
        return t + late

    def taken(self, inp: int, settled: int) -> int:
        """The unit time at which the firmware takes an edge settled (debounced) at unit time settled."""
        s = self.spec
        if s.poll_us:
            phase = self.slot[inp] * SCAN_STEP_US
            k = -(-(settled - phase) // s.poll_us)          # the first read at or after settled
            return k * s.poll_us + phase
        return settled + s.irq_us


class OutputPath:
    """How late each watched line follows the event that drives it."""

    def __init__(self, spec: PathSpec):
        self.spec = spec

    def delay_us(self, name: str) -> int:
        d = self.spec.delay
        return d.get(name, d.get("", 0))
