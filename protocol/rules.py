"""Rules over configuration parameters: SPEC 4.7's cross-parameter rules (names chained by < and <=,
as Python chains them) and the durations the catalogue derives from the parameters."""
from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from . import expr

_COMPARISONS = {"<": operator.lt, "<=": operator.le}


@dataclass(frozen=True)
class CrossRule:
    text: str                    # as written in the catalogue
    params: tuple[str, ...]      # the parameters it names, in order

    @classmethod
    def parse(cls, text: str) -> "CrossRule":
        words = text.split()
        if len(words) < 3 or len(words) % 2 == 0 or any(w not in _COMPARISONS for w in words[1::2]) \
                or any(w in _COMPARISONS for w in words[0::2]):
            raise ValueError(f"{text!r} is not NAME < NAME or NAME <= NAME, chained")
        return cls(text, tuple(words[0::2]))

    def holds(self, values: Mapping[str, int]) -> bool:
        ops = self.text.split()[1::2]
        return all(_COMPARISONS[op](values[a], values[b]) for op, a, b in zip(ops, self.params, self.params[1:]))


@dataclass(frozen=True)
class ParamBound:
    """A duration the catalogue writes as an expression over parameter names (protocol/expr.py), e.g.
    'motor_us + (burst_max - 1) * card_interval_us': its value for a unit configured so."""
    text: str                    # as written in the catalogue

    @cached_property
    def _tree(self):
        return expr.parse(self.text)

    @property
    def params(self) -> frozenset[str]:
        return frozenset(expr.names(self._tree))

    def us(self, values: Mapping[str, int]) -> int:
        return int(expr.evaluate(self._tree, values))


_FILTER = re.compile(r"\s*([A-Z][A-Z0-9_]*)\s*(?:\((.*)\))?\s*\Z")


def parse_filter(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """'INPUT_SEEN(input=buzzer, action=press)' -> ('INPUT_SEEN', (('input', 'buzzer'), ('action', 'press'))):
    an event, and the field values (names or integers, as written) it must hold."""
    m = _FILTER.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not EVENT or EVENT(field=value, ...)")
    pairs = []
    for part in filter(str.strip, (m.group(2) or "").split(",")):
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise ValueError(f"{text!r}: {part.strip()!r} is not field=value")
        pairs.append((name.strip(), value.strip()))
    return m.group(1), tuple(pairs)


@dataclass(frozen=True)
class EventFilter:
    event: str
    fields: tuple[tuple[str, int], ...] = ()     # field, the value it must hold

    def matches(self, msg) -> bool:
        return msg.NAME == self.event and all(getattr(msg, f) == v for f, v in self.fields)


@dataclass(frozen=True)
class TimerRule:
    """When one of a unit's timer events is due at the earliest (PR-1): the latest of each `after` event
    before it, the latest of those, plus `delay` (over the parameters and those events' fields), plus the
    time the timer stood frozen since (a `frozen_by` event's field non-zero freezes it, zero runs it)."""
    event: str
    after: tuple[EventFilter, ...]
    delay: ParamBound
    frozen_by: tuple[tuple[str, str], ...] = ()   # (event, field)
    when: str | None = None                       # a field of the event that is non-zero when a timer's
                                                  # firing is the event (FL_SLEEP.asleep); None: every one is

    # What a judge reads of the rule for every race, derived once from the catalogue's text
    @cached_property
    def events(self) -> frozenset[str]:
        """The events that can arm, freeze or fire the timer: the only ones its check reads."""
        return frozenset({p.event for p in self.after} | {event for event, _ in self.frozen_by} | {self.event})

    @cached_property
    def delay_names(self) -> frozenset[str]:
        """The names the delay reads: parameters, and fields of the events that armed or fired the timer."""
        return self.delay.params
