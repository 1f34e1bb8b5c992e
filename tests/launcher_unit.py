"""A card launcher on the virtual clock through the wire, and the names its tests use (SPEC.md 9)."""
from __future__ import annotations

from unohil.protocol import ENUMS, PARAMS_BY_NAME, StreamDecoder, encode, msg
from unohil.protocol.devtime import wrap
from unohil.protocol.algorithms import Pcg32, fire_chance, fires, sample_burst
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
ST = ENUMS["launcher_state"]
SOUND = ENUMS["launcher_sound"]
LIGHT = ENUMS["launcher_light"]
MODE = ENUMS["light_mode"]
BUTTON, DOOR, LOAD, POWER = 0, 1, 2, 3
PRESS, RELEASE = 1, 0
MOTOR, INTERVAL = 150_000, 40_000
T0 = 100_000


class Unit:
    def __init__(self, seed: int = 1, card_capacity: int | None = None, **config):
        opts = {"card_capacity": card_capacity} if card_capacity is not None else {}
        self.link = VirtualLink("launcher", seed, **opts)
        self.p = Probe(self.link)
        self.p.wait_event("BOOT")
        todo = dict(config)
        while todo:                     # burst_min <= burst_mode <= burst_max at every step
            refused = {}
            for name, value in todo.items():
                r = self.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
                if r.name != "CONFIG_VALUE":
                    assert r.msg.error == ERR.bad_value, r
                    refused[name] = value
            assert len(refused) < len(todo), refused
            todo = refused

    def input(self, inp: int, action: int = PRESS, value: int = 0):
        return self.p.request(msg.INPUT(inp, action, value))

    def load(self, n: int) -> None:
        for m in (msg.INPUT(DOOR, PRESS, 0), msg.INPUT(LOAD, PRESS, n), msg.INPUT(DOOR, RELEASE, 0)):
            assert self.p.request(m).name == "ACK"

    def inject(self, at: int, inp: int, action: int = PRESS, value: int = 0):
        r = self.p.request(msg.INJECT(wrap(at), inp, action, value))
        assert r.name == "ACK", r

    def now(self) -> int:
        return self.link.device.now()

    def until(self, t: int) -> None:
        self.p.run_for(max(0, t - self.now()))

    def trace(self, t_from: int = 0, t_to: int | None = None, seen: bool = False) -> list:
        return [(f.time_us, f.name, tuple(f.msg[1:])) for f in self.p.events()
                if f.time_us >= t_from and (t_to is None or f.time_us <= t_to) and (seen or f.name != "INPUT_SEEN")]

    def seen(self, inp: int) -> list:
        return [f.msg for f in self.p.events("INPUT_SEEN") if f.msg.input == inp]

    def status(self):
        return self.p.request(msg.STATUS_GET()).msg


def press_run(u: Unit, n: int) -> list[tuple[int, int, int, int]]:
    """n presses by INPUT, each after the previous one's result: (streak, chance, planned, fired)."""
    link, dec = u.link, StreamDecoder()
    out = []
    for _ in range(n):
        seq = u.p.seq
        u.p.seq += 1
        link.write(encode(msg.INPUT(BUTTON, PRESS, 0), seq, 0))
        ding = None
        while True:
            data, _ = link.read(10_000_000)
            frames = [f.msg for f in dec.feed(data)]
            for m in frames:
                if m.__class__ is msg.LA_DING:
                    ding = m
                elif m.__class__ is msg.LA_RESULT:
                    out.append((ding.empty_streak, ding.chance_permille, m.planned, m.fired))
                    break
            else:
                continue
            break
    return out


def reference_draws(seed: int, loads: list[int], n: int, base=250, step=150, lo=1, mode=4, hi=12):
    rng = Pcg32(seed)
    inside, streak, out = loads[0], 0, []
    for _ in range(n):
        chance = fire_chance(base, step, streak)
        if inside == 0:
            out.append((streak, chance, 0, 0))
            continue
        if not fires(rng, chance):
            out.append((streak, chance, 0, 0))
            streak = min(255, streak + 1)
            continue
        b = sample_burst(rng, lo, mode, hi)
        c = min(b, inside)
        inside -= c
        out.append((streak, chance, b, c))
        streak = 0
    return out
