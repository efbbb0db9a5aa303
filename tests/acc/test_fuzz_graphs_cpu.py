"""Differential fuzzing of COMPOSED collective graphs on compute_s and compute_p against a
NumPy model (Hypothesis).

``tests/acc/test_fuzz_collectives_cpu.py`` fuzzes each collective on its own; this file
draws random directed acyclic graphs of them -- map and zip_with over folds, scans,
stencils, permutes, filters and the structural nodes; collectives over producers; one
node object reached twice (sharing by identity, a shared node materialised once); deep
chains; tuple (struct-of-arrays) elements; 0-3 dimensional shapes with empty and unit
axes -- and checks every result, value and dtype, against a model built alongside the
graph from the DOCUMENTED semantics (docs/collectives.md, docs/collectives-scans.md,
docs/delayed.md), not from offload's code:

* an element function is Python over NumPy scalars (NEP 50 typing: the dtype is what the
  function gives on NumPy scalars of the sources' dtypes);
* a fold is ``acc = z; acc = f(acc, x)`` per row in the order of the CPU's reduction tree
  (``fold_reference.tree_fold``: a sequential loop below 2 x 8192 elements a row); its
  dtype what Python gives for that loop;
* a scan a Python loop (rows below 2^20: one chunk, the sequential order), a permute a
  loop in source order, a scatter the last write, a filter boolean indexing, a stencil
  ``fn`` over slices of ``numpy.pad``, the structural nodes NumPy indexing;
* a node over a filter reads the filter's computed length.

Every order is one the docs fix for these sizes on the CPU targets, so every comparison is
bit for bit (``interp_cases.same_bits``: floats included, NaN payloads aside), and
compute_s and compute_p must agree bit for bit. Each graph is also computed again (the
same node object: the warm path) and rebuilt anew, and ``ol.explain`` of it must not fail.

Every element, combine, stencil and index function is a module-level function of this
file (index functions are closures of module-level factories: keyed by code), so the
kernels come from the disk cache after the first run.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import tree_fold
from tests.acc.interp_cases import add, bitor, max_first_nan, same_bits, scan_rows

pytestmark = pytest.mark.cpu

DEEP = os.environ.get("OFFLOAD_FUZZ_EXAMPLES")
"""Unset: the same few graphs on every run (derandomised: their kernels come from the disk
cache after the first run). Set (``OFFLOAD_FUZZ_EXAMPLES=200``): that many random graphs a
test, a deeper hunt (``OFFLOAD_FUZZ_DEPTH`` raises the depth bound, default 6)."""
DEPTH = int(os.environ.get("OFFLOAD_FUZZ_DEPTH", "6"))


def fuzz(n: int) -> settings:
    return settings(
        max_examples=int(DEEP or n),
        derandomize=DEEP is None,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.reuse, Phase.generate]
        if os.environ.get("OFFLOAD_FUZZ_NO_SHRINK")
        else list(Phase),
    )


ALL = ol.ALL
IGNORE = ol.IGNORE
NUMERIC = ["int8", "uint8", "int16", "int32", "int64", "float32", "float64"]
DTYPES = [*NUMERIC, "bool"]
EXACT = [d for d in DTYPES if not d.startswith("float")]


# -- the functions (module level: compiled once, then cached) ---------------------------


def twice(v: Any) -> Any:
    return v * 2


def inc(v: Any) -> Any:
    return v + 1


def square(v: Any) -> Any:
    return v * v


def half(v: Any) -> Any:
    return v * 0.5


def positive(v: Any) -> Any:
    return v > 0


def negate(v: Any) -> Any:
    return -v


def to_float(v: Any) -> Any:
    return np.float64(v) + 0.25


def to_float_weak(v: Any) -> Any:
    """A Python float: fused into a consumer it stays weak (bug 3 of the report)."""
    return float(v) + 0.25


def relu(v: Any) -> Any:
    return v if v > 0 else v * 0


def split(v: Any) -> Any:
    """A number to a (number, bool) pair: a tuple-valued element."""
    return (v, v > 0)


def tcomb(p: Any) -> Any:
    """A (number, bool) pair back to a number."""
    return p[0] * p[1]


def tpred(p: Any) -> Any:
    return p[1]


def sub(a: Any, b: Any) -> Any:
    return a - b


def mul(a: Any, b: Any) -> Any:
    return a * b


def amax(a: Any, b: Any) -> Any:
    return a if a > b else b


def less(a: Any, b: Any) -> Any:
    return a < b


def axpy(a: Any, b: Any) -> Any:
    return a * 2 + b


def pair(p: Any, q: Any) -> Any:
    """(+, |) on a (number, bool) pair (commutes componentwise)."""
    return (p[0] + q[0], p[1] | q[1])


def gen1(i: Any) -> Any:
    return np.int64(i) * 3 - 5


def gen2(i: Any, j: Any) -> Any:
    return np.int64(i) * 10 - j


def gen3(i: Any, j: Any, k: Any) -> Any:
    return np.int64(i) * 100 + j * 10 - k


def weak1(i: Any) -> Any:
    """Python ints (the index): fused into a consumer they stay weak (bug 3)."""
    return i * 3 - 5


def weak2(i: Any, j: Any) -> Any:
    return i * 10 - j


def weak3(i: Any, j: Any, k: Any) -> Any:
    return i * 100 + j * 10 - k


def sa1(get: Any) -> Any:
    return get(-1) + get(0) * 2 + get(1)


def sa2(get: Any) -> Any:
    return get(-1, 0) + get(0, 0) * 2 + get(1, -1)


def sa3(get: Any) -> Any:
    return get(-1, 0, 1) + get(0, 0, 0) * 2 + get(1, -1, 0)


def sb1(get: Any) -> Any:
    return get(2) * 3 - get(-2)


def sb2(get: Any) -> Any:
    return get(2, 1) * 3 - get(-1, -2)


def sb3(get: Any) -> Any:
    return get(0, 2, -1) * 3 - get(-2, 0, 1)


STENCILS = {"a": {1: sa1, 2: sa2, 3: sa3}, "b": {1: sb1, 2: sb2, 3: sb3}}
WEAK = bool(os.environ.get("OFFLOAD_FUZZ_WEAK"))
"""Element functions that return Python numbers (bug 3 of the report: fails)."""
GENERATORS = {1: weak1, 2: weak2, 3: weak3} if WEAK else {1: gen1, 2: gen2, 3: gen3}


def ix_of1(keys: Any) -> Callable[..., Any]:
    def ix(i: Any) -> Any:
        return keys[i]

    return ix


def ix_of2(keys: Any) -> Callable[..., Any]:
    def ix(i: Any, j: Any) -> Any:
        return keys[i, j]

    return ix


def gather_of(cols: Any) -> Callable[..., Any]:
    def ix(k: Any) -> Any:
        return (cols[k],)

    return ix


# -- the model ---------------------------------------------------------------------------


def dtypes_of(want: Any) -> tuple[np.dtype[Any], ...]:
    return tuple(w.dtype for w in want) if isinstance(want, tuple) else (want.dtype,)


def shape_of(want: Any) -> tuple[int, ...]:
    return tuple((want[0] if isinstance(want, tuple) else want).shape)


def comps(want: Any) -> tuple[np.ndarray[Any, Any], ...]:
    return want if isinstance(want, tuple) else (want,)


def element(want: Any, idx: tuple[int, ...]) -> Any:
    """One element as the element functions see it: a NumPy scalar, or a tuple of them."""
    if isinstance(want, tuple):
        return tuple(w[idx] for w in want)
    return want[idx]


def one_of(dts: tuple[np.dtype[Any], ...]) -> Any:
    vals = tuple(dt.type(1) for dt in dts)
    return vals if len(vals) > 1 else vals[0]


def result_dtypes(fn: Callable[..., Any], *args: Any) -> tuple[np.dtype[Any], ...]:
    """The dtype(s) of ``fn`` on NumPy scalars (NEP 50)."""
    with np.errstate(all="ignore"):
        r = fn(*args)
    return tuple(np.asarray(x).dtype for x in r) if isinstance(r, tuple) else (np.asarray(r).dtype,)


def pack(values: list[Any], shape: tuple[int, ...], dts: tuple[np.dtype[Any], ...]) -> Any:
    """Python results (scalars or tuples) as an array (or a tuple of arrays)."""
    if len(dts) == 1:
        return np.array(values, dtype=dts[0]).reshape(shape)
    return tuple(
        np.array([v[k] for v in values], dtype=dt).reshape(shape) for k, dt in enumerate(dts)
    )


def elementwise(fn: Callable[..., Any], *srcs: Any) -> Any:
    """``fn`` at every index of the intersection of the sources' shapes."""
    shape = tuple(min(s) for s in zip(*(shape_of(x) for x in srcs), strict=True))
    dts = result_dtypes(fn, *(one_of(dtypes_of(x)) for x in srcs))
    out = []
    with np.errstate(all="ignore"):
        for idx in np.ndindex(*shape):
            out.append(fn(*(element(x, idx) for x in srcs)))
    return pack(out, shape, dts)


