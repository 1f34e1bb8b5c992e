"""The unit model API: how an emulated unit is written.

A unit model is the game logic of one unit kind and nothing else. The device core
(emulator/device.py) owns everything protocol: bytes, frames, commands, replies,
NAKs, sequence numbers, the event ring, injected stimuli, configuration, the clock
and the random generator. A model does no I/O and never looks at a real clock, so
the same model runs unchanged on the virtual clock (tests, exact) and the real one
(serving).

Writing a model
---------------
Put it in emulator/<kind>.py (kind as in the catalogue enum unit_kind), subclass
UnitModel, and end the module with ``MODEL = YourModel``; the core finds it by the
kind's name (device.model_class). Class attributes to declare:

    KIND          "flash"
    INPUTS        the valid input ids, e.g. protocol.ENUMS["flash_input"]
    STATES        the state enum, e.g. protocol.ENUMS["flash_state"]
    IDLE_STATES   states in which CONFIG_SET is allowed (else NAK wrong_state)
    OPTIONS       unit options a user may set when creating the unit, name ->
                  (default, min, max); card_capacity and players are reported in
                  IDENTITY when present; variant_options(KIND, on) gives the
                  kind's variant capabilities as options
    COMMANDS      commands only this kind has (the rig's RIG_WIRE, RIG_EDGE):
                  message class -> handler(core, frame, message, t) returning the
                  reply or an error code, like the core's own

What the catalogue says of the kind (messages.yaml `units.KIND`, or `rig`) the
class reads from it when it is defined, and a model does not write again:

    POWER_ON      the state a fresh model starts in (no event is emitted for it):
                  the kind's power_on_state
    CAPS          capability names for IDENTITY.caps: the kind's capabilities,
                  less reference_rng (the core sets that bit by the generator
                  the unit was built with)
    VARIANTS      the kind's variants: capabilities a unit option of the same
                  name turns off (0) or on (1)
    DRAWS         whether the kind has a random generator: reference_rng is
                  one of its capabilities (not the rig's)

The core creates the model with Model(core, **options) at every boot and every
RESET new_game, then calls power_on(t). Hooks a model implements:

    power_on(t)                        start in POWER_ON; emit nothing (the core
                                       emits BOOT, or STATE on RESET new_game)
    on_input(t, input, action, value)  one input edge at device time t; return
                                       ACTED, REPORTED or refused("wrong_state" |
                                       "bad_value" | ...). The core emits
                                       INPUT_SEEN for it first, then whatever the
                                       model emitted while handling it, and answers
                                       an INPUT command ACK or NAK accordingly.
    check_config(name, value, config)  a CONFIG_SET about to take effect: return an
                                       error name (e.g. "bad_value") to refuse, None
                                       to accept. The core has already checked the
                                       parameter's range and the kind's cross rules
                                       (catalogue units: cross_rules).
    cards                              property, reported in STATUS.cards
    caps()                             capability names for IDENTITY (default CAPS
                                       less the VARIANTS whose option is 0)
    shutdown(t)                        the game is being thrown away (RESET
                                       new_game): the default turns every lit light
                                       off with LIGHT events, in (light, target)
                                       order; a model emits what closes its game
                                       first (SPEC 4.9)

Helpers a model calls (all times are unwrapped device microseconds: integers that
do not wrap; put devtime.wrap(t) in u32 message fields):

    self.config[name]            current configuration (read it when needed: it can
                                 change while the unit is idle)
    self.rng                     the unit's one generator, seeded from rng_seed: SPEC 6.0's Pcg32, or
                                 another (random.Random) for a unit built with rng=python
    self.emit(MsgClass, **f)     emit an event now; event_seq is filled in
    self.at(t, fn, *args)        call fn(t, *args) at device time t; returns a handle
                                 with cancel(). Timers run after inputs due at the
                                 same t. t is the due time, also on the real clock
                                 where the call may come a little late: compute
                                 from t, not from now().
    self.now()                   device time now (the real clock's processing time)
    self.set_state(s)            change state; emits STATE(s, previous) on a change
    self.light(light, mode, target=0), self.sound(sound, arg=0)
                                 LIGHT / SOUND events; lights are tracked so that
                                 shutdown() can turn them off

A rule about time boundaries: because inputs run before timers at one instant, an
input at exactly a deadline reaches the model while the deadline's timer is still
pending. When the rule says the deadline comes first (half-open windows), the model
runs the deadline's work itself from on_input and cancels the timer (see
showdown.py, _catch_up).
"""
from __future__ import annotations

from typing import Callable

from unohil.protocol import ENUMS, msg
from unohil.protocol.catalogue import RIG, UNITS

