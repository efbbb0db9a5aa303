"""Differential fuzzing of streamed ``compute_g`` (docs/streaming.md) under numba's CUDA
simulator (Hypothesis).

The property: a streamed call -- ``ol.stream.compute_g(..., rows=r)``, or ``ol.compute_g``
over a small ``ol.config.device_memory_limit`` -- gives the unstreamed ``ol.compute_g``'s
result, bit for bit and in dtype, whatever the chunking. Each streamed call is checked
to have streamed (a plan of several chunks, or the spied ``offload.stream.run`` /
``offload.stream.trees.run`` called): a call that ran unstreamed proves nothing.

Fuzzed: element functions of rank 1-3 reading captured host arrays of several dtypes at
constant offsets (clamped with min/max, guarded by ``if``, wrapped by Python's negative
indices or ``%``, through loops), tuples of results, ``dtype=`` and ``out=``; ``stencil``
with every boundary; ``fold``/``fold_all``/scans and composite trees; sizes not multiples
of the chunk, one row, fewer rows than the halo. Reads the chunk does not bound (a gather,
a whole-axis loop) must stream with the array resident, or raise ``DoesNotFit``.

Every element function is made by a module-level factory (a fixed set of code objects:
offload caches lowerings by code object, and numba compiles each new one).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import offload as ol
import offload.stream as stream
from offload.diagnostics import OffloadError
from offload.stream import trees
from offload.stream.plan import DoesNotFit

pytestmark = pytest.mark.sim

DEEP = os.environ.get("OFFLOAD_FUZZ_EXAMPLES")
"""Unset: the same few examples on every run (derandomised). Set
(``OFFLOAD_FUZZ_EXAMPLES=60``): that many random examples a test, a deeper hunt."""


def fuzz(n: int) -> settings:
    return settings(
        max_examples=int(DEEP) if DEEP else n,
        # (a deep hunt reports the first failure as found: shrinking runs the simulator
        # for minutes)
        phases=[Phase.explicit, Phase.generate] if DEEP else list(Phase),
        derandomize=DEEP is None,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(autouse=True)
def _simulator_without_limit() -> Iterator[None]:
    c = ol.config
    saved = (c.gpu_simulator, c.device_memory_limit, c.determinism, c.bounds_check)
    c.gpu_simulator = True
    c.device_memory_limit = None
    yield
    (c.gpu_simulator, c.device_memory_limit, c.determinism, c.bounds_check) = saved


@contextlib.contextmanager
def limit(nbytes: int | None) -> Iterator[None]:
    saved = ol.config.device_memory_limit
    ol.config.device_memory_limit = nbytes
    try:
        yield
    finally:
        ol.config.device_memory_limit = saved


@contextlib.contextmanager
def spy_streams() -> Iterator[list[str]]:
    """The streamed runs of the calls within: ``offload.stream.run`` (element calls) and
    ``offload.stream.trees.run`` (collective parts)."""
    calls: list[str] = []
    real_run, real_tree = stream.run, trees.run

    def run(target: Any, shape: Any, dtype: Any = None, **kw: Any) -> Any:
        calls.append("element")
        return real_run(target, shape, dtype, **kw)

    def tree_run(st_: Any, *args: Any) -> Any:
        calls.append(type(st_).__name__)
        return real_tree(st_, *args)

    stream.run, trees.run = run, tree_run  # type: ignore[assignment]
    try:
        yield calls
    finally:
        stream.run, trees.run = real_run, real_tree  # type: ignore[assignment]


def bits(result: Any) -> list[tuple[Any, ...]]:
    """Dtype, shape and bytes of each part of a result."""
    parts = result if isinstance(result, tuple) else (result,)
    hosts = [np.asarray(r) for r in parts]
    return [(h.dtype, h.shape, h.tobytes()) for h in hosts]


def same(got: Any, want: Any) -> None:
    """``got`` has ``want``'s dtypes, shapes and bits (the first differing elements shown)."""
    g, w = bits(got), bits(want)
    assert [x[:2] for x in g] == [x[:2] for x in w], f"dtype or shape: {g[0][:2]} vs {w[0][:2]}"
    parts = zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    )
    for k, (ga, wa) in enumerate(parts):
        ga, wa = np.atleast_1d(np.asarray(ga)), np.atleast_1d(np.asarray(wa))
        if ga.tobytes() != wa.tobytes():
            gb = ga.reshape(*ga.shape, 1).view(np.uint8)
            wb = wa.reshape(*wa.shape, 1).view(np.uint8)
            at = np.argwhere((gb != wb).any(-1))[:6].tolist()
            raise AssertionError(
                f"result {k} differs at {at}: got {[ga[tuple(a)] for a in at]}, "
                f"want {[wa[tuple(a)] for a in at]}"
            )


