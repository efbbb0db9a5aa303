"""Differential fuzzing of the collectives on compute_s and compute_p against NumPy and
plain Python loops (Hypothesis).

The references are written from the documented semantics (docs/collectives.md,
docs/collectives-scans.md), not from offload's code: a fold is ``acc = z; acc = f(acc, x)``
per row (its dtype what Python gives for that loop), a scan ``accumulate``, a stencil
``fn`` over slices of ``numpy.pad``, a permute ``np.add.at``/``np.maximum.at`` in source
order, a filter boolean indexing. Integers and bools are compared exactly (wrap-around
included: every grouping of an associative integer combine gives the same bits); floats
of a fold with a tolerance against a float64 NumPy reduction and bit for bit against a
Python fold in the order of the documented tree (``fold_reference.tree_fold``). Where the
docs promise it, compute_s and compute_p give the same bits: folds (the CPU tree is
shared), scans of rows below 2^20 elements, permutes below 2^17 sources, filters.

Every combine, element and stencil function is a module-level function of this file (a
fixed set: numba compiles each new function and each new dtype), so the kernels come from
the disk cache after the first run.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import tree_fold
from tests.acc.interp_cases import (
    add,
    bitor,
    matmul2,
    max_first_nan,
    same_bits,
    scan_nodes,
    scan_rows,
)

pytestmark = pytest.mark.cpu

DEEP = os.environ.get("OFFLOAD_FUZZ_EXAMPLES")
"""Unset: the same few examples on every run (derandomised: their kernels come from the
disk cache after the first run). Set (``OFFLOAD_FUZZ_EXAMPLES=50``): that many random
examples a test, a deeper hunt."""
FUZZ = settings(
    max_examples=int(DEEP or 6),
    derandomize=DEEP is None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TARGETS = (ol.compute_s, ol.compute_p)
IGNORE = ol.IGNORE


# -- the functions (module level: compiled once, then cached) ---------------------------


def mul(a: Any, b: Any) -> Any:
    return a * b


def amax(a: Any, b: Any) -> Any:
    return a if a > b else b


def amin(a: Any, b: Any) -> Any:
    return a if a < b else b


def pair(p: Any, q: Any) -> Any:
    """(+, |) on a (number, bool) pair."""
    return (p[0] + q[0], p[1] | q[1])


def positive(x: Any) -> Any:
    return x > 0


def itself(x: Any) -> Any:
    return x


def never(x: Any) -> Any:
    return x != x  # noqa: PLR0124


def first_below_second(kv: Any) -> Any:
    return kv[0] < kv[1]


def twice(v: Any) -> Any:
    return v * 2


def st1(get: Any) -> Any:
    return get(-5) + 2 * get(0) - get(7)


def st2(get: Any) -> Any:
    return get(-3, 4) * 3 - get(2, -5) + get(0, 0)


def st3(get: Any) -> Any:
    return get(-3, 0, 4) * 2 + get(1, -2, 5) - get(0, 6, -1)


def near1(get: Any) -> Any:
    k = 2  # a local constant: not in ``extent`` (the boundary rule in both arms)
    return get(-1) - 3 * get(k) + get(1) * get(-k)


def near2(get: Any) -> Any:
    return get(-1, 2) - get(1, -1) * 2 + get(0, 1)


def near3(get: Any) -> Any:
    k = 1
    return get(-1, 0, 2) + get(k, -2, 0) * 3 - get(0, 1, -k)


STENCILS = {"far": {1: st1, 2: st2, 3: st3}, "near": {1: near1, 2: near2, 3: near3}}
"""Offsets past the extents (axes of 1 to 6), and short reaches of 1 or 2 (the wrap and
mirror reads of one subtraction or reflection where the reach is below the extent)."""
REACH = 7
"""The largest offset the stencils read (numpy.pad's width)."""


# -- strategies and helpers --------------------------------------------------------------


def values(dtype: str, small: bool = False) -> st.SearchStrategy[Any]:
    """Elements of ``dtype``: small and extreme integers (sums wrap), floats with NaN,
    infinities and both zeros (``small``: finite values whose products stay finite)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind == "f":
        finite = st.floats(-4, 4, width=dt.itemsize * 8)
        if small:
            return finite
        return finite | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0])
    info = np.iinfo(dt)
    if small:
        return st.integers(max(info.min, -3), min(info.max, 3))
    return st.integers(max(info.min, -100), min(info.max, 100)) | st.sampled_from(
        [int(info.min), int(info.max)]
    )


def array(
    data: st.DataObject, dtype: str, shape: tuple[int, ...], small: bool = False
) -> np.ndarray[Any, Any]:
    n = math.prod(shape)
    items = data.draw(st.lists(values(dtype, small), min_size=n, max_size=n))
    return np.array(items, dtype=dtype).reshape(shape)


def big_array(
    data: st.DataObject, dtype: str, shape: tuple[int, ...], small: bool = False
) -> np.ndarray[Any, Any]:
    """A long array from a drawn seed (Hypothesis draws no million-element lists)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        out = rng.uniform(-4, 4, shape).astype(dt)
        if not small and out.size:
            flat = out.reshape(-1)
            flat[rng.integers(0, flat.size, 3)] = [np.nan, -0.0, np.inf]
        return out
    info = np.iinfo(dt)
    lo, hi = (max(info.min, -3), min(info.max, 3)) if small else (info.min, info.max)
    return rng.integers(lo, hi, shape, dtype=dt, endpoint=True)


def segments(data: st.DataObject, n: int) -> np.ndarray[Any, Any]:
    """Segment lengths summing to ``n``: empty segments, one segment, none at all."""
    if n == 0 and data.draw(st.booleans()):
        return np.zeros(0, np.int64)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))
    return np.diff(np.array([0, *cuts, n], np.int64))


