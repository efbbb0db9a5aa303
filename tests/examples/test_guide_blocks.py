"""The user guide's code runs as written: every ```python block in docs/*.md preceded by
``<!-- test -->`` is saved as a module and executed on the CPU targets (offload compiles
element functions from their source file, so a block must live in one). Blocks check
their own results with ``assert``."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"<!-- test -->\n```python\n(.*?)```", re.S)
BLOCKS = {
    f"{page.stem}-{n}": code
    for page in sorted(DOCS.glob("*.md"))
    for n, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")), 1)
}


@pytest.mark.unit
def test_the_guide_has_tested_blocks() -> None:
    pages = {name.rsplit("-", 1)[0] for name in BLOCKS}
    assert {"getting-started", "language", "targets", "delayed", "explain-config"} <= pages


@pytest.mark.cpu
@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_guide_block_runs_as_written(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"guide_{name.replace('-', '_')}.py"
    path.write_text(BLOCKS[name], encoding="utf-8")
    runpy.run_path(str(path), run_name=f"guide_{name.replace('-', '_')}")
