"""The frontend, the restriction analyses, the delayed arrays and ``offload.lowering`` import
offload modules at module top only (a function-local import or importlib would hide a
cycle), and the frontend knows nothing above it: not the delayed-array nodes (they lower
themselves through ``frontend.nodes``), not the analyses, not the driver."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

OFFLOAD = Path(__file__).resolve().parents[2] / "offload"
OWNED = sorted(
    [
        *(OFFLOAD / "frontend").glob("*.py"),
        *(OFFLOAD / "analysis").glob("*.py"),
        OFFLOAD / "delayed.py",
        OFFLOAD / "lowering.py",
    ]
)
ABOVE_THE_FRONTEND = ("offload.delayed", "offload.lowering", "offload.analysis", "offload.driver")


def _offload_imports(tree: ast.AST) -> list[tuple[ast.stmt, str]]:
    out: list[tuple[ast.stmt, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node, node.module if node.level == 0 else f"offload.{node.module}"))
    return [(n, m) for n, m in out if m == "offload" or m.startswith("offload.")]


@pytest.mark.parametrize("path", OWNED, ids=lambda p: str(p.relative_to(OFFLOAD)))
def test_offload_modules_are_imported_at_module_top_only(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(map(id, tree.body))
    local = [f"line {n.lineno}: {m}" for n, m in _offload_imports(tree) if id(n) not in top]
    assert not local, "imports inside functions or blocks:\n" + "\n".join(local)
    assert "importlib" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "path",
    sorted((OFFLOAD / "frontend").glob("*.py")),
    ids=lambda p: str(p.relative_to(OFFLOAD)),
)
def test_the_frontend_does_not_import_what_builds_on_it(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [
        f"line {n.lineno}: {m}"
        for n, m in _offload_imports(tree)
        if m.startswith(ABOVE_THE_FRONTEND)
    ]
    assert not bad, "\n".join(bad)
