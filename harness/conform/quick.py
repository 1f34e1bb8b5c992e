"""`unohil conform --quick`: the scenarios of a short run, chosen by the decisions they cover.

For each SPEC decision of the unit's kind that a scenario tagged `boundary` covers, the shortest such
scenario the unit can run: a decision's edge is where a unit gets it wrong (a tie at exactly t1 + W),
and a scenario that covers the decision away from its edge (or another decision's edge) proves
nothing there. For every other decision, the shortest scenario that covers it and that the unit can
run (else the shortest that covers it at all, to be reported as skipped), unless a scenario already
chosen covers it; decisions that few scenarios cover choose first. A scenario's length is its length in device time, which the SPEC fixes: it is
measured once on the reference emulator on the virtual clock (a fraction of a second for the whole
library), where it takes no real time. The run stays PARTIAL: what was left out is reported as not run.
"""
from __future__ import annotations

from typing import Callable

from unohil.protocol import catalogue as cat

from unohil.harness.scenarios.model import Scenario

EDGE = "boundary"       # the library's tag of a scenario that tests a rule at its edge, to the microsecond


def lengths_us(scenarios: list[Scenario], kind: str) -> list[int]:
    """Each scenario's length in device time, run on the virtual-clock emulator of its kind."""
    from unohil.harness.run.runner import Runner
    from unohil.harness.session.driver import Driver
    out = []
    with Driver.open(f"emu://{kind}?clock=virtual") as d:
        runner = Runner(d)
        for sc in scenarios:
            t0 = d.link.now_us()
            runner.run(sc)
            out.append(d.link.now_us() - t0)
    return out


def choose(scenarios: list[Scenario], kind: str, runnable: Callable[[Scenario], bool],
           lengths: list[int] | None = None) -> list[Scenario]:
    """The quick selection, in the library's order (see the module's docstring)."""
    lengths = lengths_us(scenarios, kind) if lengths is None else lengths
    by_length = sorted(range(len(scenarios)), key=lambda i: lengths[i])

    def candidates(did: str) -> list[int]:
        mine = [i for i in by_length if did in scenarios[i].covers]
        return [i for i in mine if runnable(scenarios[i])] or mine

    ids = [d.id for d in cat.UNITS[kind].decisions]
    chosen: set[int] = set()
    covered: set[str] = set()
    for did in ids:
        edges = [i for i in by_length if did in scenarios[i].covers and EDGE in scenarios[i].tags
                 and runnable(scenarios[i])]
        if edges:
            chosen.add(edges[0])
            covered.update(scenarios[edges[0]].covers)
    # then the decisions with the fewest candidates first: their choice is forced, and what it covers
    # besides needs nothing more; ties in the SPEC's order
    todo = sorted((did for did in ids if did not in covered), key=lambda did: len(candidates(did)))
    for did in todo:
        found = candidates(did)
        if did not in covered and found:
            chosen.add(found[0])
            # a scenario the unit cannot run (another form's) proves nothing of the other decisions it names
            covered.update(scenarios[found[0]].covers if runnable(scenarios[found[0]]) else [did])
    return [sc for i, sc in enumerate(scenarios) if i in chosen]
