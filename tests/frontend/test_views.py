"""Rows, views and chained indexing (issue 17 item 1): ``a[i][j]``, ``row = a[i]``,
``a[i, 2:5]``, ``a[:, j]``, negative steps and Python's slice clipping — an index map over
the captured array, never a copy — indexed, measured, passed to helpers and composed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.diagnostics import TypeMismatch, WriteNotAllowed
from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.ir.ops import Opcode
from offload.lowering import check_and_lower
from tests.frontend.views_support import TARGETS, check, reference

A = np.arange(30.0).reshape(5, 6) * 1.5 - 7.0
B = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 5
PTS = np.random.default_rng(0).random((7, 2))
CENTRES = np.random.default_rng(1).random((3, 2)).astype(np.float32)


def chained(i: int, j: int) -> Any:
    return A[i][j] - A[i, j]


def row_of_a(i: int, j: int) -> Any:
    row = A[i]
    return row[j] + row[-1] + len(row)


def column(i: int, j: int) -> Any:
    col = A[:, j]
    return col[i] * 2.0 + col.shape[0] + col[-i - 1]


def row_slices(i: int, j: int) -> Any:
    part = A[i, 2:5]
    back = A[i, ::-1]
    odd = A[i, 1::2]
    return part[j % 3] + back[j] * 10.0 + odd[j // 2] * 100.0 + part.size + back.ndim


def index_dependent_bounds(i: int, j: int) -> Any:
    v = A[i, j - 3 : i + 9 : (i % 3) + 1]
    return len(v) * 1000.0 + (v[0] if len(v) > 0 else -1.0)


def negative_dynamic_step(i: int, j: int) -> Any:
    v = A[i, j : -7 : -(i % 2) - 1]
    return len(v) * 1000.0 + (v[-1] if len(v) > 0 else -1.0)


def views_of_views(i: int, j: int) -> Any:
    v = A[::-1][1:, ::2][i % 4]
    w = A[:, 1:][::2, j % 5][::-1]
    return v[-1] + v.shape[0] * 10.0 + w[0] + len(w) * 100.0


def three_dims(i: int, j: int) -> Any:
    plane = B[i % 2]
    line = plane[:, j % 4]
    return plane[1][j % 4] + line[-1] * 3 + plane.shape[0] * 100 + B[1, ::-1, 1:][i % 3][0]


def _dist(p: Any, q: Any) -> Any:
    return ((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) ** 0.5


def helper_takes_rows(i: int, j: int) -> Any:
    return _dist(PTS[i], CENTRES[j % 3])


def _second(v: Any) -> Any:
    return v[1]


def helper_takes_view_of_view(i: int, j: int) -> Any:
    return _second(A[i, ::-1][1:])


CASES = [
    (chained, (5, 6)),
    (row_of_a, (5, 6)),
    (column, (5, 6)),
    (row_slices, (5, 6)),
    (index_dependent_bounds, (5, 6)),
    (negative_dynamic_step, (5, 6)),
    (views_of_views, (5, 6)),
    (three_dims, (3, 4)),
    (helper_takes_rows, (7, 5)),
    (helper_takes_view_of_view, (5, 2)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("fn", "shape"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_view_reads_match_numpy(target: str, fn: Any, shape: tuple[int, ...]) -> None:
    check(target, fn, shape)


@pytest.mark.unit
def test_chained_index_lowers_to_the_same_single_load() -> None:
    ir = check_and_lower(chained, 2).ir
    loads = [op for op in ir.ops() if op.opcode is Opcode.LOAD]
    assert len(loads) == 2 and all(len(op.operands) == 3 for op in loads)


@pytest.mark.unit
def test_a_view_is_never_copied_only_loaded() -> None:
    ir = check_and_lower(views_of_views, 2).ir
    assert {op.opcode for op in ir.ops()} <= {
        Opcode.CONST, Opcode.LOAD, Opcode.SHAPE, Opcode.ADD, Opcode.SUB, Opcode.MUL,
        Opcode.FLOORDIV, Opcode.FLOORMOD, Opcode.MIN, Opcode.MAX, Opcode.SELECT, Opcode.LT,
        Opcode.GT, Opcode.CAST, Opcode.NEG,
    }  # fmt: skip


V = np.arange(11.0) - 3.0
SLICE_BOUND = st.one_of(st.none(), st.integers(-15, 15))


def _probe(v: Any, k: int) -> Any:
    return v[k % len(v)] * 100.0 + len(v) if len(v) > 0 else -1.0


def _sliced(base: Any, lo: Any, hi: Any, step: Any) -> Any:
    """An element function slicing ``base`` with run-time (captured) bounds; an omitted
    bound is omitted in the source too."""
    x, y, z = (0 if b is None else b for b in (lo, hi, step))
    fns = {
        (False, False, False): lambda k: _probe(base[x:y:z], k),
        (False, False, True): lambda k: _probe(base[x:y], k),
        (False, True, False): lambda k: _probe(base[x::z], k),
        (False, True, True): lambda k: _probe(base[x:], k),
        (True, False, False): lambda k: _probe(base[:y:z], k),
        (True, False, True): lambda k: _probe(base[:y], k),
        (True, True, False): lambda k: _probe(base[::z], k),
        (True, True, True): lambda k: _probe(base[:], k),
    }
    return fns[(lo is None, hi is None, step is None)]


@pytest.mark.unit
@settings(max_examples=50, deadline=None)
@given(
    lo=SLICE_BOUND,
    hi=SLICE_BOUND,
    step=st.one_of(st.none(), st.integers(-4, 4).filter(bool)),
    n=st.integers(0, 11),
)
def test_random_slices_follow_python_clipping(lo: Any, hi: Any, step: Any, n: int) -> None:
    """Run-time bounds and steps (captured ints) over a vector: the view's length and its
    elements match NumPy's slice, negative steps and out-of-range bounds included."""
    base = V[:n].copy()
    f = _sliced(base, lo, hi, step)
    want = [_probe(base[lo:hi:step], k) for k in range(4)]
    np.testing.assert_array_equal(_interp(f, (4,)), want)


