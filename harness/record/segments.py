"""A recorded session cut into the pieces that become scenarios, from trace records. Pure: records in.

A record is what a trace line holds (harness/session/trace.py): frames in ("rx") and out ("tx") with
their type, fields and device time, and notes. A live recording makes the same records from the
frames it reads, so one reader serves `unohil record` and `unohil record --from-trace`.

A piece begins at a race the harness started (its "race" note), else at a RESET new_game the host
sent, a reboot, or an input edge that finds the unit, after a verdict, in a state where nothing of
the game before carries over (the catalogue's fresh_states: a Showdown with its tray empty), unless
the recording is one sequence the host means as a whole (a game's trace: `whole=True`). It keeps what a scenario
needs to say the same again: the configuration and seed in force, where the switches stood, every
input edge (INPUT_SEEN) and every event with its device time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from unohil.protocol import Frame, catalogue as cat

ACTIONS = cat.ENUM_NAMES["action"]
DISPOSITIONS = cat.ENUM_NAMES["disposition"]
ERRORS = cat.ENUM_NAMES["error"]


@dataclass
class Edge:
    t: int                  # device time, unwrapped
    input: str
    action: str             # press | release
    value: int
    disposition: str        # acted | reported | refused
    error: str | None       # the refusal's code
    seq: int = 0            # its INPUT_SEEN's event_seq: the unit's order of edges at one time


@dataclass
class Segment:
    kind: str
    start_us: int                       # device time the piece begins at
    config: dict[str, int]              # every parameter the host set so far (the rest: the unit's own)
    seed: int | None                    # rng_seed in force, when the host set it or read it back
    physical: dict[str, str]            # switch -> position at the start
    reference_rng: bool                 # the unit has SPEC 6's generator (a seed means the same draws anywhere)
    edges: list[Edge] = field(default_factory=list)
    events: list[Frame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)    # what a scenario cannot say, said as comments
    name: str | None = None             # the scenario the harness was running, and its race
    race: int | None = None
    source: str | None = None           # file:line of that scenario
    after_reset: bool = False           # begun at a RESET the host sent (no race notes): its switch edges set up
    config_steps: list[tuple[int, dict[str, int]]] = field(default_factory=list)   # set mid-piece: (time, values)
    end_us: int | None = None           # the latest device time heard when the host reset the unit after it
    end_seq: int | None = None          # and the latest event_seq
    epoch: int = 0                      # the unit's boots seen before it (its device time restarts at each)


def edge_of(f: Frame, unit: cat.UnitDef) -> Edge:
    """An INPUT_SEEN event as an input edge."""
    m = f.msg
    names = cat.ENUM_NAMES[f"{unit.kind}_input"]
    return Edge(f.dev_us, names.get(m.input, str(m.input)), ACTIONS.get(m.action, str(m.action)), m.value,
                DISPOSITIONS.get(m.disposition, str(m.disposition)),
                ERRORS.get(m.detail) if m.disposition == cat.ENUM_VALUES["disposition"]["refused"] else None,
                m.event_seq)


def frame_of(rec: dict) -> Frame:
    """A trace record's frame, rebuilt: its message, header time and device time."""
    m = cat.BY_NAME[rec["type"]].cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in rec["fields"].items()})
    f = Frame(cat.VERSION_BYTE, rec.get("seq", 0), rec.get("dev_raw", 0), m, host_us=rec.get("host_us"))
    f.dev_us = rec.get("dev_us")
    return f


