"""Rules over configuration parameters: SPEC 4.7's cross-parameter rules (names chained by < and <=,
as Python chains them) and the durations the catalogue derives from the parameters."""
from __future__ import annotations

import operator
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