def both(node: Any) -> Any:
    """``node`` on compute_s and compute_p, which must agree bit for bit."""
    got = ol.compute_s(node)
    par = ol.compute_p(node)
    assert same_bits(par, got), ("compute_p differs from compute_s", par, got)
    return got


def python_dtype(f: Any, z: Any, one: Any) -> np.dtype[Any]:
    """The dtype of ``acc = z; acc = f(acc, x); acc = f(acc, x)`` (NumPy 2 rules)."""
    with np.errstate(all="ignore"):
        return np.asarray(f(f(z, one), one)).dtype


def rows_of(a: Any) -> list[list[Any]]:
    """The innermost rows of ``a`` (a tuple: rows of tuples) as lists of NumPy scalars."""
    if isinstance(a, tuple):
        cols = [rows_of(c) for c in a]
        return [list(zip(*rs, strict=True)) for rs in zip(*cols, strict=True)]
    n, rows = a.shape[-1], math.prod(a.shape[:-1])
    return [list(r) for r in a.reshape(rows, n)]


def loop_fold(f: Any, z: Any, xs: list[Any]) -> Any:
    acc = z
    with np.errstate(all="ignore"):
        for x in xs:
            acc = f(acc, x)
    return acc


# -- folds -------------------------------------------------------------------------------

FOLDS: dict[str, tuple[Any, Any, str]] = {
    # combine, neutral element (a callable of the dtype: None is fold1), element dtype
    "add 0 bool": (add, lambda dt: 0, "bool"),
    "add 0 int8": (add, lambda dt: 0, "int8"),
    "add 0.0 int16": (add, lambda dt: 0.0, "int16"),
    "add 0 uint8": (add, lambda dt: 0, "uint8"),
    "mul 1 int32": (mul, lambda dt: 1, "int32"),
    "add 0 int64": (add, lambda dt: 0, "int64"),
    "add 0.0 float32": (add, lambda dt: 0.0, "float32"),
    "mul 1.0 float64": (mul, lambda dt: 1.0, "float64"),
    "max min int16": (amax, lambda dt: np.iinfo(dt).min, "int16"),
    "min fold1 uint8": (amin, None, "uint8"),
    "max_first_nan fold1 float32": (max_first_nan, None, "float32"),
    "max_first_nan -inf float64": (max_first_nan, lambda dt: -math.inf, "float64"),
}


