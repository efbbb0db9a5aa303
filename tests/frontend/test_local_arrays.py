"""Small local arrays (issue 17 item 3): ``np.zeros(K)``, ``np.empty``, ``np.ones``,
``np.full``, ``np.zeros((K, M))``, ``np.array([...])``, list displays and ``[v] * K``, read
and written by the element function and its helpers. Every program is checked against
CPython running it (value and dtype) in the interpreter, on ``compute_s`` and
``compute_p``, and compiled to PTX; the simulator runs the same programs
(``tests/sim/test_local_arrays_sim.py``)."""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.diagnostics import AllocationNotAllowed, TypeMismatch, WriteNotAllowed
from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.lowering import check_and_lower

S = np.linspace(80.0, 120.0, 12)
P = np.random.default_rng(7).normal(size=(12, 3))
STEPS = 24  # a captured int: the local array's size is frozen into the kernel


def binomial_call(i: int) -> Any:
    """Cox-Ross-Rubinstein European call (backward induction in one local array)."""
    s0, k, r, sig, t = S[i], 100.0, 0.05, 0.2, 1.0
    dt = t / STEPS
    u = math.exp(sig * math.sqrt(dt))
    d = 1.0 / u
    p = (math.exp(r * dt) - d) / (u - d)
    disc = math.exp(-r * dt)
    v = np.zeros(STEPS + 1)
    for j in range(STEPS + 1):
        v[j] = max(s0 * u ** (2 * j - STEPS) - k, 0.0)
    for n in range(STEPS - 1, -1, -1):
        for j in range(n + 1):
            v[j] = disc * (p * v[j + 1] + (1.0 - p) * v[j])
    return v[0]


def sorting_network(i: int) -> Any:
    """Bubble sort of four values in a list; min, max and the median pair."""
    t = [S[i], S[(i + 5) % 12], S[(i + 7) % 12], P[i, 0] * 100.0]
    for a in range(4):
        for b in range(3 - a):
            if t[b] > t[b + 1]:
                t[b], t[b + 1] = t[b + 1], t[b]
    return t[0], t[-1], (t[1] + t[2]) / 2, len(t)


def _dot(a: Any, b: Any) -> Any:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross_into(out: Any, a: Any, b: Any) -> None:
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


def _normalized(v: Any) -> Any:
    n = math.sqrt(_dot(v, v))
    return np.array([v[0] / n, v[1] / n, v[2] / n])


def ray_vectors(i: int) -> Any:
    """Ray-tracer style 3-vectors passed to helpers that read, write and return them."""
    a = np.array([P[i, 0], P[i, 1], P[i, 2]])
    b = np.array([1.0, P[(i + 1) % 12, 1], 0.5])
    c = np.empty(3)
    _cross_into(c, a, b)
    n = _normalized(c)
    return _dot(n, a), n[2], _dot(c, c)


def matrix_vector(i: int) -> Any:
    """A 3x3 matrix (np.array of rows) times a vector into np.zeros, with += and t[i, j]."""
    m = np.array([[2.0, 0.0, 1.0], [P[i, 0], 1.0, 0.0], [0.0, P[i, 1], 3.0]])
    x = np.array([1.0, 2.0, P[i, 2]])
    y = np.zeros(3)
    for r in range(3):
        for c in range(3):
            y[r] += m[r, c] * x[c]
    m[2, 2] -= 1
    return y[0], y[1], y[2], m[2, 2], m.shape[0] * m.shape[1], m.size, m.ndim


def constructors_and_dtypes(i: int) -> Any:
    """np.full / np.ones / dtype= / 2-D zeros / [v] * K / negative indices / int arrays."""
    f = np.full(4, np.float32(1.5))
    o = np.ones((2, 3), dtype=np.int32)
    z = np.zeros(5, "float32")
    w = [0] * 6
    h = np.empty(3, np.int64)
    h[0] = 2.9  # a float stored into an int array truncates, as NumPy's does
    h[-1] = -7
    w[-2] = i
    w[i % 6] += 3
    z[i % 5] = S[i]
    o[1, -1] = 9
    return f[3] * 2, o[1, 2] + o[0, 0], z[i % 5], w[4], w[0] + w[5], h[0], h[2], len(z)


def list_reads_are_python_numbers(i: int) -> Any:
    """A list of Python floats reads as Python floats: a float32 partner stays float32."""
    t = [0.5, 1.5, 2.5]
    x = np.float32(S[i]) * t[i % 3]
    u = np.array([1.0, 2.0])  # np.array's elements read as float64
    y = np.float32(S[i]) * u[i % 2]
    return x, y


