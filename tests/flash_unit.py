"""A Flash unit on the virtual clock through the wire, and the names its tests use (SPEC.md 8)."""
from __future__ import annotations

from unohil.protocol import ENUMS, PARAMS_BY_NAME, msg
from unohil.protocol.devtime import wrap
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.probe import Probe

ERR = ENUMS["error"]
DISP = ENUMS["disposition"]
SRC = ENUMS["input_source"]
ST = ENUMS["flash_state"]
SEL = ENUMS["flash_select_reason"]
PEN = ENUMS["flash_penalty_reason"]
VR = ENUMS["flash_buzzer_reason"]
SOUND = ENUMS["flash_sound"]
SPEED = ENUMS["flash_speed"]
LIGHT_PLAYER = 0
OFF, ON, FLASH = 0, 1, 2
PLAY, BUZZ, SWITCH, POWER = 8, 9, 10, 11
PRESS, RELEASE = 1, 0
T0 = 100_000            # the game starts here in most tests
SHORT, LONG = 4_000_000, 6_000_000
WINDOW = 5_000_000
TIE = 1000


class Unit:
    def __init__(self, seed: int = 1, players: int | None = None, **config):
        opts = {"players": players} if players is not None else {}
        self.link = VirtualLink("flash", seed, **opts)
        self.p = Probe(self.link)
        self.p.wait_event("BOOT")
        for name, value in config.items():
            r = self.p.request(msg.CONFIG_SET(PARAMS_BY_NAME[name].id, value))
            assert r.name == "CONFIG_VALUE", r

    def inject(self, at: int, inp: int, action: int = PRESS, value: int = 0):
        r = self.p.request(msg.INJECT(wrap(at), inp, action, value))
        assert r.name == "ACK", r
        return r

    def tap(self, at: int, inp: int) -> None:
        """Press and release 1 us later: PLAY/PAUSE and BUZZER held together would reset the unit."""
        self.inject(at, inp)
        self.inject(at + 1, inp, RELEASE)

    def now(self) -> int:
        return self.link.device.now()

    def until(self, t: int) -> None:
        """Run the unit up to device time t (inclusive of everything due at t)."""
        self.p.run_for(max(0, t - self.now()))

    def start(self, players=(0, 1, 2), at: int = T0, speed: int | None = None) -> int:
        """Register players just before at, set the speed, press PLAY/PAUSE at at; returns the
        first selected player."""
        for k, i in enumerate(players):
            self.inject(at - 1000 + k, i)
        if speed is not None:
            self.inject(at - 10, SWITCH, PRESS, speed)
        self.tap(at, PLAY)
        self.until(at)
        return self.selected().player

    def selected(self):
        return self.p.events("FL_SELECTED")[-1].msg

    def trace(self, t_from: int = 0, t_to: int | None = None, seen: bool = False) -> list:
        return [(f.time_us, f.name, tuple(f.msg[1:])) for f in self.p.events()
                if f.time_us >= t_from and (t_to is None or f.time_us <= t_to) and (seen or f.name != "INPUT_SEEN")]

    def state(self) -> int:
        return self.p.request(msg.STATUS_GET()).msg.state

    def seen(self, inp: int) -> list:
        return [f.msg for f in self.p.events("INPUT_SEEN") if f.msg.input == inp]

    def names(self, t_from: int = 0) -> list[str]:
        return [n for _, n, _ in self.trace(t_from)]


def others(u: Unit, registered, player) -> list[int]:
    return [p for p in registered if p != player]


def start_buzzer(u: Unit, players, at: int):
    """Start a game, press BUZZER at at; returns (buzzer player, opponents)."""
    first = u.start(players, speed=SPEED.four_seconds)
    u.tap(at, BUZZ)
    u.until(at)
    return first, others(u, players, first)
