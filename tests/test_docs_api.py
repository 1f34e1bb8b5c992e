"""Every Python example in docs/api.md runs as written (against the emulator on its virtual clock)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example-{i}" for i in range(len(BLOCKS))])
def test_an_example_runs(code, capsys):
    exec(compile(code, f"{DOC}:example", "exec"), {"__name__": "docs_api_example"})