def integer_histogram(i: int) -> Any:
    """Counts in a local int array indexed by data (dynamic indices, both signs)."""
    counts = np.zeros(4, dtype=np.int64)
    for k in range(12):
        b = int(S[k] - 80.0) // 10
        counts[b - 4] += 1  # b - 4 is negative: Python's wrap-around
    return counts[0], counts[1], counts[2], counts[3], counts[i % 4]


def size_through_a_local_name(i: int) -> Any:
    """``n = STEPS + 1`` then ``np.zeros(n)``: a name assigned once, of a constant value."""
    n = STEPS // 4 + 1
    t = np.zeros(n)
    for k in range(n):
        t[k] = S[(i + k) % 12]
    return t[n - 1] - t[0], len(t)


def loop_made_array(i: int) -> Any:
    """A local array made afresh in every iteration of a loop (filled each time)."""
    acc = 0.0
    for k in range(3):
        t = np.full(2, float(k))
        t[1] += S[i]
        acc += t[0] * t[1]
    return acc


PROGRAMS: list[Callable[[int], Any]] = [
    binomial_call,
    sorting_network,
    ray_vectors,
    matrix_vector,
    constructors_and_dtypes,
    list_reads_are_python_numbers,
    integer_histogram,
    size_through_a_local_name,
    loop_made_array,
]
IDS = [p.__name__ for p in PROGRAMS]
N = 12


def reference(fn: Callable[[int], Any]) -> list[np.ndarray]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        rows = [fn(i) for i in range(N)]
    rows = [r if isinstance(r, tuple) else (r,) for r in rows]
    return [np.array([row[k] for row in rows]) for k in range(len(rows[0]))]


def assert_matches(fn: Callable[[int], Any], got: Any) -> None:
    outs = got if isinstance(got, tuple) else (got,)
    want = reference(fn)
    assert len(outs) == len(want)
    for k, (g, w) in enumerate(zip(outs, want, strict=True)):
        assert g.dtype == w.dtype, (fn.__name__, k, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, err_msg=f"{fn.__name__}[{k}]")


@pytest.mark.unit
@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_program_matches_cpython_in_the_interpreter(fn: Any) -> None:
    low = check_and_lower(fn, 1)
    assert_matches(fn, tuple(compute(low.ir, (N,), fetch_captures(fn, low))))


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_program_matches_cpython_on_the_cpu(fn: Any, compute_x: Any) -> None:
    assert_matches(fn, compute_x((N,), fn))


@pytest.mark.cpu
def test_local_arrays_in_a_2d_parallel_kernel() -> None:
    def f(i: int, j: int) -> Any:
        t = np.zeros(3)
        t[j % 3] = P[i, j % 3]
        return t[0] + 2 * t[1] + 3 * t[2]

    want = np.array([[f(i, j) for j in range(7)] for i in range(12)])
    np.testing.assert_array_equal(ol.compute_p((12, 7), f), want)
    np.testing.assert_array_equal(ol.compute_s((12, 7), f), want)


@pytest.mark.ptx
@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_program_compiles_to_ptx(fn: Any) -> None:
    text = ol.explain(fn, (N,), target="gpu", file=io.StringIO())
    ptx = text[text.find("== PTX ==") :]
    assert ".entry" in ptx


@pytest.mark.ptx
def test_dynamically_indexed_local_array_lives_in_gpu_local_memory() -> None:
    text = ol.explain(binomial_call, (N,), target="gpu", file=io.StringIO())
    ptx = text[text.find("== PTX ==") :]
    assert ".local" in ptx and "st.local.f64" in ptx and "ld.local.f64" in ptx


@pytest.mark.cpu
def test_rebinding_the_captured_size_recompiles() -> None:
    global STEPS
    saved = STEPS
    try:
        first = ol.compute_s((N,), binomial_call)
        STEPS = 8
        second = ol.compute_s((N,), binomial_call)
        want = reference(binomial_call)[0]
    finally:
        STEPS = saved
    np.testing.assert_allclose(second, want, rtol=1e-12)
    assert not np.allclose(first, second)


# -- errors ------------------------------------------------------------------------------


def _error(fn: Callable[..., Any], cls: type[Exception]) -> str:
    with pytest.raises(cls) as info:
        check_and_lower(fn, 1)
    return str(info.value)


@pytest.mark.unit
def test_a_size_from_the_index_is_a_located_allocation_error() -> None:
    def f(i: int) -> Any:
        t = np.zeros(i + 1)
        return t[0]

    text = _error(f, AllocationNotAllowed)
    assert "not a compile-time constant" in text and "[allocation]" in text
    assert "np.zeros(i + 1)" in text or "i + 1" in text


@pytest.mark.unit
def test_a_size_read_from_an_array_is_reported_by_the_analysis() -> None:
    def f(i: int) -> Any:
        t = np.zeros(S.shape[0])
        return t[0]

    assert "not a compile-time constant" in _error(f, AllocationNotAllowed)