def rows(want: Any) -> list[list[Any]]:
    """The innermost rows as lists of elements (tuples for tuples)."""
    shape = shape_of(want)
    n = shape[-1]
    return [[element(want, (*outer, k)) for k in range(n)] for outer in np.ndindex(*shape[:-1])]


def loop(f: Callable[..., Any], acc: Any, xs: list[Any]) -> Any:
    with np.errstate(all="ignore"):
        for x in xs:
            acc = f(acc, x)
    return acc


def fold_dtypes(f: Callable[..., Any], z: Any, dts: tuple[np.dtype[Any], ...]) -> Any:
    one = one_of(dts)
    with np.errstate(all="ignore"):
        return result_dtypes(lambda: f(f(one if z is None else z, one), one))


def fold_model(f: Callable[..., Any], z: Any, want: Any) -> Any:
    shape = shape_of(want)
    rs = rows(want)
    with np.errstate(all="ignore"):
        vals = [tree_fold(f, z, r, len(rs), wide=False) for r in rs]
    return pack(vals, shape[:-1], fold_dtypes(f, z, dtypes_of(want)))


def scan_row(form: str, f: Any, z: Any, row: list[Any], seg: Any) -> list[Any]:
    """``form`` of one row (``scanl_total.1``: the total of ``scanl_total``)."""
    base, _, part = form.partition(".")
    return scan_rows(base, f, z, row, seg)[int(part) if part else 0]


def pad_mode(boundary: str) -> dict[str, Any]:
    return {"clamp": {"mode": "edge"}, "mirror": {"mode": "reflect"}, "wrap": {"mode": "wrap"}}[
        boundary
    ]