def fold_expected(f: Any, z: Any, a: np.ndarray[Any, Any], out_shape: tuple[int, ...]) -> Any:
    """Each row folded by a Python loop, as an array of the dtype Python gives."""
    one = a.dtype.type(0)
    dt = python_dtype(f, a.dtype.type(1) if z is None else z, one)
    rows = [loop_fold(f, r[0], r[1:]) if z is None else loop_fold(f, z, r) for r in rows_of(a)]
    return np.array(rows, dtype=dt).reshape(out_shape)


@FUZZ
@given(
    data=st.data(),
    case=st.sampled_from(sorted(FOLDS)),
    outer=st.lists(st.integers(0, 3), max_size=2).map(tuple),
    inner=st.sampled_from([0, 1, 2, 3, 7, 64, 65, 100]),
    whole=st.booleans(),
)
def test_fold_and_fold_all_equal_a_python_loop(
    data: st.DataObject, case: str, outer: tuple[int, ...], inner: int, whole: bool
) -> None:
    f, zf, dtype = FOLDS[case]
    z = None if zf is None else zf(np.dtype(dtype))
    a = array(data, dtype, (*outer, inner), small=f is mul)
    if whole:  # fold_all: every element in row-major order
        if z is None:
            return
        got = both(ol.fold_all(f, z, a))
        want = fold_expected(f, z, a.reshape(1, -1), ())
    elif z is None and inner == 0:
        with pytest.raises(ValueError, match="empty axis"):
            ol.fold1(f, a)
        return
    else:
        got = both(ol.fold(f, z, a) if z is not None else ol.fold1(f, a))
        want = fold_expected(f, z, a, outer)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert same_bits(got, want), (got, want)


LONG: dict[str, tuple[Any, Any, tuple[str, ...]]] = {
    # combine, neutral element (None: fold1), component dtypes
    "add int8": (add, 0, ("int8",)),
    "add uint16 from 0.0": (add, 0.0, ("uint16",)),
    "mul int32": (mul, 1, ("int32",)),
    "max int64": (amax, np.int64(np.iinfo(np.int64).min), ("int64",)),
    "add float32": (add, 0.0, ("float32",)),
    "fold1 add float64": (add, None, ("float64",)),
    "fold1 max_first_nan float32": (max_first_nan, None, ("float32",)),
    "matmul2 int64": (matmul2, (1, 0, 0, 1), ("int64",) * 4),
    "pair float32 bool": (pair, (0.0, False), ("float32", "bool")),
}


