"""The layout is the pipeline: imports flow downstream only (STYLE.md rule 1), and modules
stay small (rule 14)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2] / "offload"
LEAVES = {"offload.diagnostics", "offload.options", "offload.delayed"}
# package -> the offload packages/modules it may import (besides itself and the leaves)
ALLOWED: dict[str, set[str]] = {
    "offload.ir": set(),
    "offload.frontend": {"offload.ir"},
    "offload.analysis": {"offload.ir", "offload.frontend"},
    "offload.opt": {"offload.ir", "offload.analysis"},
    "offload.emit": {"offload.ir"},
    "offload.runtime": {"offload.ir"},
    "offload.cpu": {"offload.ir", "offload.emit", "offload.backend", "offload.opt"},
    "offload.ptx": {
        "offload.ir",
        "offload.emit",
        "offload.runtime",
        "offload.backend",
        "offload.opt",
    },
}


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return [(line, m) for line, m in found if m == "offload" or m.startswith("offload.")]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


SOURCES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_flow_downstream_only(path: Path) -> None:
    module = _module_name(path)
    package = _package(module)
    if package not in ALLOWED and module not in LEAVES:
        return  # the thin top level (api, driver, config...) may import any stage
    allowed = set() if module in LEAVES else ALLOWED[package]
    bad = [
        f"{path.name}:{line} imports {target}"
        for line, target in _imports(path)
        if _package(target) not in allowed | {package}
        and target not in LEAVES
        and not (module in LEAVES and target in LEAVES)
    ]
    assert not bad, "upstream imports:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 500, f"{path.relative_to(ROOT)} has {lines} lines; split it by responsibility"