def stencil_model(
    fn: Callable[..., Any], a: np.ndarray[Any, Any], boundary: str, value: Any
) -> Any:
    reach = 2
    if a.size == 0:
        dts = result_dtypes(fn, lambda *d: a.dtype.type(1))
        return np.zeros(a.shape, dts[0])
    if boundary == "constant":
        p = np.pad(a, reach, mode="constant", constant_values=value)
    else:
        p = np.pad(a, reach, **pad_mode(boundary))

    def get(*d: int) -> Any:
        return p[tuple(slice(reach + k, reach + k + n) for k, n in zip(d, a.shape, strict=True))]

    with np.errstate(all="ignore"):
        return fn(get)


# -- graphs ------------------------------------------------------------------------------


@dataclass(eq=False)
class E:
    """A node of a drawn graph: how to build it (``make(get)``, ``get`` building a child
    once per graph: sharing by identity) and its model value."""

    make: Callable[[Callable[[Any], Any]], Any]
    want: Any
    label: str
    static: tuple[int, ...]
    """The shape offload knows when the node is built (a filter's: its source's length,
    an upper bound)."""
    filtered: bool = False
    """Whether a filter lies below (static may exceed the model's shape)."""
    raw_tuple: bool = False
    """``make`` gives a Python tuple of nodes (a struct of arrays), not a node."""
    kids: tuple[E, ...] = field(default=())
    skeleton: bool = False
    """A skeleton collective (a scan, permute, scatter, filter): computed as a whole."""

    def __post_init__(self) -> None:
        assert len(self.static) == len(self.shape), (self.label, self.static, self.shape)

    @property
    def opaque(self) -> bool:
        """An element or structural node over a skeleton collective: its dtype is not
        known before computing (docs/collectives.md, "Not yet done"), and a skeleton
        collective cannot be built over it (an ``OffloadError`` at construction, see
        ``OPAQUE_SOURCES``)."""
        return not self.skeleton and any(k.skeleton or k.opaque for k in self.kids)

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.want)

    @property
    def dts(self) -> tuple[np.dtype[Any], ...]:
        return dtypes_of(self.want)

    @property
    def is_tuple(self) -> bool:
        return isinstance(self.want, tuple)

    @property
    def scalar_dt(self) -> np.dtype[Any] | None:
        return None if self.is_tuple else self.want.dtype

    def describe(self, seen: dict[int, int] | None = None) -> str:
        seen = {} if seen is None else seen
        if id(self) in seen:
            return f"#{seen[id(self)]}"
        seen[id(self)] = len(seen)
        inner = ", ".join(k.describe(seen) for k in self.kids)
        return (
            f"#{seen[id(self)]}={self.label}({inner})"
            if self.kids
            else f"#{seen[id(self)]}={self.label}"
        )


def build(root: E) -> Any:
    memo: dict[int, Any] = {}

    def get(e: E) -> Any:
        if id(e) not in memo:
            memo[id(e)] = e.make(get)
        return memo[id(e)]

    return get(root)


def values(dtype: str) -> st.SearchStrategy[Any]:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind == "f":
        return st.floats(-4, 4, width=dt.itemsize * 8) | st.sampled_from(
            [math.nan, math.inf, -math.inf, -0.0, 0.0, 0.5]
        )
    info = np.iinfo(dt)
    return st.integers(max(info.min, -5), min(info.max, 5)) | st.sampled_from(
        [int(info.min), int(info.max), 100]
    )


SIZES = [0, 1, 2, 3, 5, 7]
OPAQUE_SOURCES = bool(os.environ.get("OFFLOAD_FUZZ_OPAQUE"))
VARY_EXTENTS = bool(os.environ.get("OFFLOAD_FUZZ_VARY_EXTENTS"))
"""Draw the extents a node holds itself (``generate``'s shape, ``extend``'s new axes)
freely: a tree rebuilt with other such extents replays the plan recorded for the first
(bug 2 of the report). Unset: a ``generate`` has one shape a rank and a new axis an
extent fixed by its place, so two graphs of one structure hold the same extents."""
GENERATE_SHAPES = {1: (5,), 2: (3, 4), 3: (2, 3, 2)}
RAW_TUPLES = bool(os.environ.get("OFFLOAD_FUZZ_RAW_TUPLES"))
"""Hand a scan or a filter a Python tuple of delayed nodes itself (bug 4 of the report:
fails); unset, such a tuple reaches them through a ``transpose``."""
"""Build skeleton collectives over opaque nodes too (bug 1 of the report: fails)."""


