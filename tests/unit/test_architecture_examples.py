"""The worked examples of docs/ARCHITECTURE.md (add a pass, a target, an intrinsic) run as
written: each ``<!-- example: NAME -->`` block is saved as a module and executed (offload
compiles element functions from their source file, so the block must live in one)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
EXAMPLES = dict(
    re.findall(r"<!-- example: ([\w-]+) -->\n```python\n(.*?)```", DOC.read_text(), re.S)
)


def test_the_map_has_its_three_worked_examples():
    assert set(EXAMPLES) == {"add-a-pass", "add-a-target", "add-an-intrinsic"}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_worked_example_runs_as_written(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(EXAMPLES[name], encoding="utf-8")
    runpy.run_path(str(path), run_name=f"example_{name.replace('-', '_')}")
