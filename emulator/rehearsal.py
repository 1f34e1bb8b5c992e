"""Rehearsal: a served unit's code kept in the CPU's caches for its next due time.

A served unit sleeps in the serving loop until shortly before its next due time (serve.py). On
a virtual machine the sleeping vCPU's caches fill with its neighbours' data, and the
code that then runs the due timer runs cold. Measured on the 2-core VM this project
is benchmarked on: a Showdown's path from an injected press to its verdict took about
100 us after a 20 ms sleep and about 25 us right after the same code had run; served
over a pty, verdict processing measured p50 95-109 us without rehearsals, 24-35 us with.

So in the stretch before a due time, which the loop would otherwise spend spinning, a
throwaway copy of the unit replays the current game (device.py: a game begins at
boot, at RESET new_game, and at the first input edge that finds the unit idle again
after it played): RESET new_game, then the game's input edges and the stimuli
injected up to the due time, each as an INJECT frame through the copy's own byte
interface; then the copy's own virtual clock runs to just past the due time. The copy shares code and configuration with the served unit and
nothing else; its output is thrown away. It is not a twin (its random draws are its
own), so it warms the paths the game takes rather than predicting what the unit will
do. A game longer than INJECT_QUEUE edges is replayed from its start that far (a long
Flash game, say), which warms less of what comes next.
"""
from __future__ import annotations

from unohil.protocol import ENUMS, encode, msg
from unohil.protocol.catalogue import INJECT_QUEUE
from unohil.protocol.devtime import wrap

from .clock import VirtualClock
from .device import Device

NEW_GAME = ENUMS["reset_mode"].new_game


class Rehearsal:
    def __init__(self, unit: Device) -> None:
        self.unit = unit
        self.clock = VirtualClock()
        self.copy = Device(unit.kind, self.clock, seed=unit.seed, serial=unit.serial, rng=unit.rng_name,
                           without=tuple(unit.without), **unit.options)
        self.copy.start()
        self.copy.take_output()
        self._seq = 0
        self.runs = 0

    def run(self, due_clock_us: int) -> bool:
        """Replay the unit's game up to just past clock time due_clock_us (the serving clock's).
        False when there is nothing to replay (no input since the game began)."""
        unit = self.unit
        due = unit.from_clock(due_clock_us)
        steps = (unit.game_inputs + unit.stimuli_until(due))[:INJECT_QUEUE]
        if not steps:
            return False
        copy = self.copy
        self._command(msg.RESET(NEW_GAME))
        copy.config.update(unit.config)
        start = copy.now() + 1 - unit.game_start        # copy time = unit time + start
        for t, inp, action, value in steps:
            self._command(msg.INJECT(wrap(t + start), inp, action, value))
        self.clock.advance_to(copy.to_clock(due + start + 1))
        copy.take_output()
        self.runs += 1
        return True

    def _command(self, m) -> None:
        self._seq = (self._seq + 1) & 0xFFFF
        self.copy.receive(encode(m, self._seq, 0))