@pytest.mark.unit
def test_a_size_through_a_name_assigned_in_a_loop_is_not_constant() -> None:
    def f(i: int) -> Any:
        acc = 0.0
        for k in range(1, 3):
            n = k + 1
            t = np.zeros(n)
            acc += t[0]
        return acc

    assert "not a compile-time constant" in _error(f, AllocationNotAllowed)


@pytest.mark.unit
def test_a_list_repeated_by_the_index_is_a_located_allocation_error() -> None:
    def f(i: int) -> Any:
        t = [0.0] * i
        return t[0]

    assert "compile-time constant" in _error(f, AllocationNotAllowed)


@pytest.mark.unit
def test_a_local_array_beyond_the_limit_names_the_limit() -> None:
    def f(i: int) -> Any:
        t = np.zeros((64, 17))
        return t[0, 0]

    assert "1 to 1024 elements" in _error(f, AllocationNotAllowed)


@pytest.mark.unit
def test_returning_a_local_array_is_a_located_error() -> None:
    def f(i: int) -> Any:
        return np.zeros(3)

    text = _error(f, TypeMismatch)
    assert "local array" in text and "^" in text


@pytest.mark.unit
def test_writing_into_a_captured_array_through_a_local_name_stays_a_write_error() -> None:
    def f(i: int) -> Any:
        row = S
        row[0] = 1.0
        return row[1]

    assert "read-only" in _error(f, WriteNotAllowed)


@pytest.mark.unit
def test_a_second_name_for_an_array_made_in_a_loop_is_refused() -> None:
    def f(i: int) -> Any:
        acc = 0.0
        for k in range(3):
            cur = np.zeros(2)
            other = cur
            other[0] = k
            acc += cur[0]
        return acc

    assert "one storage" in _error(f, AllocationNotAllowed)


@pytest.mark.unit
def test_carrying_a_loop_made_array_to_the_next_iteration_is_refused() -> None:
    def f(i: int) -> Any:
        prev = np.zeros(2)
        for k in range(3):
            cur = np.zeros(2)
            cur[0] = prev[0] + k
            prev = cur
        return prev[0]

    assert "'prev' cannot be used here" in _error(f, TypeMismatch)


@pytest.mark.unit
def test_different_arrays_on_two_branches_are_refused_naming_local_arrays() -> None:
    def f(i: int) -> Any:
        if i > 2:
            t = np.zeros(2)
        else:
            t = np.ones(2)
        return t[0]

    assert "different local arrays on different paths" in _error(f, TypeMismatch)


@pytest.mark.unit
def test_an_index_of_the_wrong_rank_is_a_type_error() -> None:
    def f(i: int) -> Any:
        m = np.zeros((2, 2))
        return m[0]

    assert "t[i, j]" in _error(f, TypeMismatch)


@pytest.mark.unit
def test_an_out_of_bounds_index_raises_in_the_interpreter() -> None:
    def f(i: int) -> Any:
        t = np.zeros(3)
        return t[i]

    low = check_and_lower(f, 1)
    with pytest.raises(IndexError, match="local array"):
        compute(low.ir, (4,), fetch_captures(f, low))


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_an_out_of_bounds_local_index_is_reported_with_bounds_checks(compute_x: Any) -> None:
    def f(i: int) -> Any:
        t = np.zeros(3)
        t[i] = 1.0
        return t[0]

    ol.config.bounds_check = True
    try:
        with pytest.raises(IndexError, match=r"local array"):
            compute_x((5,), f)
        np.testing.assert_array_equal(compute_x((3,), f), [1.0, 0.0, 0.0])
    finally:
        ol.config.bounds_check = False


@pytest.mark.cpu
def test_cpu_kernel_keeps_constant_index_vectors_in_values_not_arrays() -> None:
    text = ol.explain(ray_vectors, (N,), target="cpu-seq", file=io.StringIO())
    kernel = text[text.find("def kernel") :]
    assert "np.empty" not in kernel  # scalarize: a, b, c and n became SSA values
    text = ol.explain(binomial_call, (N,), target="cpu-seq", file=io.StringIO())
    kernel = text[text.find("def kernel") :]
    assert kernel.find("np.empty") < kernel.find("for _r0")  # once per call, not per element


@pytest.mark.unit
def test_gpu_register_blocking_leaves_kernels_with_local_arrays_alone() -> None:
    from offload.ptx.passes.jam import JamIndex

    def with_local(i: int, j: int) -> Any:
        t = np.zeros(2)
        t[0] = P[i, 0] * j
        return t[0]

    def without(i: int, j: int) -> Any:
        return P[i, 0] * j

    jam = JamIndex(factors=(2, 2))
    assert jam.run(check_and_lower(without, 2).ir).blocking == (2, 2)
    assert jam.run(check_and_lower(with_local, 2).ir).blocking == ()
