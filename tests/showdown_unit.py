"""A Showdown unit on the virtual clock through the wire, and the names its tests use (SPEC.md 7)."""
from __future__ import annotations

from unohil.protocol import ENUMS, PARAMS_BY_NAME, msg
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
ST = ENUMS["showdown_state"]
R = ENUMS["showdown_reason"]
LIGHT = ENUMS["showdown_light"]
SOUND = ENUMS["showdown_sound"]
A, B, TIMER, LOAD = 0, 1, 2, 3
NONE = 255
PRESS, RELEASE = 1, 0
D = 3_000_000          # the countdown, fixed by setting min = max
W = 1000               # tie window (default)
FLIGHT = 250_000       # default
GO = 5_000_000         # go timeout (default)
T0 = 100_000           # TIMER press time in most tests
GREEN = T0 + D


class Unit:
    def __init__(self, seed: int = 1, cards: int = 2, countdown: int | None = D, options: dict | None = None,
                 **config):
        self.link = VirtualLink("showdown", seed, **(options or {}))
        self.p = Probe(self.link)
        self.p.wait_event("BOOT")
        if countdown is not None:
            config.setdefault("countdown_min_us", countdown)
            config.setdefault("countdown_max_us", countdown)
        for name, value in config.items():
            r = self.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
            assert r.name == "CONFIG_VALUE", r
        if cards:
            assert self.p.request(msg.INPUT(LOAD, PRESS, cards)).name == "ACK"
        self.mark = len(self.p.frames)

    def inject(self, at: int, inp: int, action: int = PRESS, value: int = 0):
        r = self.p.request(msg.INJECT(at, inp, action, value))
        assert r.name == "ACK", r
        return r

    def timer(self, at: int = T0) -> int:
        self.inject(at, TIMER)
        return at + D

    def verdict(self):
        return self.p.wait_event("SD_VERDICT", 100_000_000)

    def settle(self, us: int = 20_000_000) -> None:
        self.p.run_for(us)

    def events(self, since_mark: bool = True) -> list:
        frames = self.p.frames[self.mark:] if since_mark else self.p.frames
        return [f for f in frames if f.msg.KIND == "event"]

    def trace(self, t_from: int = 0) -> list:
        """(time, name, payload without event_seq) of events at or after t_from."""
        return [(f.time_us, f.name, tuple(f.msg[1:])) for f in self.events() if f.time_us >= t_from]

    def state(self) -> int:
        return self.p.request(msg.STATUS_GET()).msg.state


def seen(u: Unit, inp: int) -> list:
    return [f.msg for f in u.events() if f.name == "INPUT_SEEN" and f.msg.input == inp]