@pytest.mark.unit
def test_slices_with_constant_bounds_fold_to_constants() -> None:
    def f(k: int) -> Any:
        return len(V[2:-3:2]) + len(V[::-3]) + len(V[20:1:-4])

    assert _interp(f, (1,))[0] == len(V[2:-3:2]) + len(V[::-3]) + len(V[20:1:-4])


def _interp(fn: Any, shape: tuple[int, ...]) -> np.ndarray:
    lowered = check_and_lower(fn, len(shape))
    (out,) = compute(lowered.ir, shape, fetch_captures(fn, lowered))
    return out


def write_through_view(i: int) -> Any:
    row = A[i]
    row[0] = 1.0
    return row[0]


def write_through_slice(i: int) -> Any:
    A[i, 1:3][0] = 2.0
    return 0.0


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fn", "where"), [(write_through_view, "row[0]"), (write_through_slice, "A[i, 1:3][0]")]
)
def test_writing_through_a_view_is_a_located_write_error(fn: Any, where: str) -> None:
    with pytest.raises(WriteNotAllowed) as err:
        check_and_lower(fn, 1)
    text = str(err.value)
    assert "test_views.py" in text and where in text and "^" in text
    assert "through a view of captured 'A'" in text


def too_many_indices(i: int) -> Any:
    return A[i][1, 2]


def zero_step(i: int) -> Any:
    return A[i, ::0][0]


def returns_a_view(i: int) -> Any:
    return A[i]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (too_many_indices, "too many indices"),
        (zero_step, "slice step cannot be zero"),
        (returns_a_view, "cannot return a view"),
    ],
)
def test_misused_views_are_located_type_errors(fn: Any, message: str) -> None:
    with pytest.raises(TypeMismatch, match=message) as err:
        check_and_lower(fn, 1)
    assert "test_views.py" in str(err.value)


@pytest.mark.unit
def test_reference_helper_sees_numpy_views() -> None:
    assert reference(row_of_a, (1, 1))[0, 0] == A[0, 0] + A[0, -1] + 6


def _chained_only(i: int, j: int) -> Any:
    return A[i][j]


def _indexed_only(i: int, j: int) -> Any:
    return A[i, j]


def _row_then_index(i: int, j: int) -> Any:
    row = A[i]
    return row[j]


@pytest.mark.unit
@pytest.mark.parametrize("fn", [_chained_only, _row_then_index])
def test_chained_index_prints_the_same_ir_as_a_tuple_index(fn: Any) -> None:
    """Golden: ``a[i][j]`` and ``row = a[i]; row[j]`` are ``a[i, j]``, op for op."""
    from offload.ir.printer import print_function
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions

    def text(f: Any) -> list[str]:
        ir = run_pipeline(check_and_lower(f, 2).ir, CompileOptions(), pipeline="dce")
        return print_function(ir).splitlines()[1:]  # not the function's name

    assert text(fn) == text(_indexed_only)


@pytest.mark.unit
def test_a_zero_step_known_only_at_run_time_gives_an_empty_view() -> None:
    f = _sliced(V, 1, 8, 0)  # Python raises ValueError; documented: empty
    np.testing.assert_array_equal(_interp(f, (2,)), [-1.0, -1.0])
