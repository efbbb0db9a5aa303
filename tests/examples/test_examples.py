"""Every script in ``examples/`` runs as written: on ``compute_s`` and ``compute_p`` (cpu
lane) and on ``compute_g`` under the CUDA simulator (sim lane), at its small size. Each
example checks its own result against NumPy; here it is loaded with ``runpy`` (offload
compiles element functions from their source file, so the script must stay one) and its
``main`` is called in-process."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("[a-z]*.py"))


def run_example(path: Path, target: str) -> None:
    module = runpy.run_path(str(path), run_name=f"example_{path.stem}")
    module["main"](target, small=True)


@pytest.mark.unit
def test_there_are_at_least_eight_examples_each_with_main_and_docstring() -> None:
    assert len(EXAMPLES) >= 8
    for path in EXAMPLES:
        text = path.read_text(encoding="utf-8")
        assert text.startswith('"""'), path.name
        assert "def main(target" in text and 'if __name__ == "__main__":' in text, path.name


@pytest.mark.cpu
@pytest.mark.parametrize("target", ["s", "p"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_on_cpu(path: Path, target: str) -> None:
    run_example(path, target)


@pytest.mark.sim
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_under_the_simulator(path: Path) -> None:
    run_example(path, "g")
