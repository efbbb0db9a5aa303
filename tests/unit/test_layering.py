"""The layout is the pipeline: the import graph of ``offload`` is a DAG whose edges flow
downstream only (STYLE.md rule 1, DESIGN.md §3), and modules stay small (rule 14).

Every import counts: at module top, inside a function (a lazy import of a heavy backend is
still an edge) and through ``importlib``, which no module may use on an offload module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2] / "offload"

LAYERS: dict[str, set[str]] = {
    "offload.diagnostics": set(),
    "offload.options": set(),
    "offload.filecache": set(),
    "offload.ir": {"offload.diagnostics", "offload.options"},
    "offload.frontend": {"offload.ir"},
    "offload.analysis": {"offload.ir", "offload.frontend"},
    "offload.opt": {"offload.ir", "offload.analysis"},
    "offload.emit": {"offload.ir"},
    "offload.runtime": {"offload.ir"},
    "offload.backend": {"offload.ir"},
    "offload.cpu": {
        "offload.ir",
        "offload.emit",
        "offload.backend",
        "offload.opt",
        "offload.filecache",
    },
    "offload.ptx": {
        "offload.ir",
        "offload.analysis",
        "offload.opt",
        "offload.emit",
        "offload.runtime",
        "offload.backend",
        "offload.filecache",
    },
    "offload.lowering": {"offload.analysis", "offload.frontend"},
    "offload.delayed": {"offload.lowering"},
    "offload.acc": {
        "offload.delayed",
        "offload.backend",
        "offload.options",
        "offload.emit",
        "offload.opt",
        "offload.cpu",
        "offload.ptx",
    },
}
"""Package (or leaf module) -> what it may import besides itself, transitively closed below
(``_allowed``). Any other top-level module (``api``, ``driver``, ``targets``, ``explain``,
``config``, ``delayed``, ...) is the thin top that may import any stage, but not be
imported by one."""


TOP_PACKAGES = {"offload.stream", "offload.dask"}
"""Packages of the thin top (streaming, Dask): like the top-level modules they may import
any stage and no stage may import them (a stage's ``LAYERS`` entry does not list them)."""


def _allowed(package: str) -> set[str]:
    out: set[str] = set()
    todo = list(LAYERS.get(package, ()))
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(LAYERS.get(p, ()))
    return out


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


SOURCES = sorted(ROOT.rglob("*.py"))
MODULES = {_module_name(p): p for p in SOURCES}


def _resolve(name: str) -> str | None:
    """The offload module ``name`` designates (a package's ``__init__`` for a package, the
    module for ``from package import module``), or ``None`` outside offload."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, imported module, how) for every offload import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, "import") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:  # `from offload.ptx import passes` imports the module
                sub = f"{node.module}.{a.name}"
                found.append((node.lineno, sub if sub in MODULES else node.module, "from"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value, "importlib"))
    return [(line, m, how) for line, m, how in found if m == "offload" or m.startswith("offload.")]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for _, target, _ in _imports(path):
            resolved = _resolve(target)
            if resolved is not None and resolved != module:
                graph[module].add(resolved)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_import_graph_has_no_cycle_counting_lazy_imports():
    assert not _cycles(_graph()), f"import cycles: {_cycles(_graph())}"


def test_the_cycle_check_finds_a_cycle_through_a_function_local_import():
    graph = {"offload.a": {"offload.b"}, "offload.b": {"offload.c"}, "offload.c": {"offload.a"}}
    assert _cycles({**graph, "offload.d": set()}) == [["offload.a", "offload.b", "offload.c"]]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_flow_downstream_only(path: Path) -> None:
    module = _module_name(path)
    package = _package(module)
    bad = [f"{path.name}:{line} uses importlib on {t}" for line, t, how in _imports(path)
           if how == "importlib"]  # fmt: skip
    if package in LAYERS:
        allowed = _allowed(package) | {package}
        bad += [
            f"{path.name}:{line} imports {target}"
            for line, target, _ in _imports(path)
            if _package(_resolve(target) or target) not in allowed
        ]
    assert not bad, "upstream imports:\n" + "\n".join(bad)


def test_every_stage_and_leaf_is_declared():
    stages = {_package(m) for m in MODULES if m.count(".") >= 1}
    undeclared = {
        s
        for s in stages
        if (ROOT.parent / s.replace(".", "/")).is_dir() and s not in LAYERS.keys() | TOP_PACKAGES
    }
    assert not undeclared, f"packages without a layer: {sorted(undeclared)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 500, f"{path.relative_to(ROOT)} has {lines} lines; split it by responsibility"
