"""The worked examples of docs/scenarios.md ("Writing Flash scenarios", "Writing launcher scenarios")
validate and pass, on the reference emulator and on one with another generator."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from unohil.harness import Driver
from unohil.harness.run.runner import Runner
from unohil.harness.scenarios.load import loads

DOC = Path(__file__).resolve().parent.parent / "docs" / "scenarios.md"


def worked_examples() -> list[str]:
    text = DOC.read_text()
    out = []
    for title in ("## Writing Flash scenarios", "## Writing launcher scenarios"):
        section = text[text.index(title):]
        out.append(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    return out


@pytest.mark.parametrize("rng", ["reference", "python"])
@pytest.mark.parametrize("example", worked_examples(), ids=["flash", "launcher"])
def test_a_worked_example_passes_on_any_generator(example, rng):
    (sc,) = loads(example, "docs/scenarios.md")
    with Driver.open(f"emu://{sc.unit}?clock=virtual&rng={rng}") as d:
        res = Runner(d).run(sc)
    assert res.status == "pass", [r.failures or r.error for r in res.races]