@FUZZ
@given(
    data=st.data(),
    case=st.sampled_from(sorted(LONG)),
    rows=st.sampled_from([(), (3,), (2, 1)]),
    n=st.sampled_from([2 * 8192, 2 * 8192 + 1, 3 * 8192 - 1]),
)
def test_long_folds_take_the_cpu_tree_and_keep_to_it(
    data: st.DataObject, case: str, rows: tuple[int, ...], n: int
) -> None:
    """Few rows of at least 2 x 8192 elements: the CPU's reduction tree (256 partials at
    most, 4 accumulators a partial from a number ``z``). Integers equal NumPy; floats are
    close to a float64 sum and the bits of a Python fold in the tree's order."""
    f, z, dts = LONG[case]
    comps = tuple(big_array(data, dt, (*rows, n), small=f in (mul, matmul2)) for dt in dts)
    a = comps[0] if len(comps) == 1 else comps
    got = both(ol.fold1(f, a) if z is None else ol.fold(f, z, a))
    nrows = math.prod(rows)
    want = [
        tree_fold(f, z, r, nrows, wide=False) for r in rows_of(a if isinstance(a, tuple) else a)
    ]
    if isinstance(a, tuple):
        want_arrays = tuple(
            np.array([w[k] for w in want], dtype=got[k].dtype).reshape(rows)
            for k in range(len(dts))
        )
        assert same_bits(got, want_arrays)
        dts_py = [np.asarray(x).dtype for x in loop_fold(f, z, [tuple(c.flat[0] for c in a)])]
        assert [g.dtype for g in got] == dts_py
        if case.startswith("pair"):
            ref = a[0].astype(np.float64).sum(-1)
            assert np.allclose(got[0], ref, rtol=1e-4, atol=1e-2, equal_nan=True)
            assert same_bits(got[1], a[1].any(-1))
        return
    one = a.dtype.type(0)
    assert got.dtype == python_dtype(f, a.dtype.type(1) if z is None else z, one)
    assert same_bits(got, np.array(want, dtype=got.dtype).reshape(rows))
    if got.dtype.kind in "iub":  # exact under any grouping
        ref = {add: np.add, mul: np.multiply, amax: np.maximum}[f].reduce(
            a, axis=-1, dtype=got.dtype
        )
        assert same_bits(got, ref)
    elif f is add:
        with np.errstate(invalid="ignore"):
            ref64 = a.astype(np.float64).sum(-1)
        assert np.allclose(got, ref64, rtol=1e-4, atol=1e-2, equal_nan=True)
    else:  # max keeping the first NaN: a NaN row gives NaN, else the max
        nan_rows = np.isnan(a).any(-1)
        assert (np.isnan(got) == nan_rows).all()
        assert same_bits(got[~nan_rows], a.max(-1)[~nan_rows])


SEG_CASES: dict[str, tuple[Any, Any, tuple[str, ...]]] = {
    "add int8": (add, 0, ("int8",)),
    "add float64": (add, 0.0, ("float64",)),
    "max int32": (amax, np.int32(-(2**31)), ("int32",)),
    "pair float32 bool": (pair, (0.0, False), ("float32", "bool")),
    "matmul2 int16": (matmul2, (1, 0, 0, 1), ("int16",) * 4),
}


@FUZZ
@given(
    data=st.data(),
    case=st.sampled_from(sorted(SEG_CASES)),
    outer=st.lists(st.integers(0, 2), max_size=1).map(tuple),
    inner=st.sampled_from([0, 1, 5, 9, 40]),
)
def test_fold_seg_equals_python_loops_per_segment(
    data: st.DataObject, case: str, outer: tuple[int, ...], inner: int
) -> None:
    f, z, dts = SEG_CASES[case]
    small = f is matmul2
    comps = tuple(array(data, dt, (*outer, inner), small=small) for dt in dts)
    a = comps[0] if len(comps) == 1 else comps
    seg = segments(data, inner)
    got = both(ol.fold_seg(f, z, a, seg))
    starts = np.concatenate([[0], np.cumsum(seg)[:-1]]).astype(int) if len(seg) else []
    want_rows = [
        [loop_fold(f, z, r[s : s + k]) for s, k in zip(starts, seg, strict=True)]
        for r in rows_of(a)
    ]
    shape = (*outer, len(seg))
    if len(dts) == 1:
        dt = python_dtype(f, z, np.dtype(dts[0]).type(0))
        want: Any = np.array(want_rows, dtype=dt).reshape(shape)
    else:
        zero = tuple(np.dtype(d).type(0) for d in dts)
        dtk = [np.asarray(v).dtype for v in loop_fold(f, z, [zero, zero])]
        want = tuple(
            np.array([[w[k] for w in r] for r in want_rows], dtype=dtk[k]).reshape(shape)
            for k in range(len(dts))
        )
    assert same_bits(got, want), (seg, got, want)


def test_fold_seg_validates_its_segments() -> None:
    a = np.arange(6, dtype=np.int32)
    with pytest.raises(ValueError, match="sum to 3"):
        ol.fold_seg(add, 0, a, np.array([1, 2]))
    with pytest.raises(ValueError, match="non-negative"):
        ol.fold_seg(add, 0, a, np.array([7, -1]))
    with pytest.raises(TypeError, match="integer"):
        ol.fold_seg(add, 0, a, np.array([6.0]))


