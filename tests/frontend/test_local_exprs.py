"""NumPy arithmetic on whole local arrays (``offload/frontend/local_exprs.py``): the
3-vectors of a ray tracer, in-place updates, masks, a local matrix times a local vector,
lists beside arrays, loops over local arrays and over tuples of pairs. Every program is
checked against CPython running it (value and dtype) in the interpreter, on
``compute_s`` and ``compute_p``, and compiled to PTX; the simulator runs the same programs
(``tests/sim/test_local_exprs_sim.py``). Hypothesis checks random expressions against
NumPy."""

from __future__ import annotations

import io
import linecache
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload.diagnostics import TypeMismatch, UnsupportedSyntax
from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.lowering import check_and_lower
from tests.frontend.test_local_arrays import assert_matches, reference

CENTER = np.array([0.0, 0.0, -1.0])
P = np.random.default_rng(11).normal(size=(12, 3))
N = 12


def ray_sphere(i: int) -> Any:
    """'Ray Tracing in One Weekend''s hit_sphere and the surface normal, with 3-vectors."""
    origin = np.array([0.0, 0.0, 0.0])
    direction = np.array([i / N * 2.0 - 1.0, 0.25, -1.0])
    oc = origin - CENTER
    a = np.dot(direction, direction)
    b = 2.0 * np.dot(oc, direction)
    c = np.dot(oc, oc) - 0.25
    disc = b * b - 4 * a * c
    if disc < 0:
        return -1.0, 0.0
    t = (-b - np.sqrt(disc)) / (2.0 * a)
    hit = origin + t * direction
    normal = (hit - CENTER) / np.linalg.norm(hit - CENTER)
    return t, normal[2]


def computed_at_once(i: int) -> Any:
    """``u = v * 2`` is computed where it is written: a later write to ``v`` is not seen;
    ``w = v`` is the same array: an in-place update is."""
    v = np.array([1.0, 2.0, float(i)])
    u = v * 2
    w = v
    v[0] = 100.0
    v += 1.5
    v *= 2
    return u[0], w[0], v[2], u[2]


def float32_vectors(i: int) -> Any:
    """NEP 50: a float32 array with Python numbers stays float32; with a float64 array it
    is float64."""
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32) * np.float32(i + 1)
    u = v * 0.1 - 1
    x = v + P[i]
    v -= 0.5
    return u[1], x[0], v[2], np.sum(u)


def matrix_times_vector(i: int) -> Any:
    m = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, P[i, 0]], [0.5, 0.0, 2.0]])
    v = np.array([P[i, 1], 1.0, -2.0])
    r = m @ v
    s = np.dot(m, v)
    m2 = m * 2 + m
    return r[0] + r[1] + r[2], s[2], m2[1, 2]


def masks_and_ufuncs(i: int) -> Any:
    v = np.array([P[i, 0], -1.0, 2.5, float(i)])
    mask = v > 1.5
    return np.sum(mask), np.any(mask), np.sqrt(np.abs(-v))[1], np.maximum(v, 0.5)[1]


def lists_beside_arrays(i: int) -> Any:
    """A list with an array operand is an array of its type; ``sum`` of a list is
    Python's (a Python float: weak beside a float32)."""
    lst = [1.0, 2.0, float(i)]
    v = np.array([1.0, 1.0, 1.0], dtype=np.float32)
    r = v + lst
    return r[2], sum(lst) * np.float32(0.5), np.dot(lst, lst)


def integer_arrays(i: int) -> Any:
    iv = np.array([1, 2, i])
    iv += 2
    jv = iv * 3 // 2 - iv % 2
    return jv[0] + jv[1] + jv[2], (iv << 1)[2]


def loops_over_local_arrays(i: int) -> Any:
    """``for x in v`` reads ``v`` live, as Python iterates; pairs of a sorting network."""
    v = np.array([3.0, float(i), 1.0])
    t = 0.0
    for x in v:
        t += x
        v[2] = 10.0
    for a, b in ((0, 1), (1, 2), (0, 1)):
        lo, hi = min(v[a], v[b]), max(v[a], v[b])
        v[a], v[b] = lo, hi
    return t, v[0], v[1], v[2]


def longer_than_unrolled(i: int) -> Any:
    """20 elements: stored by a loop, not element by element."""
    v = np.zeros(20) + float(i)
    w = np.sqrt(v + 1.0) * 2
    w += v
    return np.sum(w), w[19]


