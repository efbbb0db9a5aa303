"""A stencil's element is split into an interior arm and a border arm
(``Stencil.lower_element``): where every offset its source reads (``Stencil.extent``)
lands inside the array, the reads apply no boundary rule; elsewhere each read does. A wrap
or mirror stencil of rank 3 (``stencil.NEAR_RANK``) is not split: every read applies the
rule, as one select where the axes are longer than the reach (a kernel-wide test), else
with Python's ``%``.

Checked on the kernel's IR (one branch on the interior test; the interior arm reads with
no ``min``/``max``/``floormod``/``select`` of an index; a function whose offsets its source
does not show -- a named constant -- keeps the rule
for those reads) and on values: arrays large enough to have an interior and too small to
have one, every boundary, against the interpreter, NumPy's ``pad`` and both CPU targets.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload import driver
from offload.acc.base import Context
from offload.acc.graph import compute as compute_graph
from offload.ir.core import Block, Branch, Function
from offload.options import CompileOptions
from tests.acc.fold_reference import InterpBackend, interpret, same_bits
from tests.scripts import import_path

pytestmark = pytest.mark.cpu

PAD = 4
BOUNDARIES = ["clamp", "mirror", "wrap", "constant"]
INDEX_RULES = {"min", "max", "floormod", "select"}


def lap(get: Any) -> Any:
    return get(-1, 0) + get(1, 0) + get(0, -1) + get(0, 1) - 4 * get(0, 0)


def lopsided(get: Any) -> Any:
    return get(-1, 2) * 2 + get(0, -3) - get(1, 0)


def ahead(get: Any) -> Any:
    return get(3) - get(1)


def named(get: Any) -> Any:
    k = 2
    return get(k) + get(-k)  # (offsets the source does not spell: no interior known)


def mixed(get: Any) -> Any:
    k = -2
    return 2 * get(k) + get(1)  # (the read at k is outside the extent the source spells)


def cube(get: Any) -> Any:
    return get(1, 0, 0) - get(0, -1, 2) + get(0, 0, 0)


def star(get: Any) -> Any:
    s = get(-1, 0, 0) + get(1, 0, 0) + get(0, -1, 0) + get(0, 1, 0) + get(0, 0, -1)
    return s + get(0, 0, 1) - 6 * get(0, 0, 0)


def side(get: Any) -> Any:
    return get(0, 1) + get(0, -1)


CASES = [
    (lap, [(1, 1), (2, 3), (3, 3), (37, 41)]),
    (lopsided, [(1, 4), (2, 5), (9, 11)]),
    (ahead, [(1,), (3,), (4,), (1000,)]),
    (named, [(2,), (5,), (64,)]),
    (mixed, [(1,), (3,), (50,)]),
    (cube, [(1, 2, 3), (3, 4, 5), (6, 7, 9)]),
    (star, [(1, 1, 1), (2, 3, 2), (5, 6, 7)]),
    (side, [(4, 1), (5, 2), (8, 9)]),
]


class _Recording(InterpBackend):
    """The interpreter, keeping the IR of every kernel it is given."""

    def __init__(self) -> None:
        self.fns: list[Function] = []

    def compile(self, fn: Any, options: Any) -> Any:
        self.fns.append(fn)
        return super().compile(fn, options)


def _kernel_ir(node: Any) -> Function:
    be = _Recording()
    ctx = Context(be, CompileOptions(verify=True), "deterministic", run=driver.run)
    compute_graph(ctx, node, None, None)
    return be.fns[-1]


def _reached(start: Block) -> list[Block]:
    seen: dict[int, Block] = {}
    todo = [start]
    while todo:
        b = todo.pop()
        if id(b) in seen:
            continue
        seen[id(b)] = b
        todo.extend(b.successors())
    return list(seen.values())


def _arms(fn: Function) -> tuple[list[Block], list[Block]] | None:
    """The blocks only the interior arm reaches and those only the border arm reaches
    (the first two-way branch of the entry's chain), or ``None`` without a branch."""
    branches = [b.terminator for b in fn.blocks if isinstance(b.terminator, Branch)]
    if not branches:
        return None
    first = branches[0]
    assert isinstance(first, Branch)
    inner, border = _reached(first.then_target), _reached(first.else_target)
    common = {id(b) for b in inner} & {id(b) for b in border}
    return [b for b in inner if id(b) not in common], [b for b in border if id(b) not in common]


def _ops(blocks: list[Block]) -> list[str]:
    return [op.opcode.name.lower() for b in blocks for op in b.ops]


def _padded(a: np.ndarray[Any, Any], boundary: str) -> np.ndarray[Any, Any]:
    if boundary == "constant":
        return np.pad(a, PAD, mode="constant", constant_values=7.0)
    mode = {"clamp": "edge", "mirror": "reflect", "wrap": "wrap"}[boundary]
    return np.pad(a, PAD, mode=mode)  # type: ignore[call-overload,no-any-return]


def _numpy(fn: Any, a: np.ndarray[Any, Any], boundary: str) -> Any:
    p = _padded(a, boundary)

    def get(*d: int) -> Any:
        return p[tuple(slice(PAD + k, PAD + k + n) for k, n in zip(d, a.shape, strict=True))]

    return fn(get)


def _boundary(name: str) -> Any:
    return ol.constant(7.0) if name == "constant" else name


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_the_interior_arm_reads_without_the_boundary_rule(boundary: str) -> None:
    fn = _kernel_ir(ol.stencil(lap, np.zeros((6, 7)), _boundary(boundary)))
    arms = _arms(fn)
    assert arms is not None
    inner, border = arms
    assert not INDEX_RULES & set(_ops(inner))
    assert _ops(inner).count("load") == _ops(border).count("load") == 5
    assert INDEX_RULES & set(_ops(border))  # (each border read applies the rule)


@pytest.mark.parametrize("boundary", ["wrap", "mirror"])
def test_wrap_and_mirror_read_with_one_select_where_the_axes_are_long(boundary: str) -> None:
    fn = _kernel_ir(ol.stencil(star, np.zeros((5, 6, 7)), boundary))
    arms = _arms(fn)
    assert arms is not None
    near, far = arms
    assert {"floormod", "rem", "abs"}.isdisjoint(_ops(near))  # (no division)
    assert _ops(near).count("select") == 6  # (one a read off the centre)
    assert _ops(near).count("load") == _ops(far).count("load") == 7
    assert {"floormod", "rem"} & set(_ops(far))  # (an axis shorter than the reach)


def test_offsets_the_source_does_not_spell_keep_the_rule() -> None:
    assert _arms(_kernel_ir(ol.stencil(named, np.zeros(8), "wrap"))) is None  # (no split)
    arms = _arms(_kernel_ir(ol.stencil(mixed, np.zeros(8), "clamp")))
    assert arms is not None
    inner_ops = _ops(arms[0])
    assert inner_ops.count("load") == 2 and inner_ops.count("max") == 1  # (the read at k)


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize(("fn", "shapes"), CASES, ids=[c[0].__name__ for c in CASES])
def test_split_stencils_equal_the_interpreter_numpy_and_both_cpu_targets(
    fn: Any, shapes: list[tuple[int, ...]], boundary: str
) -> None:
    rng = np.random.default_rng(len(shapes))
    for shape in shapes:
        a = rng.standard_normal(shape)
        node = ol.stencil(fn, a, _boundary(boundary))
        want = _numpy(fn, a, boundary)
        spec = interpret(node)
        assert same_bits(spec, want)
        assert same_bits(ol.compute_s(node), spec)
        assert same_bits(ol.compute_p(node), spec)


def test_a_lambda_stencil_splits_too() -> None:
    a = np.arange(40.0).reshape(5, 8)
    node = ol.stencil(lambda get: get(0, 1) - get(-1, 0), a, "mirror")
    assert _arms(_kernel_ir(node)) is not None
    assert same_bits(ol.compute_s(node), _numpy(lambda get: get(0, 1) - get(-1, 0), a, "mirror"))


_GENERATED = Path(tempfile.mkdtemp(prefix="offload-stencils-"))


def _generated(reads: list[tuple[int, ...]], weights: list[int]) -> Any:
    """A stencil function reading ``reads`` (offsets), each times its weight, written to
    a module file (offload compiles from source)."""
    terms = " + ".join(f"{w} * get({', '.join(map(str, d))})" for d, w in zip(reads, weights))
    text = f"def fn(get):\n    return {terms}\n"
    name = f"st_{abs(hash(text)):x}"
    path = _GENERATED / f"{name}.py"
    path.write_text(text)
    return import_path(path, name).fn


@settings(max_examples=20, deadline=None)
@given(
    data=st.data(),
    rank=st.integers(1, 3),
    boundary=st.sampled_from(BOUNDARIES),
    dtype=st.sampled_from(["int16", "float32", "float64"]),
)
def test_random_stencils_equal_numpy_pad_on_both_cpu_targets(
    data: st.DataObject, rank: int, boundary: str, dtype: str
) -> None:
    """Random offsets (up to 3 away, so a few elements of a small axis are all border
    and a large one has an interior), shapes from 1 to 12 an axis."""
    offset = st.tuples(*[st.integers(-3, 3)] * rank)
    reads = data.draw(st.lists(offset, min_size=1, max_size=5))
    weights = data.draw(st.lists(st.integers(-3, 3), min_size=len(reads), max_size=len(reads)))
    shape = data.draw(st.tuples(*[st.integers(1, 12 if rank < 3 else 7)] * rank))
    fn = _generated(reads, weights)
    a = (np.arange(int(np.prod(shape))) % 11 - 5).astype(dtype).reshape(shape)
    node = ol.stencil(fn, a, _boundary(boundary))
    spec = interpret(node)
    assert same_bits(ol.compute_s(node), spec)
    assert same_bits(ol.compute_p(node), spec)
    want = _numpy(fn, a, boundary)
    assert np.array_equal(np.asarray(spec, dtype=np.float64), np.asarray(want, dtype=np.float64))