# -- data --------------------------------------------------------------------------------

NUMERIC = [
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float32,
    np.float64,
]


def data(rng: np.random.Generator, shape: Any, dtype: Any) -> np.ndarray:
    """Values of ``dtype``: small integers (some negative where signed), floats with a few
    specials (-0.0, inf, NaN) sprinkled in."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = max(int(info.min), -100)
        hi = min(int(info.max), 100)
        return rng.integers(lo, hi + 1, shape).astype(dt)
    a = (rng.standard_normal(shape) * 10).astype(dt)
    flat = a.reshape(-1)
    if flat.size > 4 and rng.random() < 0.5:
        picks = rng.choice(flat.size, 3, replace=False)
        flat[picks] = np.array([-0.0, np.inf, np.nan], dtype=dt)
    return a


def arrays(seed: int, shape: tuple[int, ...], ex: int, dx: Any, dy: Any) -> dict[str, Any]:
    """The captured arrays a factory picks from, for a result of ``shape``: ``x`` (rows
    ``ex`` longer than the result, dtype ``dx``), ``y`` (the result's rows, ``dy``), ``o``
    (small int8 offsets), ``b`` (bools), ``w`` (``2 m + 1`` rows), ``g`` (gather indices
    into ``x``), ``t`` (``y``'s axes reversed: a transposed view, not C-contiguous)."""
    rng = np.random.default_rng(seed)
    m, *rest = shape
    x = data(rng, (m + ex, *rest), dx)
    return {
        "x": x,
        "y": data(rng, shape, dy),
        "o": rng.integers(-3, 4, shape).astype(np.int8),
        "b": rng.random(shape) < 0.6,
        "w": data(rng, (2 * m + 1, *rest), dx),
        "g": rng.integers(0, m + ex, shape),
        "t": data(rng, shape, dy).T,
    }


# -- rank 1 element functions ------------------------------------------------------------


def r1_clamp(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y = a["x"], a["y"]
    nx = len(x)

    def f(i):
        return x[max(i - 2, 0)] + x[min(i + 1, nx - 1)] * 3 - y[i]

    return f


def r1_guard_tuple(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y, b = a["x"], a["y"], a["b"]
    m = len(y)

    def f(i):
        if i >= 2 and i + 1 < m:
            return x[i - 2] - x[i + 1], y[i - 1], b[i]
        return x[i], y[i], b[i]

    return f


def r1_loop(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]
    nx = x.shape[0]

    def f(i):
        s = 0.0
        for d in range(-2, 3):
            s += x[min(max(i + d, 0), nx - 1)] * (d + 3)
        return s

    return f


def r1_reverse(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y = a["x"], a["y"]
    m = len(y)

    def f(i):
        return x[m - 1 - i] * 2 + y[i]

    return f


def r1_negative(a: dict[str, Any], k: int) -> Callable[..., Any]:
    """Python's negative indices: row -1 is the last one (k <= the rows of y)."""
    x, y = a["x"], a["y"]

    def f(i):
        return x[i - 1] - x[-i - 1] + y[i - k]

    return f


def r1_strided(a: dict[str, Any], k: int) -> Callable[..., Any]:
    w, x = a["w"], a["x"]

    def f(i):
        return w[2 * i] - w[2 * i + 1] + x[i // 2] - x[(i + 1) // 2]

    return f


def r1_ternary(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]
    nx = len(x)

    def f(i):
        j = i - 1 if i > 0 else min(i + 1, nx - 1)
        return x[j] + x[i]

    return f


def r1_captured_k(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]
    nx = x.shape[0]

    def f(i):
        return x[min(i + k, nx - 1)] - x[max(i - k, 0)] + x[min(abs(i - k), nx - 1)]

    return f


def r1_bits(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]
    nx = len(x)

    def f(i):
        return x[min(i ^ 1, nx - 1)] + x[i & ~1] + x[i >> 1] - x[min(i | 1, nx - 1)]

    return f


def r1_prefix(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]

    def f(i):
        s = 0.0
        for t in range(i + 1):
            s += x[t]
        return s

    return f


def r1_window_loop(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]
    nx = len(x)

    def f(i):
        s = 0.0
        for t in range(max(i - k, 0), min(i + k + 1, nx)):
            s += x[t] * (t - i)
        return s

    return f


def r1_while(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, b = a["x"], a["b"]
    m = len(b)

    def f(i):
        j = i
        while j > 0 and b[j]:
            j -= 1
        h = i
        while h + 1 < m and b[h + 1]:
            h += 1
        return x[j] - x[h]

    return f


def r1_loaded_offset(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, o = a["x"], a["o"]
    nx = len(x)

    def f(i):
        return x[min(max(i + o[i], 0), nx - 1)]

    return f


def r1_float_index(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x = a["x"]
    nx = len(x)

    def f(i):
        return x[min(int(i * 1.5), nx - 1)] + x[int(i * 0.5)]

    return f


def r1_mod(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y = a["x"], a["y"]
    m, nx = len(y), len(x)

    def f(i):
        return x[(i - 1) % nx] + y[(i + k) % m]

    return f


def r1_branches(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y, b = a["x"], a["y"], a["b"]
    nx = len(x)

    def f(i):
        if b[i]:
            return float(x[min(i + 2, nx - 1)])
        if i > 0:
            return float(y[i - 1])
        return float(x[0])

    return f


def r1_pure(a: dict[str, Any], k: int) -> Callable[..., Any]:
    """No captured array: only the results count against the budget."""

    def f(i):
        return i * 3 % 7 == k, i * 0.5 - k, np.int8(i * 37)

    return f


def r1_gather(a: dict[str, Any], k: int) -> Callable[..., Any]:
    """Not bounded by the chunk: ``x`` resident (or ``DoesNotFit``)."""
    x, g = a["x"], a["g"]

    def f(i):
        return x[g[i]] * 2

    return f


# -- rank 2 and 3 ------------------------------------------------------------------------


def r2_halo(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y = a["x"], a["y"]
    mx, c = x.shape

    def f(i, j):
        up = x[i - 1, j] if i > 0 else x[i, j]
        return up + x[min(i + 1, mx - 1), (j + 1) % c] * 2 - y[i, j], i - j

    return f


def r2_transposed(a: dict[str, Any], k: int) -> Callable[..., Any]:
    t, y = a["t"], a["y"]
    m = y.shape[0]

    def f(i, j):
        return t[j, m - 1 - i] + y[i, max(j - 1, 0)]

    return f


def r2_column_loop(a: dict[str, Any], k: int) -> Callable[..., Any]:
    """A loop over the whole leading axis: ``x`` resident."""
    x = a["x"]
    mx = x.shape[0]

    def f(i, j):
        s = 0.0
        for t in range(mx):
            s += x[t, j]
        return s - x[i, j]

    return f


def r2_guard_tuple(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, b = a["x"], a["b"]
    m, c = b.shape

    def f(i, j):
        if i >= k and j + 1 < c and b[i, j]:
            return x[i - k, j + 1], True
        return x[i, j], b[min(i + 1, m - 1), j]

    return f


def r3_halo(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, y = a["x"], a["y"]
    mx, c, d = x.shape

    def f(i, j, h):
        return (
            x[max(i - 1, 0), j, h]
            + x[min(i + 2, mx - 1), (j + 1) % c, max(h - 1, 0)] * 2
            - y[i, j, h]
        )

    return f


def r3_tuple(a: dict[str, Any], k: int) -> Callable[..., Any]:
    x, b = a["x"], a["b"]

    def f(i, j, h):
        v = x[i - 1, j, h] if i > 0 else x[i, j, h]
        return v, b[i, j, h] and i % 2 == 0

    return f


FACTORIES: dict[int, list[Callable[..., Any]]] = {
    1: [
        r1_clamp,
        r1_guard_tuple,
        r1_loop,
        r1_reverse,
        r1_negative,
        r1_strided,
        r1_ternary,
        r1_captured_k,
        r1_bits,
        r1_prefix,
        r1_window_loop,
        r1_while,
        r1_loaded_offset,
        r1_float_index,
        r1_mod,
        r1_branches,
        r1_pure,
        r1_gather,
    ],
    2: [r2_halo, r2_transposed, r2_column_loop, r2_guard_tuple],
    3: [r3_halo, r3_tuple],
}
ALL = [(rank, f) for rank, fs in FACTORIES.items() for f in fs]

LEADING = st.one_of(st.sampled_from([1, 2, 3]), st.integers(1, 37))


def _need(f: Any, shape: tuple[int, ...], want: Any, *, results: bool = False) -> int:
    """Bytes of the call's captured host arrays, else of its results: a limit below it
    streams the call whatever its result types. (A known bug, kept out of this file:
    ``maybe_stream`` counts the results in the types of the code object's first lowering.)"""
    from offload.stream import compiled as cache

    found = cache.entry(f, len(shape))
    values = found.fetch(f)
    arrays = sum(values[k].nbytes for k in cache.host_arrays(values))
    parts = want if isinstance(want, tuple) else (want,)
    out = sum(p.nbytes for p in parts)
    return arrays + out if results else arrays or out


def _check_streamed(shape, f, dtype, rows, how, frac):
    """The property for one element call (``how``: forced ``rows``, over a ``limit``, or
    into ``out=`` arrays)."""
    try:
        want = ol.compute_g(shape, f, dtype=dtype)
    except OffloadError as err:  # (a type rule: the streamed call refuses it too)
        with pytest.raises(type(err)):
            stream.compute_g(shape, f, dtype=dtype, rows=rows)
        return
    m = shape[0]
    if how == "rows":
        plan = stream.plan(shape, f, dtype=dtype, rows=rows)
        assert len(plan.chunks) == -(-m // min(rows, m))
        got = stream.compute_g(shape, f, dtype=dtype, rows=rows)
        same(got, want)
    elif how == "limit":
        budget = max(int(_need(f, shape, want) * frac), 1)
        with limit(budget), spy_streams() as calls:
            try:
                got = ol.compute_g(shape, f, dtype=dtype)
            except DoesNotFit as err:  # (one row and its halo over the budget)
                assert "stream" in str(err)
                return
        assert calls == ["element"]
        same(got, want)
    elif how == "out-alias":  # out= is the captured y: the chunks read the inputs as they were
        y = f.__closure__ and next(
            (
                c.cell_contents
                for c in f.__closure__
                if isinstance(c.cell_contents, np.ndarray)
                and c.cell_contents.shape == shape
                and c.cell_contents.flags.writeable
            ),
            None,
        )
        if y is None or isinstance(want, tuple):
            return
        ref = ol.compute_g(shape, f, dtype=y.dtype)
        saved = y.copy()
        try:
            assert stream.compute_g(shape, f, dtype=y.dtype, rows=rows, out=y) is y
            same(y.copy(), ref)
        finally:
            y[...] = saved
    else:  # out=: a wider float / int, or a strided view
        parts = want if isinstance(want, tuple) else (want,)
        outs = []
        for p in parts:
            dt = {"f": np.float64, "i": np.int64, "u": np.uint64}.get(p.dtype.kind, p.dtype)
            if how == "out-strided":
                outs.append(np.full((*p.shape[:-1], p.shape[-1] * 2), 7, dt)[..., ::2])
            else:
                outs.append(np.full(p.shape, 7, dt))
        refs = [np.full(o.shape, 7, o.dtype) for o in outs]

        def pack(xs: list[Any]) -> Any:
            return tuple(xs) if isinstance(want, tuple) else xs[0]

        # (dtype= names out='s dtypes: without it, out= is checked against the result types
        # of the code object's first lowering, not this call's -- a known bug, unstreamed
        # too, kept out of this file)
        cast = pack([o.dtype for o in outs])
        ref = ol.compute_g(shape, f, dtype=cast, out=pack(refs))
        got = stream.compute_g(shape, f, dtype=cast, rows=rows, out=pack(outs))
        assert got is pack(outs) or all(g is o for g, o in zip(got, outs, strict=True))
        same(pack(outs), ref if isinstance(ref, tuple) else ref)


@fuzz(12)
@given(
    which=st.sampled_from(ALL),
    m=LEADING,
    rest=st.tuples(st.integers(1, 4), st.integers(1, 3)),
    ex=st.sampled_from([0, 1, 3]),
    dx=st.sampled_from(NUMERIC),
    dy=st.sampled_from(NUMERIC),
    k=st.integers(0, 4),
    rows=st.integers(1, 12),
    how=st.sampled_from(["rows", "rows", "limit", "out", "out-strided", "out-alias"]),
    frac=st.floats(0.1, 0.9),
    cast=st.sampled_from([None, None, None, np.float32, np.int32]),
    checked=st.sampled_from([False, False, True]),
    seed=st.integers(0, 2**16),
)
def test_a_streamed_element_function_has_the_unstreamed_bits(
    which, m, rest, ex, dx, dy, k, rows, how, frac, cast, checked, seed
):
    """Over forced chunkings, a budget, and out= arrays (wider, strided, or a captured
    input itself); with and without ``bounds_check`` (no read is out of bounds)."""
    ol.config.bounds_check = checked
    rank, make = which
    shape = (m, *rest[: rank - 1])
    k = min(k, m)  # (y[i - k]: at most one wrap of a negative index)
    f = make(arrays(seed, shape, ex, dx, dy), k)
    _check_streamed(shape, f, cast if how in ("rows", "limit") else None, rows, how, frac)


# -- stencils ----------------------------------------------------------------------------


def s1_lopsided(get):
    return get(-2) + get(1) * 2 - get(0)


def s1_far(get):
    return get(3) * get(-1) - get(0)


def s2_cross(get):
    return get(-1, 0) + get(1, 1) - get(0, -1) * 2


def s2_far(get):
    return get(2, -1) - get(-3, 1) + get(0, 0)


def s3_box(get):
    return get(-1, 0, 1) + get(2, -1, 0) - get(0, 0, 0)


def s2_pair(get):  # a tuple-valued source
    a, b = get(1, 0)
    c, d = get(-2, 1)
    return a * d - b + c


def twice_plus_one(v):
    return v * 2 + 1


def blend(a, b):
    return a - b * 3


def pair_up(a, b):
    return a, b


STENCILS = {1: [s1_lopsided, s1_far], 2: [s2_cross, s2_far, s2_pair], 3: [s3_box]}
STENCIL_DTYPES = [np.int8, np.int32, np.int64, np.uint16, np.float32, np.float64]


def _boundary(name: str, dtype: Any, pair: bool) -> Any:
    if name != "constant":
        return name
    v = 2.5 if np.dtype(dtype).kind == "f" else 3
    return ol.constant((v, v)) if pair else ol.constant(v)


def _stencil_source(kind: str, x: np.ndarray, y: np.ndarray) -> Any:
    if kind == "array":
        return x
    if kind == "map":
        return ol.map(twice_plus_one, x)
    if kind == "zip_with":
        return ol.zip_with(blend, x, y)
    return ol.zip_with(pair_up, x, y)  # (a tuple-valued source, for s2_pair)


@fuzz(10)
@given(
    rank_fn=st.sampled_from([(r, f) for r, fs in STENCILS.items() for f in fs]),
    m=LEADING,
    rest=st.tuples(st.integers(1, 5), st.integers(1, 3)),
    dtype=st.sampled_from(STENCIL_DTYPES),
    boundary=st.sampled_from(["clamp", "mirror", "wrap", "constant"]),
    source=st.sampled_from(["array", "array", "map", "zip_with"]),
    rows=st.integers(1, 9),
    by_limit=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_streamed_stencil_has_the_unstreamed_bits(
    rank_fn, m, rest, dtype, boundary, source, rows, by_limit, seed
):
    rank, fn = rank_fn
    shape = (m, *rest[: rank - 1])
    rng = np.random.default_rng(seed)
    x, y = data(rng, shape, dtype), data(rng, shape, dtype)
    pair = fn is s2_pair
    node = ol.stencil(
        fn, _stencil_source("pair" if pair else source, x, y), _boundary(boundary, dtype, pair)
    )
    want = ol.compute_g(node)
    if by_limit:
        with limit(max(1, (x.nbytes + want.nbytes) // 2)), spy_streams() as calls:
            try:
                got = ol.compute_g(node)
            except DoesNotFit:  # (one row and its halo over the budget)
                return
        assert calls == ["StreamedStencil"]
    else:
        if m > rows:
            assert len(stream.plan(node, rows=rows).chunks) >= 2
        got = stream.compute_g(node, rows=rows)
    same(got, want)


# -- folds and scans ---------------------------------------------------------------------


def add(a, b):
    return a + b


def bigger(a, b):
    return a if a > b else b


def mul(a, b):
    return a * b


def add_pairs(p, q):
    return p[0] + q[0], p[1] + q[1]


def square_pair(v):
    return v, v * v


def halve(v):
    return v * 0.5


def prod_sum(a, b):
    return a * b + 1


def neighbours(x, y, m):
    def f(i):
        return x[max(i - 1, 0)] * 2 - x[min(i + 2, m - 1)] + y[i]

    return f


FOLD_KINDS = ["fold_all", "fold", "fold1", "fold_all_pair", "scanl", "scanl1", "scanr", "scanr1"]
FOLD_SOURCES = ["array", "map", "zip_with", "halo"]
FOLD_DTYPES = [np.int8, np.int32, np.int64, np.uint32, np.float32, np.float64]


def _fold_tree(kind: str, comb: Any, src: Any, z: Any) -> Any:
    if kind == "fold_all":
        return ol.fold_all(comb, z, src)
    if kind == "fold":
        return ol.fold(comb, z, src)
    if kind == "fold1":
        return ol.fold1(comb, src)
    if kind == "fold_all_pair":
        return ol.fold_all(add_pairs, (z, z), ol.map(square_pair, src))
    if kind == "scanl":
        return ol.scanl(comb, z, src)
    if kind == "scanl1":
        return ol.scanl1(comb, src)
    if kind == "scanr":
        return ol.scanr(comb, z, src)
    return ol.scanr1(comb, src)


@fuzz(10)
@given(
    kind=st.sampled_from(FOLD_KINDS),
    comb=st.sampled_from([add, add, bigger, mul]),
    src=st.sampled_from(FOLD_SOURCES),
    m=st.one_of(st.sampled_from([1, 2, 3]), st.integers(1, 200)),
    cols=st.sampled_from([None, None, 1, 3, 17]),
    dtype=st.sampled_from(FOLD_DTYPES),
    mode=st.sampled_from(["deterministic", "cross_target"]),
    rows=st.integers(1, 64),
    by_limit=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_streamed_fold_or_scan_has_the_unstreamed_bits(
    kind, comb, src, m, cols, dtype, mode, rows, by_limit, seed
):
    """``fold``/``fold_all``/``fold1`` (also of pairs) and the four scans, of vectors and of
    rows, over a host array or an element tree (a map, a zip_with, a function with a halo),
    in the default and the ``cross_target`` modes."""
    ol.config.determinism = mode
    shape = (m,) if cols is None else (m, cols)
    rng = np.random.default_rng(seed)
    x, y = data(rng, shape, dtype), data(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":  # (no inf - inf: NaNs whose payload the order decides)
        x, y = np.nan_to_num(x, posinf=7.0, neginf=-7.0), np.nan_to_num(y, posinf=7, neginf=-7)
    if comb is mul and np.dtype(dtype).kind == "f":
        x = (x * 0 + 1 + rng.random(shape) * 1e-3).astype(dtype)  # (no overflow to inf)
    if src == "array":
        source = x
    elif src == "map":
        source = ol.map(halve if np.dtype(dtype).kind == "f" else twice_plus_one, x)
    elif src == "zip_with":
        source = ol.zip_with(blend, x, y)
    else:
        if cols is not None:
            source = ol.zip_with(blend, x, ol.map(twice_plus_one, y))
        else:
            source = ol.from_function(m, neighbours(x, y, m))
    z = dtype(0) if comb is not mul else dtype(1)
    tree = _fold_tree(kind, comb, source, z)
    try:
        want = ol.compute_g(tree)
    except (ValueError, OffloadError) as err:  # (e.g. an empty fold1: the same error)
        with pytest.raises(type(err)):
            stream.compute_g(tree, rows=rows)
        return
    if by_limit:
        parts = want if isinstance(want, tuple) else (want,)
        need = x.nbytes + (y.nbytes if src in ("zip_with", "halo") else 0)
        need += sum(np.asarray(p).nbytes for p in parts)
        with limit(max(need // 3, 1)), spy_streams() as calls:
            try:
                got = ol.compute_g(tree)
            except DoesNotFit:
                return
        assert calls, "nothing streamed"
    else:
        got = stream.compute_g(tree, rows=rows)
    same(got, want)


# -- composite trees ---------------------------------------------------------------------


def _composite(name: str, x2: np.ndarray, y2: np.ndarray, boundary: Any) -> Any:
    if name == "map-of-stencil":
        return ol.map(twice_plus_one, ol.stencil(s2_cross, x2, boundary))
    if name == "fold_all-of-zip_with":
        return ol.fold_all(add, x2.dtype.type(0), ol.zip_with(blend, x2, y2))
    if name == "fold-of-stencil":
        return ol.fold(add, x2.dtype.type(0), ol.stencil(s2_far, x2, boundary))
    if name == "stencil-of-stencil":
        return ol.stencil(s2_cross, ol.stencil(s2_far, x2, boundary), "clamp")
    if name == "map-after-fold":
        return ol.map(twice_plus_one, ol.fold(bigger, x2.dtype.type(0), x2))
    if name == "scan-of-rows-then-fold_all":
        return ol.fold_all(add, x2.dtype.type(0), ol.scanl1(add, ol.map(twice_plus_one, x2)))
    return ol.zip_with(
        add, ol.fold(add, x2.dtype.type(0), x2), ol.fold(bigger, x2.dtype.type(0), y2)
    )


COMPOSITES = [
    "map-of-stencil",
    "fold_all-of-zip_with",
    "fold-of-stencil",
    "stencil-of-stencil",
    "map-after-fold",
    "scan-of-rows-then-fold_all",
    "two-folds",
]


@fuzz(8)
@given(
    name=st.sampled_from(COMPOSITES),
    m=LEADING,
    cols=st.integers(1, 6),
    dtype=st.sampled_from([np.int16, np.int64, np.float32, np.float64]),
    boundary=st.sampled_from(["clamp", "mirror", "wrap", "constant"]),
    rows=st.integers(1, 9),
    by_limit=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_streamed_composite_tree_has_the_unstreamed_bits(
    name, m, cols, dtype, boundary, rows, by_limit, seed
):
    rng = np.random.default_rng(seed)
    x, y = data(rng, (m, cols), dtype), data(rng, (m, cols), dtype)
    if np.dtype(dtype).kind == "f":
        x, y = np.nan_to_num(x, posinf=7.0, neginf=-7.0), np.nan_to_num(y, posinf=7, neginf=-7)
    tree = _composite(name, x, y, _boundary(boundary, dtype, False))
    want = ol.compute_g(tree)
    if by_limit:
        with limit(max(1, (x.nbytes + y.nbytes) // 3)), spy_streams() as calls:
            try:
                got = ol.compute_g(tree)
            except DoesNotFit:
                return
        assert calls, "nothing streamed"
    else:
        got = stream.compute_g(tree, rows=rows)
    same(got, want)


# -- reads the chunk does not bound ------------------------------------------------------

N_E = 40
X_E = np.arange(N_E, dtype=np.float64) ** 1.5
G_E = np.random.default_rng(5).integers(0, N_E, N_E)
M_E = np.arange(N_E * 5, dtype=np.float32).reshape(N_E, 5) ** 1.25
C_E = np.random.default_rng(6).integers(0, 5, N_E)


def e_gather(i):
    return X_E[G_E[i]] * 2.0


def e_hashed(i):
    return X_E[(i * 7919) % N_E]


def e_reverse(i):
    return X_E[N_E - 1 - i] * 2.0 + 1.0


def e_negative_reverse(i):
    return X_E[-i - 1] - 1.0


def e_backscan(i):
    j = i
    while j > 0 and X_E[j] > 20.0:
        j -= 1
    return X_E[j]


def e_column_gather(i):
    return M_E[i, C_E[i]] + M_E[max(i - 1, 0), 0]


def e_whole_axis_loop(i):
    s = 0.0
    for t in range(N_E):
        s += X_E[t] * (t - i)
    return s


UNBOUNDED = [e_gather, e_hashed, e_backscan, e_column_gather, e_whole_axis_loop]


@pytest.mark.parametrize("fn", UNBOUNDED, ids=lambda f: f.__name__)
def test_an_unbounded_read_streams_or_is_a_located_does_not_fit(fn):
    """A gather, a hashed index, a search loop, a whole-axis loop: at every budget the call
    either streams with the unstreamed bits or raises ``DoesNotFit`` (an ``OffloadError``
    located at a read of this file), never a wrong answer or another error."""
    want = ol.compute_g(N_E, fn)
    need = _need(fn, (N_E,), want, results=True)
    outcomes = []
    for budget in [b for b in (16, 100, 200, 350, 400, 700) if b < need] + [need - 1]:
        with limit(budget), spy_streams() as calls:
            try:
                got = ol.compute_g(N_E, fn)
            except DoesNotFit as err:
                assert isinstance(err, OffloadError)
                text = str(err)
                assert "test_fuzz_stream_sim.py" in text and "[stream-budget]" in text
                outcomes.append("does-not-fit")
                continue
        assert calls == ["element"]
        same(got, want)
        outcomes.append("streamed")
    assert outcomes[-1] == "streamed"  # (a budget just under the call's bytes)


@pytest.mark.parametrize("fn", [e_reverse, e_negative_reverse], ids=lambda f: f.__name__)
def test_a_reversed_read_is_bounded_by_the_chunk(fn):
    """``x[n - 1 - i]`` and ``x[-i - 1]``: each chunk reads the mirrored rows only."""
    plan = stream.plan(N_E, fn, rows=7)
    assert plan.streamed == (0,) and plan.resident == ()
    for chunk in plan.chunks:
        ((lo, hi),) = chunk.block
        ((start, stop),) = chunk.windows[0]
        assert start <= N_E - hi and N_E - lo <= stop
        assert stop - start == hi - lo
    want = ol.compute_g(N_E, fn)
    with limit(300), spy_streams() as calls:
        got = ol.compute_g(N_E, fn)
    assert calls == ["element"]
    same(got, want)


def test_a_gather_kept_whole_and_its_index_streamed():
    """The gathered array is resident, its indices streamed with the rows."""
    plan = stream.plan(N_E, e_gather, rows=5)
    assert plan.resident == (0,) and plan.streamed == (1,)
    same(stream.compute_g(N_E, e_gather, rows=5), ol.compute_g(N_E, e_gather))


def test_no_rows_and_rank_0():
    """An empty leading axis gives an empty result of the unstreamed dtype; a 0-d call is
    an ``OffloadError`` (streaming cuts the leading axis)."""
    got = stream.compute_g((0, 3), r2_halo(arrays(1, (1, 3), 0, np.int16, np.float32), 0))
    want = ol.compute_g((0, 3), r2_halo(arrays(1, (1, 3), 0, np.int16, np.float32), 0))
    same(got, want)
    with pytest.raises(OffloadError):
        stream.compute_g((), lambda: X_E[0])