def row_view_minus_local(i: int) -> Any:
    """A captured row (a view of a run-time length) with a local array."""
    c = np.array([0.5, -0.5, 1.0])
    d = P[i, :] - c
    return np.dot(d, d), d[1]


PROGRAMS: list[Callable[[int], Any]] = [
    ray_sphere,
    computed_at_once,
    float32_vectors,
    matrix_times_vector,
    masks_and_ufuncs,
    lists_beside_arrays,
    integer_arrays,
    loops_over_local_arrays,
    longer_than_unrolled,
    row_view_minus_local,
]
IDS = [p.__name__ for p in PROGRAMS]
__all__ = ["IDS", "PROGRAMS", "N", "assert_matches"]  # (the simulator's module runs them)


@pytest.mark.unit
@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_expression_matches_cpython_in_the_interpreter(fn: Any) -> None:
    low = check_and_lower(fn, 1)
    assert_matches(fn, tuple(compute(low.ir, (N,), fetch_captures(fn, low))))


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_expression_matches_cpython_on_the_cpu(fn: Any, compute_x: Any) -> None:
    assert_matches(fn, compute_x((N,), fn))


@pytest.mark.ptx
@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_expression_compiles_to_ptx(fn: Any) -> None:
    text = ol.explain(fn, (N,), target="gpu", file=io.StringIO())
    assert ".entry" in text[text.find("== PTX ==") :]


# -- what stays an error, where ----------------------------------------------------------


def _rejected(fn: Callable[[int], Any]) -> Any:
    with pytest.raises((TypeMismatch, UnsupportedSyntax)) as info:
        check_and_lower(fn, 1)
    return info.value


@pytest.mark.unit
def test_an_in_place_update_that_numpy_cannot_cast_is_a_located_error() -> None:
    def f(i: int) -> Any:
        v = np.zeros(3, np.int64)
        v += 0.5
        return v[0]

    err = _rejected(f)
    assert isinstance(err, TypeMismatch)
    assert "same_kind" in err.message and "float64" in err.message and "int64" in err.message
    span = err.diagnostics[0].span
    assert span is not None and span.line == f.__code__.co_firstlineno + 2


@pytest.mark.unit
def test_local_arrays_of_different_lengths_do_not_combine() -> None:
    def f(i: int) -> Any:
        return (np.zeros(3) + np.ones(4))[0]

    assert "lengths 3 and 4" in _rejected(f).message


@pytest.mark.unit
def test_lists_keep_pythons_operators() -> None:
    def concat(i: int) -> Any:
        t = [1.0, 2.0] + [3.0]
        return t[0]

    def matmul_in_place(i: int) -> Any:
        v = np.ones(2)
        v @= np.ones((2, 2))
        return v[0]

    _rejected(concat)  # list + list is concatenation, not NumPy's add
    assert "'@='" in _rejected(matmul_in_place).message


# -- random expressions against NumPy ----------------------------------------------------

_DTYPES = ["int32", "int64", "float32", "float64"]
_OPS = ["+", "-", "*", "/", "//", "max"]


@pytest.mark.unit
@settings(max_examples=60, deadline=None)
@given(
    dt=st.sampled_from(_DTYPES),
    dt2=st.sampled_from(_DTYPES),
    op=st.sampled_from(_OPS),
    size=st.integers(1, 20),
    scalar=st.sampled_from([2, 0.5, -3]),
)
def test_random_local_array_expressions_match_numpy_in_the_interpreter(
    dt: str, dt2: str, op: str, size: int, scalar: float
) -> None:
    # (the programs above run the same lowering on every target)
    expr = "np.maximum(a, b)" if op == "max" else f"a {op} b"
    src = (
        "def f(i):\n"
        f"    a = np.zeros({size}, np.{dt})\n"
        f"    for k in range({size}):\n"
        "        a[k] = k - 3 + i\n"
        f"    b = np.full({size}, i + 1, np.{dt2})\n"
        f"    c = ({expr}) * {scalar!r}\n"
        "    a[0] = 7\n"
        "    return c[0], c[-1], np.sum(c)\n"
    )
    name = f"<random-local-expression-{len(linecache.cache)}>"
    linecache.cache[name] = (len(src), None, src.splitlines(keepends=True), name)
    namespace: dict[str, Any] = {"np": np}
    exec(compile(src, name, "exec"), namespace)
    f = namespace["f"]
    with np.errstate(all="ignore"):
        want = reference(f)
        low = check_and_lower(f, 1)
        got = compute(low.ir, (N,), fetch_captures(f, low))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype, (src, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6 if "32" in dt + dt2 else 1e-12, err_msg=src)