class Segmenter:
    """Feed records in order; `segments` holds the pieces, the last one still growing."""

    def __init__(self, kind: str | None = None, config: dict[str, int] | None = None, seed: int | None = None,
                 state: str | None = None, whole: bool = False):
        self.kind = kind
        # no cut at a fresh state: what a unit carries from one showdown to the next (a tray count an even
        # split left behind) is then part of what the piece checks, where a cut would reset it away
        self.whole = whole
        self.config: dict[str, int] = dict(config or {})
        self.seed = seed
        self.caps = 0
        self.positions: dict[str, str] = {}
        self.state = state
        self.segments: list[Segment] = []
        self._raced = False                     # the harness notes its races: only those cut
        self._last_dev: int | None = None       # the latest device time heard
        self._last_seq: int | None = None       # the latest event_seq heard (u16, compared modulo)
        self._epoch = 0                         # boots seen: a BOOT, or a reply whose device time went back
        self._between = False                   # after a RESET, before the next race: the harness's setup
        self._boots = 0

    # ---- in ----

    def feed(self, rec: dict) -> None:
        direction = rec.get("dir")
        if direction == "console":         # the unit's debug text: nothing a replay sends or expects
            return
        if direction == "note":
            if rec.get("text") == "race":
                self._raced, self._between = True, False
                self._open(rec["start_dev_us"], name=rec.get("scenario"), race=rec.get("race"),
                           source=f"{rec.get('file')}:{rec.get('line')}")
            return
        if "type" not in rec:           # a frame that failed its checks
            if self.segments:
                self.segments[-1].notes.append(f"a frame from the unit failed its checks ({rec.get('error')})")
            return
        if direction == "tx":
            self._sent_frame(rec)
        elif direction == "rx":
            self._received(frame_of(rec))

    def _sent_frame(self, rec: dict) -> None:
        name, fields = rec["type"], rec["fields"]
        if name == "RESET" and fields.get("mode") == cat.ENUM_VALUES["reset_mode"]["new_game"]:
            if self._raced:
                if self.segments and not self._between:
                    self.segments[-1].end_us, self.segments[-1].end_seq = self._last_dev, self._last_seq
                self._between = True
            elif self.kind is not None:
                self._open(None).after_reset = True

    def _received(self, f: Frame) -> None:
        m = f.msg
        name = m.NAME
        if m.KIND != "event" and f.dev_us is not None and self._last_dev is not None and f.dev_us < self._last_dev:
            # a reply is never late: the unit's clock went back, it rebooted (its BOOT lost on the line)
            self._epoch += 1
            self._last_dev = self._last_seq = None
        if name == "BOOT":
            self._epoch += 1
            self._last_dev = self._last_seq = None
        if f.dev_us is not None:
            self._last_dev = f.dev_us if self._last_dev is None else max(self._last_dev, f.dev_us)
        if m.KIND == "event" and (self._last_seq is None or _later(m.event_seq, self._last_seq)):
            self._last_seq = m.event_seq
        if name == "IDENTITY":
            self.kind = cat.enum_name("unit_kind", m.kind)
            self.caps = m.caps
            return
        if name == "CONFIG_VALUE":        # the value a CONFIG_SET left or a CONFIG_GET read: the unit's own word
            param = cat.enum_name("param", m.param)
            if param == "rng_seed":
                self.seed = m.value     # setting it restarts the generator: the next piece's draws follow from it
            else:
                self.config[param] = m.value
            seg = self.segments[-1] if self.segments else None
            if seg is not None and not seg.edges:      # set up before the piece's first edge: its own
                seg.config = dict(self.config)
                if param == "rng_seed":
                    seg.seed, self.seed = m.value, None
            elif seg is not None and not self._between:     # mid-piece: a config step at the time it took effect
                if seg.config_steps and seg.config_steps[-1][0] == f.dev_us:
                    seg.config_steps[-1][1][param] = m.value
                else:
                    seg.config_steps.append((f.dev_us, {param: m.value}))
            return
        if m.KIND != "event" or self.kind is None:
            return
        if name == "BOOT":
            self._boots += 1
            self.positions = {}
            if self._boots > 1:
                if self.segments:
                    self.segments[-1].notes.append("the unit rebooted here")
                self._open(None)
            return
        unit = cat.UNITS[self.kind]
        seg = self.segments[-1] if self.segments else None
        if seg is not None and seg.epoch == self._epoch and seg.start_us >= 0 and f.dev_us is not None \
                and f.dev_us < seg.start_us:
            self._late(f, unit)
            return
        if name == "STATE":
            self.state = cat.enum_name(unit.enum_for("STATE", "state"), m.state)
        if self._between:
            if name == "INPUT_SEEN":
                self._position(f, unit)
            return
        if name == "INPUT_SEEN":
            self._edge(f, unit)
        if not self.segments:
            self._open(None)
        self.segments[-1].events.append(f)

    def _late(self, f: Frame, unit: cat.UnitDef) -> None:
        """An event from before the piece in progress began, recovered late (EVENT_RESEND on a faulty line):
        the race's it came in, when it came before the host reset the unit after that race; the set-up
        before this piece (a switch put where the race starts) when it came after the last one; anything
        older, a copy of what was heard long ago, is left out."""
        for seg in reversed([x for x in self.segments[:-1] if x.epoch == self._epoch]):
            # by device time, and at the reset's very time by event_seq (the next set-up's edges come after)
            if seg.end_us is not None and seg.start_us <= f.dev_us <= seg.end_us and not (
                    seg.end_seq is not None and _later(f.msg.event_seq, seg.end_seq)):
                seg.events.append(f)
                if f.msg.NAME == "INPUT_SEEN":
                    seg.edges.append(edge_of(f, unit))
                return
        before = self.segments[-2] if len(self.segments) > 1 and self.segments[-2].epoch == self._epoch else None
        after_it = before is None or before.end_us is None or f.dev_us > before.end_us or (
            f.dev_us == before.end_us and before.end_seq is not None and _later(f.msg.event_seq, before.end_seq))
        if f.msg.NAME == "INPUT_SEEN" and after_it:
            moved = self._position(f, unit)
            if moved:
                self.segments[-1].physical[edge_of(f, unit).input] = moved

    def _edge(self, f: Frame, unit: cat.UnitDef) -> None:
        edge = edge_of(f, unit)
        seg = self.segments[-1] if self.segments else None
        if seg is None or (not self._raced and not self.whole and self.state in unit.fresh_states
                           and edge.disposition == "acted" and any(e.msg.NAME == unit.verdict for e in seg.events)):
            seg = self._open(f.dev_us)
        moved = self._position(f, unit)
        if moved and seg.after_reset and not any(e.input not in unit.switches for e in seg.edges):
            seg.physical[edge.input] = moved        # the host's set-up after its RESET: where the piece starts
            return
        seg.edges.append(edge)

    def _position(self, f: Frame, unit: cat.UnitDef) -> str | None:
        """Where a switch edge put its switch (None: not a switch, or refused)."""
        m = f.msg
        if m.disposition == cat.ENUM_VALUES["disposition"]["refused"]:
            return None
        for name, positions in unit.switches.items():
            if unit.inputs[name] != m.input:
                continue
            for position, (action, value) in positions.items():
                if cat.ENUM_VALUES["action"][action] == m.action and value == m.value:
                    self.positions[name] = position
                    return position
        return None

    # ---- pieces ----

    def _open(self, start_us: int | None, **about) -> Segment:
        unit = cat.UNITS[self.kind]
        # A seed says what a piece draws only if the generator restarted from it just before: once a piece
        # has drawn, the next one starts wherever the generator got to.
        seed, self.seed = self.seed, None
        if self.segments and not self.segments[-1].edges:      # one opened for nothing (the RESET before a race)
            empty = self.segments.pop()
            seed = empty.seed if seed is None else seed
        seg = Segment(kind=self.kind, start_us=start_us if start_us is not None else -1, config=dict(self.config),
                      seed=seed, physical={**unit.boot_positions, **self.positions},
                      reference_rng=cat.has_capability(self.caps, "reference_rng"), epoch=self._epoch, **about)
        self.segments.append(seg)
        return seg