DISPOSITION = ENUMS["disposition"]
ERROR = ENUMS["error"]

#: on_input results: (disposition, detail)
ACTED = (DISPOSITION.acted, 0)
REPORTED = (DISPOSITION.reported, 0)

#: the capability the core sets or clears by the generator a unit was built with (SPEC 6), not the model
GENERATOR_CAP = "reference_rng"


def catalogue_entry(kind: str):
    """The catalogue's entry of a device kind: its UnitDef, or the RigDef for the rig; None for a kind the
    catalogue lacks."""
    if kind in UNITS:
        return UNITS[kind]
    return RIG if RIG is not None and kind == RIG.kind else None


def variant_options(kind: str, on: bool) -> dict[str, tuple[int, int, int]]:
    """The kind's variant capabilities as unit options (default, min, max): on=True for a kind whose
    usual form has them (a unit option 0 builds the other form), False for one whose usual form lacks them."""
    return {cap: (int(on), 0, 1) for cap in UNITS[kind].variants}


def refused(error: str) -> tuple[int, int]:
    return (DISPOSITION.refused, ERROR[error])


class UnitModel:
    KIND = ""
    INPUTS: tuple[int, ...] | type = ()
    STATES: type | None = None
    IDLE_STATES: tuple[int, ...] = ()
    OPTIONS: dict[str, tuple[int, int, int]] = {}
    COMMANDS: dict = {}         # message class -> handler(core, frame, message, t) of commands of this kind only
    # read from the catalogue by __init_subclass__
    POWER_ON = 0
    CAPS: tuple[str, ...] = ()
    VARIANTS: tuple[str, ...] = ()
    DRAWS = True

    def __init_subclass__(cls, **kwargs):
        """The kind's power-on state, capabilities, variants and generator, from its catalogue entry; a
        subclass that sets one of them itself (a unit built wrong on purpose, in the tests) keeps its own."""
        super().__init_subclass__(**kwargs)
        entry = catalogue_entry(cls.KIND)
        if entry is None:
            return
        facts = {"POWER_ON": cls.STATES[entry.power_on_state] if cls.STATES is not None else 0,
                 "CAPS": tuple(c for c in entry.capabilities if c != GENERATOR_CAP),
                 "VARIANTS": getattr(entry, "variants", ()),
                 "DRAWS": GENERATOR_CAP in entry.capabilities}
        for name, value in facts.items():
            if name not in cls.__dict__:
                setattr(cls, name, value)

    def __init__(self, core, **options):
        self.core = core
        self.emit = core.emit       # emit(MsgClass, **fields): bound straight to the core, as it runs per event
        self.config = core.config
        self.rng = core.rng
        self.state = self.POWER_ON
        self.lights: dict[tuple[int, int], tuple[int, int]] = {}   # key -> (mode, target)
        for name, (default, _lo, _hi) in self.OPTIONS.items():
            setattr(self, name, options.get(name, default))

    # ---- hooks ----
    def power_on(self, t: int) -> None:
        pass

    def on_input(self, t: int, inp: int, action: int, value: int) -> tuple[int, int]:
        return REPORTED

    def check_config(self, name: str, value: int, config: dict) -> str | None:
        return None

    @property
    def cards(self) -> int:
        return 0

    def caps(self) -> tuple[str, ...]:
        return tuple(c for c in self.CAPS if c not in self.VARIANTS or getattr(self, c))

    def shutdown(self, t: int) -> None:
        # in light id order, then target order (SPEC 4.9): the same on every unit, whatever the order they lit in
        for (light, _), (mode, target) in sorted(self.lights.items()):
            if mode:
                self.light(light, 0, target)

    # ---- helpers ----
    def at(self, t: int, fn: Callable, *args):
        return self.core.call_at(t, fn, *args)

    def now(self) -> int:
        return self.core.now()

    def set_state(self, state: int) -> None:
        if state != self.state:
            previous, self.state = self.state, state
            self.emit(msg.STATE, state=state, previous=previous)

    def light(self, light: int, mode: int, target: int = 0) -> None:
        """target is part of a light's identity only for lights that have one per target
        (the Flash player buttons); a model with one lamp that points somewhere passes
        the same light id with different targets and overrides light_key."""
        self.lights[self.light_key(light, target)] = (mode, target)
        self.emit(msg.LIGHT, light=light, mode=mode, target=target)

    def light_key(self, light: int, target: int) -> tuple[int, int]:
        return (light, target)

    def light_mode(self, light: int, target: int = 0) -> int:
        return self.lights.get(self.light_key(light, target), (0, 0))[0]

    def sound(self, sound: int, arg: int = 0) -> None:
        self.emit(msg.SOUND, sound=sound, arg=arg)
