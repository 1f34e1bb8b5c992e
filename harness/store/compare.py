"""What changed between two runs (two results documents: files, or runs read back from a store): verdicts
that changed, scenarios added and gone, figures whose distribution moved (stats.brunner_munzel).

A scenario is known by its unit kind and name (the n-th of a repeated name by its place). A figure is compared
per unit kind over the races of the scenarios both runs have (a scenario added or gone does not move it), and
per scenario where both runs have enough races; the device-side figures by default, as the host's depend on
the host's load as much as on the unit."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from unohil.harness.store.stats import MIN_SAMPLES, brunner_munzel

DEVICE_FIGURES = ("processing_us", "device_us", "inherent_us")
ALPHA = 0.01
# |P(A < B) - 1/2| at least this (Vargha and Delaney's "medium" effect, A = 0.64): with hundreds of races a
# shift too small to matter would be significant
EFFECT = 0.14
PASSED = ("pass", "skip")


@dataclass
class Moved:
    scope: str          # a unit kind, or "kind: scenario"
    figure: str
    n: tuple[int, int]
    median: tuple[float, float]
    p_hat: float        # P(A < B) + P(A = B) / 2
    p_value: float

    @property
    def slower(self) -> bool:
        return self.p_hat > 0.5

    def as_dict(self) -> dict:
        return {"scope": self.scope, "figure": self.figure, "n": list(self.n), "median": list(self.median),
                "p_hat": round(self.p_hat, 4), "p_value": self.p_value,
                "direction": "slower" if self.slower else "faster"}


@dataclass
class Comparison:
    changed: list[tuple[str, str, str]] = field(default_factory=list)       # scenario, status in A, in B
    added: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    moved: list[Moved] = field(default_factory=list)
    compared: int = 0           # scenarios in both

    @property
    def regressions(self) -> list[str]:
        """What a release gate stops on: a scenario that passed and does not, one that is gone, a figure slower."""
        out = [f"{name}: {a} -> {b}" for name, a, b in self.changed if a in PASSED and b not in PASSED]
        out += [f"{name}: gone" for name in self.gone]
        out += [f"{m.scope} {m.figure}: slower" for m in self.moved if m.slower]
        return out

    @property
    def any(self) -> bool:
        return bool(self.changed or self.added or self.gone or self.moved)

    def as_dict(self) -> dict:
        return {"compared": self.compared, "changed": [{"scenario": n, "a": a, "b": b} for n, a, b in self.changed],
                "added": self.added, "gone": self.gone, "moved": [m.as_dict() for m in self.moved],
                "regressions": self.regressions}


def keyed(doc: dict) -> dict[str, dict]:
    """A document's scenarios by 'kind: name' ('kind: name #2' for the second of a name)."""
    out: dict[str, dict] = {}
    for sc in doc.get("scenarios", []):
        key = base = f"{sc.get('unit', '')}: {sc['name']}"
        n = 1
        while key in out:
            n += 1
            key = f"{base} #{n}"
        out[key] = sc
    return out


def status(sc: dict) -> str:
    """A scenario's status as compare says it: flaky apart from a consistent fail."""
    return "flaky" if sc.get("flaky") else str(sc["status"])


def compare(a: dict, b: dict, figures=DEVICE_FIGURES, alpha: float = ALPHA) -> Comparison:
    sa, sb = keyed(a), keyed(b)
    both = [k for k in sa if k in sb]
    out = Comparison(added=[k for k in sb if k not in sa], gone=[k for k in sa if k not in sb], compared=len(both))
    out.changed = [(k, status(sa[k]), status(sb[k])) for k in both if status(sa[k]) != status(sb[k])]
    pooled: dict[tuple[str, str], tuple[list, list]] = {}
    for k in both:
        kind = sa[k].get("unit", "")
        for fig in figures:
            xa, xb = _samples(sa[k], fig), _samples(sb[k], fig)
            pool = pooled.setdefault((kind, fig), ([], []))
            pool[0].extend(xa)
            pool[1].extend(xb)
            moved = _moved(k, fig, xa, xb, alpha)
            if moved is not None:
                out.moved.append(moved)
    out.moved[:0] = [m for (kind, fig), (xa, xb) in pooled.items() if (m := _moved(kind, fig, xa, xb, alpha))]
    return out


def _samples(sc: dict, figure: str) -> list[int]:
    return [r["latency"][figure] for r in sc.get("results", [])
            if (r.get("latency") or {}).get(figure) is not None]


def _moved(scope: str, figure: str, xa: list, xb: list, alpha: float) -> Moved | None:
    if len(xa) < MIN_SAMPLES or len(xb) < MIN_SAMPLES:
        return None
    p_hat, p = brunner_munzel(xa, xb)
    if p >= alpha or abs(p_hat - 0.5) < EFFECT:
        return None
    return Moved(scope, figure, (len(xa), len(xb)), (statistics.median(xa), statistics.median(xb)), p_hat, p)