# -- scans -------------------------------------------------------------------------------

SCAN_FORMS = ["scanl", "scanl1", "scanl_total", "scanr", "scanr1", "scanr_total", "scanl_seg",
              "scanl1_seg"]  # fmt: skip


SCANS: dict[str, tuple[Any, Any, tuple[str, ...]]] = {
    "add int8": (add, 0, ("int8",)),
    "add uint64": (add, 0, ("uint64",)),
    "add float64": (add, 0.0, ("float64",)),
    "bitor bool": (bitor, False, ("bool",)),
    "max_first_nan float32": (max_first_nan, -math.inf, ("float32",)),
    "matmul2 int32": (matmul2, (1, 0, 0, 1), ("int32",) * 4),
    "pair int16 bool": (pair, (0, False), ("int16", "bool")),
}


@FUZZ
@given(
    data=st.data(),
    case=st.sampled_from(sorted(SCANS)),
    form=st.sampled_from(SCAN_FORMS),
    outer=st.lists(st.integers(0, 2), max_size=1).map(tuple),
    inner=st.sampled_from([0, 1, 2, 5, 33, 100]),
)
def test_scans_equal_python_loops(
    data: st.DataObject, case: str, form: str, outer: tuple[int, ...], inner: int
) -> None:
    """Rows shorter than 2^20: compute_p runs compute_s's one chunk (its bits), the
    sequential order of a Python loop (floats included)."""
    f, z, dts = SCANS[case]
    comps = tuple(array(data, dt, (*outer, inner), small=f is matmul2) for dt in dts)
    a = comps[0] if len(comps) == 1 else comps
    seg = segments(data, inner)
    nodes = scan_nodes(form, f, z, a, seg)
    rows = [scan_rows(form, f, z, r, seg) for r in rows_of(a)]
    for k, node in enumerate(nodes):
        got = both(node)
        parts = got if isinstance(got, tuple) else (got,)
        shape = parts[0].shape
        if k == 1:  # the totals: one per row
            assert shape == outer
        for c, part in enumerate(parts):
            assert part.dtype == np.dtype(dts[c])
            vals = [x[c] if len(dts) > 1 else x for r in rows for x in r[k]]
            assert same_bits(part, np.array(vals, dtype=dts[c]).reshape(shape)), (form, k)


def test_a_long_scan_row_on_compute_p_takes_the_tree() -> None:
    """A row of 2^20 elements or more: compute_p's chunks of 8192 (integers: the bits of
    NumPy's cumsum, as compute_s; floats: close to it)."""
    rng = np.random.default_rng(11)
    a = rng.integers(-50, 50, (1 << 20) + 3).astype(np.int32)
    want = np.cumsum(a, dtype=np.int32)
    for target in TARGETS:
        assert same_bits(target(ol.scanl1(add, a)), want)
    got = ol.compute_p(ol.scanl1(add, a.astype(np.float32)))
    assert got.dtype == np.float32
    assert np.allclose(got, want, rtol=1e-5, atol=1e-2)


def test_scan_neutral_elements_that_do_not_fit_are_errors() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        ol.scanl(add, 300, np.ones(3, np.int8))
    with pytest.raises(ol.OffloadError):
        ol.compute_s(ol.scanl(add, 0.0, np.ones(3, np.int8)))


# -- stencils ----------------------------------------------------------------------------

PAD = {"clamp": "edge", "mirror": "reflect", "wrap": "wrap"}


def numpy_stencil(fn: Any, a: np.ndarray[Any, Any], boundary: str, value: Any) -> Any:
    if boundary == "constant":
        p = np.pad(a, REACH, mode="constant", constant_values=value)
    else:
        p = np.pad(a, REACH, mode=PAD[boundary])  # type: ignore[call-overload]

    def get(*d: int) -> Any:
        return p[tuple(slice(REACH + k, REACH + k + n) for k, n in zip(d, a.shape, strict=True))]

    with np.errstate(all="ignore"):
        return fn(get)