def segments_of(records, **known) -> list[Segment]:
    """The pieces of a whole recording that hold at least one input edge; of a race the harness ran again
    (a stimulus it got to the unit too late: nothing was judged), only the try that counted."""
    s = Segmenter(**known)
    for rec in records:
        s.feed(rec)
    out = [seg for seg in s.segments if seg.edges]
    out = [seg for seg, after in zip(out, out[1:] + [None])
           if seg.name is None or after is None or (after.name, after.race, after.source) != (seg.name, seg.race,
                                                                                                seg.source)]
    for seg in out:
        seg.events = in_unit_order(seg.events)
        base = seg.events[0].msg.event_seq if seg.events else 0
        seg.edges.sort(key=lambda e: (e.t, (e.seq - base + 0x8000) % 0x10000))
        if seg.start_us < 0:
            seg.start_us = seg.edges[0].t - 1000
    return out


def _later(seq: int, than: int) -> bool:
    """Whether event_seq seq comes after than (u16: modulo, within half the range)."""
    return 0 < (seq - than) & 0xFFFF < 0x8000


def in_unit_order(events: list[Frame]) -> list[Frame]:
    """Events as the unit sent them, not as they arrived: one recovered by EVENT_RESEND comes late, and
    a duplicate twice. Ordered by event_seq (u16, unwrapped from the first), device time for ties."""
    if not events:
        return events
    base, seen, out = events[0].msg.event_seq, set(), []
    for f in events:
        key = ((f.msg.event_seq - base + 0x8000) % 0x10000, f.dev_us if f.dev_us is not None else 0)
        if key[0] not in seen:
            seen.add(key[0])
            out.append((key, f))
    return [f for _, f in sorted(out, key=lambda x: x[0])]