class Gen:
    """Draws one graph (``data`` is Hypothesis' data object)."""

    def __init__(self, data: st.DataObject, long: bool = False, exact: bool = False) -> None:
        self.data = data
        self.pool: list[E] = []
        self.long = long
        self.exact = exact
        """Integers and bools only (exact under any grouping: ``cross_target``)."""

    def draw(self, s: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(s)

    # leaves

    def leaf(self, rank: int | None = None, dtype: str | None = None) -> E:
        if rank is None:
            rank = self.draw(st.sampled_from([1, 1, 2, 2, 3, 0]))
        if self.long and rank == 1 and self.draw(st.booleans()):
            shape: tuple[int, ...] = (self.draw(st.sampled_from([2 * 8192 + 3, 3 * 8192 - 1])),)
        else:
            shape = tuple(self.draw(st.sampled_from(SIZES)) for _ in range(rank))
        if dtype is None and rank >= 1 and self.draw(st.integers(0, 7)) == 0:
            fn = GENERATORS[rank]
            if not VARY_EXTENTS:  # (bug 2 of the report: one shape a rank)
                shape = GENERATE_SHAPES[rank]
            want = np.zeros(shape, np.int64)
            for idx in np.ndindex(*shape):
                want[idx] = fn(*idx)
            return E(lambda get: ol.generate(shape, fn), want, f"generate{shape}", shape)
        dtype = dtype or self.draw(st.sampled_from(EXACT if self.exact else DTYPES))
        n = math.prod(shape)
        if n > 64:
            rng = np.random.default_rng(self.draw(st.integers(0, 2**32 - 1)))
            dt = np.dtype(dtype)
            if dt.kind == "f":
                arr = rng.uniform(-4, 4, shape).astype(dt)
            elif dt.kind == "b":
                arr = rng.random(shape) < 0.5
            else:
                arr = rng.integers(
                    max(np.iinfo(dt).min, -50), min(np.iinfo(dt).max, 50), shape
                ).astype(dt)
        else:
            items = self.draw(st.lists(values(dtype), min_size=n, max_size=n))
            arr = np.array(items, dtype=dtype).reshape(shape)
        view = self.draw(st.sampled_from(["c", "c", "c", "reversed", "fortran"]))
        if view == "reversed" and rank:
            arr = arr[(slice(None, None, -1),) * rank]
        elif view == "fortran" and rank:
            arr = np.asfortranarray(arr)
        want = arr.copy()
        return E(lambda get: arr, want, f"{dtype}{shape}{'' if view == 'c' else view}", shape)

    def child(self, depth: int) -> E:
        if self.pool and self.draw(st.integers(0, 3)) == 0:
            return self.draw(st.sampled_from(self.pool))  # shared: reached twice
        return self.node(depth)

    def node(self, depth: int) -> E:
        if depth <= 0 or self.draw(st.integers(0, 5)) == 0:
            return self.leaf()
        op = self.draw(st.sampled_from(sorted(OPS)))
        kid = self.child(depth - 1)
        made = OPS[op](self, kid, depth)
        if made is None:
            made = self.fallback(kid)
        self.pool.append(made)
        return made

    def fallback(self, kid: E) -> E:
        if kid.is_tuple:
            return self.map_with(tcomb, kid)
        if kid.raw_tuple:  # pragma: no cover (raw tuples are tuples)
            raise AssertionError
        return self.map_with(inc, kid)

    def root(self, depth: int) -> E:
        return self.finish(self.node(depth))

    def finish(self, e: E) -> E:
        """``e`` as a node to compute: a Python tuple of nodes transposed (a node of
        tuples), a leaf mapped."""
        if e.raw_tuple:
            e = structural(e, ol.transpose, tuple(c.T for c in e.want), "transpose", e.static[::-1])
        if not e.kids:
            e = self.map_with(twice, e)
        return e

    # helpers for the ops

    def map_with(self, fn: Callable[..., Any], kid: E) -> E:
        if kid.raw_tuple:
            kid = op_transpose(self, kid, 1)  # type: ignore[assignment]
        return E(
            lambda get: ol.map(fn, get(kid)),
            elementwise(fn, kid.want),
            f"map {fn.__name__}",
            kid.static,
            kid.filtered,
            kids=(kid,),
        )

    def partner(self, kid: E, depth: int) -> E:
        """A second source of ``kid``'s rank and kind (scalar elements): a node of the
        pool, ``kid`` itself (a zip_with(f, a, a)), or a new node."""
        choice = self.draw(st.integers(0, 3))
        same = [e for e in self.pool if e.shape.__len__() == len(kid.shape) and not e.is_tuple]
        if choice == 0 and same:
            return self.draw(st.sampled_from(same))
        if choice == 1:
            return kid
        other = self.node(depth - 1) if choice == 2 else self.leaf(len(kid.shape))
        if len(other.shape) != len(kid.shape) or other.is_tuple:
            return self.leaf(len(kid.shape))
        return other


def z_for(f: Callable[..., Any], dt: np.dtype[Any], how: int) -> Any:
    """A neutral element of ``f`` for ``dt``: typed, or a Python number (how = 1)."""
    if f in (add, bitor):
        if how == 1:
            return 0.0 if dt.kind == "f" else (0 if dt.kind != "b" else False)
        if how == 2 and f is add and dt.kind != "b":
            return 0.0  # a float neutral element over integers: a float64 fold
        return dt.type(0)
    if f is mul:
        return 1.0 if how == 1 and dt.kind == "f" else dt.type(1)
    if f in (amax, max_first_nan):
        if dt.kind == "f":
            return -math.inf if how == 1 else dt.type(-np.inf)
        if dt.kind == "b":
            return np.False_
        return dt.type(np.iinfo(dt).min)
    raise AssertionError(f)


def combines_for(e: E, scan: bool = False) -> list[Callable[..., Any]]:
    if e.is_tuple:
        return [pair] if len(e.dts) == 2 and e.dts[1].kind == "b" else []
    dt = e.scalar_dt
    assert dt is not None
    if dt.kind == "b":
        return [add, amax, bitor] if scan else [add, bitor, amax]
    if dt.kind == "f":
        return [add, amax, max_first_nan, mul]
    return [add, amax, bitor, mul]


def neutral(f: Callable[..., Any], e: E, how: int) -> Any:
    if f is pair:
        return (e.dts[0].type(0), np.False_)
    dt = e.scalar_dt
    assert dt is not None
    return z_for(f, dt, how)


# -- the ops: each takes the drawn child and gives a node (None: not applicable) --------


def op_map(g: Gen, kid: E, depth: int) -> E | None:
    if kid.is_tuple or kid.raw_tuple:
        return g.map_with(tcomb, kid)
    dt = kid.scalar_dt
    assert dt is not None
    fns = [twice, inc, square, positive] + (
        [] if g.exact else [half, to_float_weak if WEAK else to_float]
    )
    if dt.kind != "b":
        fns += [negate, relu, split]
    return g.map_with(g.draw(st.sampled_from(fns)), kid)


def op_zip(g: Gen, kid: E, depth: int) -> E | None:
    if kid.is_tuple:
        return None
    other = g.partner(kid, depth)
    a, b = (kid, other) if g.draw(st.booleans()) else (other, kid)
    fns: list[Callable[..., Any]] = [add, mul, less, axpy]
    if a.scalar_dt == b.scalar_dt:
        fns.append(amax)
    if not (a.scalar_dt.kind == "b" and b.scalar_dt.kind == "b"):  # type: ignore[union-attr]
        fns.append(sub)
    fn = g.draw(st.sampled_from(fns))
    static = tuple(min(p, q) for p, q in zip(a.static, b.static, strict=True))
    return E(
        lambda get: ol.zip_with(fn, get(a), get(b)),
        elementwise(fn, a.want, b.want),
        f"zip_with {fn.__name__}",
        static,
        a.filtered or b.filtered,
        kids=(a, b),
    )


def op_fold(g: Gen, kid: E, depth: int) -> E | None:
    if not kid.shape:
        return None
    fs = combines_for(kid)
    if not fs:
        return None
    f = g.draw(st.sampled_from(fs))
    form = g.draw(st.sampled_from(["fold", "fold", "fold1", "fold_all"]))
    z = neutral(f, kid, g.draw(st.integers(0, 1 if g.exact else 2)))
    if form == "fold1":
        if kid.shape[-1] == 0 or kid.static[-1] == 0:
            return None
        return E(
            lambda get: ol.fold1(f, get(kid)),
            fold_model(f, None, kid.want),
            f"fold1 {f.__name__}",
            kid.static[:-1],
            kid.filtered,
            kids=(kid,),
        )
    if form == "fold_all":
        flat = tuple(c.reshape(1, -1) for c in comps(kid.want))
        want = fold_model(f, z, flat if kid.is_tuple else flat[0])
        want = tuple(w.reshape(()) for w in comps(want)) if kid.is_tuple else want.reshape(())
        return E(
            lambda get: ol.fold_all(f, z, get(kid)),
            want,
            f"fold_all {f.__name__} {z!r}",
            (),
            kid.filtered,
            kids=(kid,),
        )
    return E(
        lambda get: ol.fold(f, z, get(kid)),
        fold_model(f, z, kid.want),
        f"fold {f.__name__} {z!r}",
        kid.static[:-1],
        kid.filtered,
        kids=(kid,),
    )


def seg_lengths(g: Gen, n: int) -> np.ndarray[Any, Any]:
    if n == 0 and g.draw(st.booleans()):
        return np.zeros(0, np.int64)
    cuts = sorted(g.draw(st.lists(st.integers(0, n), max_size=4)))
    return np.diff(np.array([0, *cuts, n], np.int64))


def op_fold_seg(g: Gen, kid: E, depth: int) -> E | None:
    if not kid.shape or kid.filtered:
        return None
    fs = combines_for(kid)
    if not fs:
        return None
    f = g.draw(st.sampled_from(fs))
    z = neutral(f, kid, g.draw(st.integers(0, 1 if g.exact else 2)))
    seg = seg_lengths(g, kid.shape[-1])
    starts = np.concatenate([[0], np.cumsum(seg)[:-1]]).astype(int) if len(seg) else []
    vals = [
        loop(f, z, r[s : s + k]) for r in rows(kid.want) for s, k in zip(starts, seg, strict=True)
    ]
    want = pack(vals, (*kid.shape[:-1], len(seg)), fold_dtypes(f, z, kid.dts))
    return E(
        lambda get: ol.fold_seg(f, z, get(kid), seg),
        want,
        f"fold_seg {f.__name__} {z!r} {seg.tolist()}",
        (*kid.static[:-1], len(seg)),
        kids=(kid,),
    )


SCAN_FORMS = ["scanl", "scanl1", "scanr", "scanr1", "scanl_total", "scanl_total.1",
              "scanr_total", "scanr_total.1", "scanl_seg", "scanl1_seg"]  # fmt: skip


def op_scan(g: Gen, kid: E, depth: int) -> E | None:
    if kid.raw_tuple and not RAW_TUPLES:
        kid = op_transpose(g, kid, depth)  # type: ignore[assignment]
    if kid.opaque and not OPAQUE_SOURCES:
        return None
    if not kid.shape:
        return None
    fs = combines_for(kid, scan=True)
    if not fs:
        return None
    f = g.draw(st.sampled_from(fs))
    form = g.draw(st.sampled_from(SCAN_FORMS))
    if form.endswith("_seg") and kid.filtered:
        return None
    z = neutral(f, kid, 0)
    n = kid.shape[-1]
    seg = seg_lengths(g, n) if form.endswith("_seg") else None
    out_rows = [scan_row(form, f, z, r, seg) for r in rows(kid.want)]
    if form.endswith(".1"):
        shape = kid.shape[:-1]
        static = kid.static[:-1]
    else:
        m = len(out_rows[0]) if out_rows else {
            "scanl": n + 1, "scanr": n + 1, "scanl_seg": n + (len(seg) if seg is not None else 0)
        }.get(form, n)  # fmt: skip
        shape = (*kid.shape[:-1], m)
        static = (*kid.static[:-1], kid.static[-1] + (m - n))
    want = pack([x for r in out_rows for x in r], shape, kid.dts)

    def make(get: Callable[[Any], Any]) -> Any:
        a = get(kid)
        if form == "scanl_seg":
            return ol.scanl_seg(f, z, a, seg)
        if form == "scanl1_seg":
            return ol.scanl1_seg(f, a, seg)
        if form in ("scanl1", "scanr1"):
            return getattr(ol, form)(f, a)
        base = form.split(".")[0]
        made = getattr(ol, base)(f, z, a)
        if base.endswith("_total"):
            return made[1] if form.endswith(".1") else made[0]
        return made

    return E(make, want, f"{form} {f.__name__}", static, kid.filtered, kids=(kid,), skeleton=True)


def op_stencil(g: Gen, kid: E, depth: int) -> E | None:
    r = len(kid.shape)
    if kid.is_tuple or not 1 <= r <= 3:
        return None
    dt = kid.scalar_dt
    assert dt is not None
    which = g.draw(st.sampled_from(["a", "b"] if dt.kind != "b" else ["a"]))
    fn = STENCILS[which][r]
    boundary = g.draw(st.sampled_from(["clamp", "mirror", "wrap", "constant"]))
    value = dt.type(3) if dt.kind != "b" else np.True_
    spec: Any = ol.constant(value) if boundary == "constant" else boundary
    return E(
        lambda get: ol.stencil(fn, get(kid), spec),
        stencil_model(fn, kid.want, boundary, value),
        f"stencil {fn.__name__} {boundary}",
        kid.static,
        kid.filtered,
        kids=(kid,),
    )


def short(a: np.ndarray[Any, Any]) -> str:
    flat = a.reshape(-1).tolist()
    return str(flat) if len(flat) <= 16 else f"{flat[:16]}...({len(flat)})"


def indices(g: Gen, n: int, dests: int) -> np.ndarray[Any, Any]:
    """``n`` destinations below ``dests`` or ``IGNORE``."""
    if n > 64:
        rng = np.random.default_rng(g.draw(st.integers(0, 2**32 - 1)))
        out = rng.integers(0, dests, n)
        out[rng.random(n) < 0.2] = IGNORE
        return out.astype(np.int64)
    ks = g.draw(st.lists(st.integers(0, dests - 1) | st.just(IGNORE), min_size=n, max_size=n))
    return np.array(ks, np.int64)


def op_permute(g: Gen, kid: E, depth: int) -> E | None:
    if kid.opaque and not OPAQUE_SOURCES:
        return None
    r = len(kid.shape)
    if kid.is_tuple or r not in (1, 2):
        return None
    dt = kid.scalar_dt
    assert dt is not None
    dests = g.draw(st.integers(1, 5))
    defaults = np.array(g.draw(st.lists(values(dt.name), min_size=dests, max_size=dests)), dt)
    keys = indices(g, math.prod(kid.shape), dests).reshape(kid.shape)
    if kid.filtered:  # the index function reads keys at the computed source's indices
        keys = np.pad(keys, [(0, s - n) for s, n in zip(kid.static, kid.shape, strict=True)])
    f = g.draw(st.sampled_from([add, amax]))
    want = defaults.copy()
    with np.errstate(all="ignore"):
        for idx in np.ndindex(*kid.shape):
            d = keys[idx]
            if d != IGNORE:
                want[d] = f(kid.want[idx], want[d])
    ixf = ix_of1 if r == 1 else ix_of2
    return E(
        lambda get: ol.permute(f, defaults, ixf(keys), get(kid)),
        want,
        f"permute {f.__name__} keys={short(keys)}",
        (dests,),
        kids=(kid,),
        skeleton=True,
    )


def op_scatter(g: Gen, kid: E, depth: int) -> E | None:
    if kid.opaque and not OPAQUE_SOURCES:
        return None
    if kid.is_tuple or len(kid.shape) != 1 or kid.filtered:
        return None
    dt = kid.scalar_dt
    assert dt is not None
    m = g.draw(st.integers(1, 5))
    n = kid.shape[0]
    to = indices(g, n, m)
    defaults = np.array(g.draw(st.lists(values(dt.name), min_size=m, max_size=m)), dt)
    want = defaults.copy()
    for i, d in enumerate(to):
        if d != IGNORE:
            want[d] = kid.want[i]
    return E(
        lambda get: ol.scatter(to, defaults, get(kid)),
        want,
        f"scatter to={short(to)}",
        (m,),
        kids=(kid,),
        skeleton=True,
    )


def op_filter(g: Gen, kid: E, depth: int) -> E | None:
    if kid.raw_tuple and not RAW_TUPLES:
        kid = op_transpose(g, kid, depth)  # type: ignore[assignment]
    if kid.opaque and not OPAQUE_SOURCES:
        return None
    if len(kid.shape) != 1:
        return None
    if kid.is_tuple:
        if len(kid.dts) != 2 or kid.dts[1].kind != "b":
            return None
        pred = tpred
        mask = kid.want[1].astype(bool)
        want: Any = tuple(c[mask] for c in kid.want)
    else:
        pred = positive
        with np.errstate(all="ignore"):
            mask = np.array([bool(positive(x)) for x in kid.want], bool).reshape(kid.shape)
        want = kid.want[mask]
    return E(
        lambda get: ol.filter(pred, get(kid)),
        want,
        f"filter {pred.__name__}",
        kid.static,
        True,
        kids=(kid,),
        skeleton=True,
    )


def op_pair(g: Gen, kid: E, depth: int) -> E | None:
    """A tuple of two consumers of one node: (tcomb/map of kid, positive of kid)."""
    if kid.is_tuple or kid.scalar_dt.kind == "b" or kid.raw_tuple:  # type: ignore[union-attr]
        return None
    fn = g.draw(st.sampled_from([twice, inc, relu]))
    first = g.map_with(fn, kid)
    second = g.map_with(positive, kid)
    return E(
        lambda get: (get(first), get(second)),
        (first.want, second.want),
        "tuple",
        kid.static,
        kid.filtered,
        raw_tuple=True,
        kids=(first, second),
    )


def structural(kid: E, make: Callable[[Any], Any], want: Any, label: str, static: Any) -> E:
    return E(lambda get: make(get(kid)), want, label, static, kid.filtered, kids=(kid,))


def op_reverse(g: Gen, kid: E, depth: int) -> E | None:
    if not kid.shape:
        return None
    want = tuple(c[..., ::-1] for c in comps(kid.want))
    return structural(kid, ol.reverse, want if kid.is_tuple else want[0], "reverse", kid.static)


def op_transpose(g: Gen, kid: E, depth: int) -> E | None:
    want = tuple(c.T for c in comps(kid.want))
    return structural(
        kid, ol.transpose, want if kid.is_tuple else want[0], "transpose", kid.static[::-1]
    )


def op_slice(g: Gen, kid: E, depth: int) -> E | None:
    if not kid.shape:
        return None
    spec: list[Any] = []
    for n in kid.shape:
        if n and g.draw(st.booleans()):
            k = g.draw(st.integers(-n, n - 1))
            spec.append(k)
        else:
            spec.append(ALL)
    if all(s is ALL for s in spec) and g.draw(st.booleans()):
        return None
    sp = tuple(spec)
    index = tuple(slice(None) if s is ALL else s for s in sp)
    want = tuple(np.array(c[index]) for c in comps(kid.want))
    static = tuple(n for n, s in zip(kid.static, sp, strict=True) if s is ALL)
    return structural(
        kid, lambda x: ol.slice(x, sp), want if kid.is_tuple else want[0], f"slice {sp}", static
    )


def op_extend(g: Gen, kid: E, depth: int) -> E | None:
    r = len(kid.shape)
    if r >= 3:
        return None
    spec: list[Any] = [ALL] * r
    for _ in range(g.draw(st.integers(1, 3 - r))):
        spec.insert(g.draw(st.integers(0, len(spec))), g.draw(st.sampled_from([0, 1, 2, 3])))
    if not VARY_EXTENTS:  # an extent fixed by the place of the new axis (bug 2)
        spec = [s if s is ALL else (r + at + len(spec)) % 4 for at, s in enumerate(spec)]
    sp = tuple(spec)
    shape = tuple(s if s is not ALL else None for s in sp)
    it = iter(kid.shape)
    full = tuple(next(it) if s is None else s for s in shape)
    it = iter(kid.static)
    static = tuple(next(it) if s is None else s for s in shape)
    index = tuple(slice(None) if s is ALL else np.newaxis for s in sp)
    want = tuple(np.ascontiguousarray(np.broadcast_to(c[index], full)) for c in comps(kid.want))
    return structural(
        kid,
        lambda x: ol.replicate(sp, x) if sp[0] == 1 else ol.extend(sp, x),
        want if kid.is_tuple else want[0],
        f"extend {sp}",
        static,
    )


def op_reshape(g: Gen, kid: E, depth: int) -> E | None:
    if kid.filtered or kid.is_tuple:
        return None
    n = math.prod(kid.shape)
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [0]
    d = g.draw(st.sampled_from(divisors))
    shape = (n,) if g.draw(st.booleans()) or not n else (d, n // d)
    want = kid.want.reshape(shape)
    return structural(kid, lambda x: ol.reshape(x, shape), want, f"reshape {shape}", shape)


def op_gather(g: Gen, kid: E, depth: int) -> E | None:
    """backpermute of a vector by an index array (smvm's x[cols[k]])."""
    if kid.is_tuple or len(kid.shape) != 1 or not kid.shape[0]:
        return None
    m = g.draw(st.integers(0, 9))
    cols = np.array(
        g.draw(st.lists(st.integers(0, kid.shape[0] - 1), min_size=m, max_size=m)), np.int64
    )
    return structural(
        kid,
        lambda x: ol.backpermute((m,), gather_of(cols), x),
        kid.want[cols],
        f"gather {short(cols)}",
        (m,),
    )


def op_smvm(g: Gen, kid: E, depth: int) -> E | None:
    """fold_seg(add, z, zip_with(mul, vals, backpermute(x at cols)), row lengths)."""
    if kid.is_tuple or len(kid.shape) != 1 or not kid.shape[0] or kid.scalar_dt.kind == "b":  # type: ignore[union-attr]
        return None
    gathered = op_gather(g, kid, depth)
    assert gathered is not None
    nnz = gathered.shape[0]
    vals = g.leaf(1, kid.scalar_dt.name)  # type: ignore[union-attr]
    vals_arr = vals.want
    if vals_arr.shape[0] < nnz:
        vals_arr = np.resize(vals_arr, nnz) if vals_arr.size else np.zeros(nnz, vals_arr.dtype)
        vals = E(lambda get, v=vals_arr: v, vals_arr, f"vals{vals_arr.shape}", vals_arr.shape)
    prod = E(
        lambda get: ol.zip_with(mul, get(vals), get(gathered)),
        elementwise(mul, vals.want, gathered.want),
        "zip_with mul",
        (nnz,),
        kids=(vals, gathered),
    )
    seg = seg_lengths(g, nnz)
    z = z_for(add, prod.scalar_dt, g.draw(st.integers(0, 1 if g.exact else 2)))  # type: ignore[arg-type]
    starts = np.concatenate([[0], np.cumsum(seg)[:-1]]).astype(int) if len(seg) else []
    r = rows(prod.want)[0] if nnz else []
    out = [loop(add, z, r[s : s + k]) for s, k in zip(starts, seg, strict=True)]
    want = pack(out, (len(seg),), fold_dtypes(add, z, prod.dts))
    return E(
        lambda get: ol.fold_seg(add, z, get(prod), seg),
        want,
        f"smvm fold_seg {z!r} {seg.tolist()}",
        (len(seg),),
        kids=(prod,),
    )


OPS: dict[str, Callable[[Gen, E, int], E | None]] = {
    "map": op_map,
    "map2": op_map,
    "zip_with": op_zip,
    "zip_with2": op_zip,
    "fold": op_fold,
    "fold_seg": op_fold_seg,
    "scan": op_scan,
    "stencil": op_stencil,
    "permute": op_permute,
    "scatter": op_scatter,
    "filter": op_filter,
    "pair": op_pair,
    "reverse": op_reverse,
    "transpose": op_transpose,
    "slice": op_slice,
    "extend": op_extend,
    "reshape": op_reshape,
    "gather": op_gather,
    "smvm": op_smvm,
}


# -- the checks --------------------------------------------------------------------------


def check(root: E, explain: bool = False) -> None:
    what = root.describe()
    note(f"graph: {what}")
    node = build(root)
    got_s = ol.compute_s(node)
    assert dtypes_of(got_s) == root.dts, ("dtype", what, dtypes_of(got_s), root.dts)
    assert same_bits(got_s, root.want), ("compute_s", what, got_s, root.want)
    got_p = ol.compute_p(node)
    assert same_bits(got_p, got_s), ("compute_p differs from compute_s", what, got_p, got_s)
    again = ol.compute_s(node)  # the same object again: the warm (replayed) path
    assert same_bits(again, got_s), ("warm compute_s", what, again, got_s)
    again_p = ol.compute_p(node)
    assert same_bits(again_p, got_s), ("warm compute_p", what, again_p, got_s)
    anew = ol.compute_s(build(root))  # rebuilt: found by its structural key
    assert same_bits(anew, got_s), ("rebuilt", what, anew, got_s)
    if explain:
        text = ol.explain(build(root), target="cpu", file=io.StringIO())
        assert "kernel" in text


@fuzz(16)
@given(data=st.data(), depth=st.integers(2, DEPTH))
def test_random_graphs_equal_the_model(data: st.DataObject, depth: int) -> None:
    check(Gen(data).root(depth), explain=True)


@fuzz(8)
@given(data=st.data(), depth=st.integers(4, DEPTH + 2))
def test_deep_chains_equal_the_model(data: st.DataObject, depth: int) -> None:
    """A chain: every node's first child is a fresh node (no leaf before ``depth``)."""
    g = Gen(data)
    e = g.leaf()
    for _ in range(depth):
        op = g.draw(st.sampled_from(sorted(OPS)))
        made = OPS[op](g, e, 1)
        e = made if made is not None else g.fallback(e)
        g.pool.append(e)
    check(g.finish(e))


@fuzz(8)
@given(data=st.data(), depth=st.integers(1, DEPTH), long=st.booleans())
def test_cross_target_graphs_of_integers_equal_the_model(
    data: st.DataObject, depth: int, long: bool
) -> None:
    """``cross_target``: the wide tree for folds, the GPU's chunks of 32 for scans, on
    both CPU targets (the same bits). Integers and bools only: exact under any grouping,
    so the model is the same."""
    root = Gen(data, long=long, exact=True).root(depth)
    saved = ol.config.determinism
    ol.config.determinism = "cross_target"
    try:
        check(root)
    finally:
        ol.config.determinism = saved


@fuzz(4)
@given(data=st.data(), depth=st.integers(1, 3))
def test_long_rows_through_the_cpu_tree(data: st.DataObject, depth: int) -> None:
    """Vectors of 2 x 8192 elements or more: folds over them take the CPU's tree (its
    stages fused with their producers); scans stay one chunk below 2^20."""
    check(Gen(data, long=True).root(depth))