@FUZZ
@given(
    data=st.data(),
    rank=st.integers(1, 3),
    dims=st.lists(st.integers(1, 12), min_size=3, max_size=3),
    boundary=st.sampled_from(["clamp", "mirror", "wrap", "constant"]),
    dtype=st.sampled_from(["int8", "uint8", "int32", "float32", "float64"]),
    view=st.sampled_from(["c", "reversed", "fortran"]),
    reach=st.sampled_from(["far", "near"]),
)
def test_stencils_equal_numpy_pad(
    data: st.DataObject,
    rank: int,
    dims: list[int],
    boundary: str,
    dtype: str,
    view: str,
    reach: str,
) -> None:
    shape = tuple(min(d, 6) if reach == "far" else d for d in dims[:rank])
    a = array(data, dtype, shape)
    if view == "reversed":
        a = a[(slice(None, None, -1),) * rank]
    elif view == "fortran":
        a = np.asfortranarray(a)
    value = np.dtype(dtype).type(7)
    fn = STENCILS[reach][rank]
    node = ol.stencil(fn, a, ol.constant(value) if boundary == "constant" else boundary)
    got = both(node)
    want = numpy_stencil(fn, a, boundary, value)
    assert got.dtype == want.dtype
    assert same_bits(got, want), (boundary, a, got, want)


# -- permute, scatter, filter ------------------------------------------------------------


