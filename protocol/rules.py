"""Cross-parameter rules of SPEC 4.7: parameter names chained by < and <=, as Python chains them."""
from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass

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