@FUZZ
@given(
    data=st.data(),
    n=st.sampled_from([0, 1, 7, 40]),
    dests=st.integers(1, 6),
    dtype=st.sampled_from(["int8", "uint8", "int64", "float64"]),
    combine=st.sampled_from(["add", "max"]),
    src_rank=st.integers(1, 2),
)
def test_permute_with_ignore_equals_numpy_at(
    data: st.DataObject, n: int, dests: int, dtype: str, combine: str, src_rank: int
) -> None:
    sshape = (n,) if src_rank == 1 else (n // 4, 4)
    a = array(data, dtype, sshape, small=dtype == "float64")
    defaults = array(data, dtype, (dests,), small=dtype == "float64")
    ks = data.draw(
        st.lists(st.integers(0, dests - 1) | st.just(IGNORE), min_size=a.size, max_size=a.size)
    )
    keys = np.array(ks, np.int64).reshape(sshape)
    if src_rank == 1:

        def ix(i: int) -> Any:
            return keys[i]

    else:

        def ix(i: int, j: int) -> Any:  # type: ignore[misc]
            return keys[i, j]

    f = add if combine == "add" else amax
    got = both(ol.permute(f, defaults, ix, a))
    kept = keys != IGNORE
    want = defaults.copy()
    with np.errstate(all="ignore"):
        (np.add if combine == "add" else np.maximum).at(want, keys[kept], a[kept])
    if dtype == "float64" and combine == "max":  # (max(0.0, -0.0): either zero)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    else:  # source order, np.add.at's order too
        assert same_bits(got, want), (keys, got, want)


@FUZZ
@given(data=st.data(), n=st.integers(0, 30), m=st.integers(1, 6))
def test_scatter_last_write_wins(data: st.DataObject, n: int, m: int) -> None:
    to = np.array(
        data.draw(st.lists(st.integers(0, m - 1) | st.just(IGNORE), min_size=n, max_size=n)),
        np.int64,
    )
    a = array(data, "int16", (n,))
    defaults = array(data, "int16", (m,))
    want = defaults.copy()
    for i, d in enumerate(to):
        if d != IGNORE:
            want[d] = a[i]
    assert same_bits(both(ol.scatter(to, defaults, a)), want)


def test_permute_outside_the_result_names_the_element() -> None:
    def ix(i: int) -> Any:
        return -1 if i == 2 else i

    for target in TARGETS:
        with pytest.raises(ol.PermuteIndexError, match=r"\(2,\) to \(-1,\)"):
            target(ol.permute(add, np.zeros(5, np.int32), ix, np.ones(5, np.int32)))


FILTERS: dict[str, tuple[Any, tuple[str, ...], Any]] = {
    "positive int8": (positive, ("int8",), lambda c: c[0] > 0),
    "itself float32 (NaN and -0.0)": (itself, ("float32",), lambda c: c[0] != 0),
    "itself bool": (itself, ("bool",), lambda c: c[0]),
    "never uint16": (never, ("uint16",), lambda c: np.zeros(c[0].shape, bool)),
    "positive float64 (none)": (positive, ("float64",), lambda c: c[0] > 0),
    "pair int16 float64": (first_below_second, ("int16", "float64"), lambda c: c[0] < c[1]),
}


@FUZZ
@given(
    data=st.data(),
    case=st.sampled_from(sorted(FILTERS)),
    n=st.sampled_from([0, 1, 6, 50]),
    fill=st.sampled_from(["drawn", "all", "none"]),
)
def test_filter_equals_boolean_indexing(data: st.DataObject, case: str, n: int, fill: str) -> None:
    pred, dts, mask = FILTERS[case]
    comps = [array(data, dt, (n,)) for dt in dts]
    if fill != "drawn" and case != "never uint16":
        keep = fill == "all"
        if len(comps) == 1:
            comps[0] = np.full(n, 1 if keep else 0, dts[0])
        else:
            comps = [np.zeros(n, dts[0]), np.full(n, 1.0 if keep else -1.0, dts[1])]
    if case.startswith("positive float64"):
        comps[0] = -np.abs(comps[0])
    got = both(ol.filter(pred, comps[0] if len(comps) == 1 else tuple(comps)))
    m = mask(comps)
    kept = tuple(c[m] for c in comps)
    assert same_bits(got, kept[0] if len(kept) == 1 else kept)


def test_a_long_filter_on_compute_p_equals_boolean_indexing() -> None:
    x = np.random.default_rng(3).standard_normal(300_001).astype(np.float32)
    got = both(ol.filter(positive, x))
    assert same_bits(got, x[x > 0])


# -- structural nodes and compositions ---------------------------------------------------


@FUZZ
@given(
    data=st.data(),
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from(["int16", "float32"]),
)
def test_structural_nodes_equal_numpy(
    data: st.DataObject, shape: tuple[int, ...], dtype: str
) -> None:
    a = array(data, dtype, shape)
    assert same_bits(both(ol.reverse(a)), a[..., ::-1])
    assert same_bits(both(ol.transpose(a)), a.T)
    assert same_bits(both(ol.replicate((2, *([ol.ALL] * a.ndim)), a)), np.stack([a, a]))
    assert same_bits(both(ol.map(twice, ol.reverse(ol.transpose(a)))), a.T[..., ::-1] * 2)
    if a.shape[0]:
        k = data.draw(st.integers(-a.shape[0], a.shape[0] - 1))
        spec = (k, *([ol.ALL] * (a.ndim - 1)))
        assert same_bits(both(ol.slice(a, spec)), a[k])
    else:
        with pytest.raises(IndexError):
            ol.compute_s(ol.slice(a, (0, *([ol.ALL] * (a.ndim - 1)))))


@FUZZ
@given(data=st.data(), n=st.integers(0, 40), rows=st.integers(1, 3))
def test_folds_and_scans_over_producers_equal_numpy(data: st.DataObject, n: int, rows: int) -> None:
    a = array(data, "int32", (rows, n))
    r = ol.reverse(ol.map(twice, a))
    with np.errstate(over="ignore"):
        doubled = a[..., ::-1] * np.int32(2)
    assert same_bits(both(ol.fold(add, 0, r)), doubled.sum(-1, dtype=np.int32))
    assert same_bits(both(ol.scanl1(add, r)), np.cumsum(doubled, -1, dtype=np.int32))
    t = ol.transpose(a)
    assert same_bits(both(ol.fold(add, 0, t)), a.T.sum(-1, dtype=np.int32))
    assert same_bits(
        both(ol.fold_all(amax, np.int32(-(2**31)), a)), np.int32(a.max(initial=-(2**31)))
    )
    sc = ol.scanl1(add, a)  # one node used twice: computed once
    assert same_bits(both(ol.zip_with(add, sc, sc)), 2 * np.cumsum(a, -1, dtype=np.int32))


# -- nodes over a filter, neutral elements that do not fit ------------------------------
# Found by this fuzzing (fixed in b72abc0 while it ran): a fold, reverse, slice, stencil
# or permute over a filter read the filter's upper-bound length (garbage past its end),
# and a Python int neutral element or constant boundary out of the dtype's range wrapped.

FILTERED = np.array([1003, -1, 1002, -5, -9, 1001, -7, -8], np.int32)
KEPT = FILTERED[FILTERED > 0]


def mod2(i: Any) -> Any:
    return i % 2


@pytest.mark.parametrize("consumer", ["fold_all", "fold", "reverse", "slice", "stencil", "permute"])
def test_nodes_over_a_filter_read_its_length(consumer: str) -> None:
    kept = ol.filter(positive, FILTERED)
    node, want = {
        "fold_all": (ol.fold_all(add, 0, kept), np.int32(KEPT.sum())),
        "fold": (ol.fold(add, 0, ol.map(twice, kept)), np.int32(2 * KEPT.sum())),
        "reverse": (ol.reverse(kept), KEPT[::-1]),
        "slice": (ol.slice(kept, (-1,)), np.array(KEPT[-1])),
        "stencil": (ol.stencil(st1, kept, "clamp"), numpy_stencil(st1, KEPT, "clamp", 0)),
        "permute": (
            ol.permute(add, np.zeros(2, np.int32), mod2, kept),
            np.array([KEPT[0] + KEPT[2], KEPT[1]], np.int32),
        ),
    }[consumer]
    assert same_bits(both(node), want)


@pytest.mark.parametrize("form", ["fold", "fold_all", "fold_seg", "stencil"])
def test_a_python_int_that_does_not_fit_the_dtype_is_an_error(form: str) -> None:
    x8 = np.array([1, 2, 3], np.int8)
    make = {
        "fold": lambda: ol.fold(add, 300, x8),
        "fold_all": lambda: ol.fold_all(add, -129, x8),
        "fold_seg": lambda: ol.fold_seg(add, 300, x8, np.array([3])),
        "stencil": lambda: ol.stencil(st1, x8.astype(np.uint8), ol.constant(-1)),
    }[form]
    with pytest.raises(ValueError, match="does not fit"):
        ol.compute_s(make())


# -- filters' consumers (fixed: the scheduler refits them to the computed length) -------


def test_fold_seg_over_a_filter_checks_the_computed_length() -> None:
    node = ol.fold_seg(add, 0, ol.filter(positive, FILTERED), np.array([4, 4]))
    with pytest.raises(ValueError, match="sum to 8"):
        ol.compute_s(node)


def test_reshape_of_a_filter_checks_the_computed_size() -> None:
    # (fixed in 0fbabe6: was 8 elements read of 3)
    node = ol.reshape(ol.filter(positive, FILTERED), (2, 4))
    with pytest.raises(ValueError, match="cannot reshape"):
        ol.compute_s(node)


@pytest.mark.parametrize("which", ["a", "to"])
def test_scatter_of_a_filtered_vector(which: str) -> None:
    kept = ol.filter(positive, FILTERED)  # 3 of 8
    if which == "a":
        node = ol.scatter(np.array([2, 0, 1]), np.zeros(3, np.int32), kept)
        want = KEPT[[1, 2, 0]]
    else:
        to = ol.filter(positive, np.array([-1, 2, -1, 1], np.int64))  # [2, 1]
        node = ol.scatter(to, np.zeros(3, np.int32), np.array([7, 8], np.int32))
        want = np.array([0, 8, 7], np.int32)
    assert same_bits(both(node), want)
