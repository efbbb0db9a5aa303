"""The fold family: ``fold``, ``fold1``, ``fold_all``, ``fold_seg``.

Each is an element node (``Fold``, ``FoldSeg``) whose element is a sequential loop over
its part of the innermost axis: ``acc = z; for k in ...: acc = f(acc, a[..., k])``. So
a producer fuses into the loop (``fold_all(add, 0.0, zip_with(mul, x, y))`` reads ``x``
and ``y`` once, with no intermediate array) and a consumer that reads the result per
element fuses around it (``map(g, fold(...))``).

A fold with few rows and long rows would leave the machine idle: the scheduler calls
``Fold.expand``, which computes the stages of a reduction tree fixed by the sizes
(``plan.stages``) as ``Partials`` kernels and leaves the last, short sequential fold as
a ``Fold`` over the partials, to fuse with the consumer. ``z`` must be the combine's
neutral element (each partial starts from it); ``f`` must be associative.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload.acc import fold_tail
from offload.acc.base import Context, Scheduled, length_known
from offload.acc.combine import returns_located
from offload.acc.commute import commutes
from offload.acc.nodes import Leaf, as_arrays_source, as_source
from offload.acc.plan import seg_lanes, stages, wide_rule
from offload.acc.skeletons.operands import python_ints_fit
from offload.acc.values import items_key, lower_items, shape_of, to_items
from offload.delayed import Delayed, reshape
from offload.frontend.nodes import ElementLowering, Index, NodeFunction, NodePath
from offload.frontend.operators import plain
from offload.frontend.values import Scalar, TupleVal, Val
from offload.runtime.memory import use

NO_Z = None
"""``z`` of a ``fold1``: the first element starts the accumulator."""


STRIDED_UNROLL = 8
"""Elements a strided partial reads before it folds them, in order: ``acc = f(...f(f(acc,
a[k]), a[k + p])..., a[k + 7p])`` -- the same combines in the same order as one at a time
(the same bits), but eight loads in flight per thread instead of one, which a GPU needs
to keep its memory busy at one resident partial per thread (an H100 at full occupancy
holds about 270,000 threads; Little's law at 3.35 TB/s and ~600 ns asks for about 2 MB
in flight, two float32 loads a thread; an H200's 4.8 TB/s more). Measured on an H200
(run 22, the 2^28 float32 sum): 4 loads 287 µs, 8 loads 268, 16 loads 287 (registers),
``cupy.sum`` 242."""


def _plain_array(x: object) -> bool:
    """A NumPy or CuPy array, which the fold tail reads as it is (another library's array
    -- a torch or JAX tensor -- takes the element kernel's capture path first)."""
    t = type(x)
    return t is np.ndarray or (t.__name__ == "ndarray" and t.__module__.startswith("cupy"))


def _chunk_end(start: int, c: int, n: int) -> int:
    return min(start + c, n)


def _strided_groups(t: int, n: int, p: int, u: int) -> int:
    """Full groups of ``u`` elements ``t, t + p, ...`` below ``n`` (no branch: a run-time
    divisor under a branch keeps a ``compute_p`` kernel from LLVM's loop vectoriser,
    ``offload.emit.division.divides_under_a_branch``)."""
    return ((max(n - t, 0) + p - 1) // p) // u


def _scalar(v: Val) -> Scalar:
    assert isinstance(v, Scalar)
    return v


def _fold_loop(  # noqa: PLR0917  (the loop's parts, from the node that owns it)
    lo: ElementLowering,
    f: Callable[..., Any],
    f_path: NodePath,
    z: Val | None,
    read: Callable[[Scalar], Val],
    start: Scalar,
    stop: Scalar,
    step: Scalar,
) -> Val:
    """``acc = z (else read(start)); for k in range(start, stop, step): acc = f(acc,
    read(k))``."""
    if z is None:
        z, start = read(start), lo.binop("add", start, step)

    def body(k: Scalar, acc: Val) -> Val:
        return lo.call(f, f_path, [acc, read(k)])

    with returns_located(f):
        return lo.loop(start, stop, step, z, body)


@dataclass(frozen=True, eq=False)
class Fold(Scheduled):
    """``a`` reduced along its innermost axis with ``f`` from ``z`` (``NO_Z``: ``fold1``)."""

    replayable = True

    f: Callable[..., Any]
    z: object
    """The neutral element as held (``values.to_items``), or ``NO_Z``."""
    a: Any
    n: int
    """The innermost extent of ``a`` (captured: a new size does not compile again)."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.a)[:-1]

    def refit(self) -> Fold:
        """This fold with ``n`` taken anew from ``a`` (``a`` was a filter, whose length the
        scheduler knows only once computed); ``fold1``'s empty-axis ``ValueError``."""
        n = shape_of(self.a)[-1]
        if n == self.n:
            return self
        if n == 0 and self.z is NO_Z:
            raise ValueError("fold1 of an empty axis: there is no first element (use fold)")
        return replace(self, n=n)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("f", self.f),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("a", self.a),)

    def static_key(self) -> tuple[object, ...]:
        return ("fold", None if self.z is NO_Z else items_key(self.z))

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        a_path, rows = (*path, ("attr", "a")), list(idx)
        z = None if self.z is NO_Z else lower_items(lo, self.z, (*path, ("attr", "z")))
        n = _scalar(lo.captured(self.n, (*path, ("attr", "n"))))

        def read(k: Scalar) -> Val:
            return lo.element(self.a, a_path, [*rows, k])

        one = lo.constant(1)
        return _fold_loop(lo, self.f, (*path, ("attr", "f")), z, read, lo.constant(0), n, one)

    def expand(self, ctx: Context) -> object | None:
        rows = math.prod(self.shape)
        wide = wide_rule(ctx.backend.name, ctx.determinism)
        plan = stages(
            rows,
            self.n,
            wide=wide,
            commutes=wide and commutes(self.f),
            lanes=self.z is not NO_Z and items_key(self.z) == "s",
        )
        if not plan:
            return None
        src: Any = self.a
        if _plain_array(src) and fold_tail.applies(ctx, plan):
            # An array read as it is: the whole tree in one launch where the tail can read
            # its rows (``fold_src.GLOBAL_THREADS``), the same bits.
            whole: object = fold_tail.finish(ctx, self, self.z is not NO_Z, src, plan)
            if whole is not None:
                return whole
        for i, st in enumerate(plan):
            part = Partials(self.f, self.z, src, st.n, st.p, st.c, st.strided, st.lanes)
            what = f"fold stage: {rows} row(s) x {st.p} partials of {st.c}" + (
                " (strided)" if st.strided else f" ({st.lanes} lanes)" if st.lanes > 1 else ""
            )
            computed = ctx.compute(part, what)
            rest = plan[i + 1 :]
            if fold_tail.applies(ctx, rest):  # the rest of the tree in one launch (same bits)
                done: object = fold_tail.finish(ctx, self, self.z is not NO_Z, computed, rest)
                if done is not None:
                    return done
            src = as_arrays_source(computed)
        return replace(self, a=src, n=plan[-1].p)


@dataclass(frozen=True, eq=False)
class Partials(Delayed):
    """One stage of a reduction tree (``plan.Stage``): element ``(*row, t)`` folds part
    ``t`` of row ``row`` of ``a``: the ``c`` consecutive elements from ``t * c``, or
    (``strided``) the elements ``t, t + p, t + 2p, ...``."""

    f: Callable[..., Any]
    z: object
    a: Any
    n: int
    p: int
    c: int
    strided: bool
    lanes: int = 1
    """Accumulators of a contiguous partial (``plan.Stage.lanes``; a static choice)."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return (*shape_of(self.a)[:-1], self.p)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("f", self.f),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("a", self.a),)

    def static_key(self) -> tuple[object, ...]:
        z_key = None if self.z is NO_Z else items_key(self.z)
        return ("partials", z_key, self.strided, self.lanes)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        a_path, rows, t = (*path, ("attr", "a")), list(idx[:-1]), idx[-1]
        z = None if self.z is NO_Z else lower_items(lo, self.z, (*path, ("attr", "z")))
        n = _scalar(lo.captured(self.n, (*path, ("attr", "n"))))

        def read(k: Scalar) -> Val:
            return lo.element(self.a, a_path, [*rows, k])

        f_path = (*path, ("attr", "f"))
        if self.strided:
            p = _scalar(lo.captured(self.p, (*path, ("attr", "p"))))
            if z is None:
                z, t = read(t), lo.binop("add", t, p)
            groups_path = (*path, ("attr", "strided_groups"))
            u = lo.constant(STRIDED_UNROLL)
            groups = _scalar(lo.call(_strided_groups, groups_path, [t, n, p, u]))
            up = lo.binop("mul", u, p)

            def group(m: Scalar, acc: Val) -> Val:
                base = lo.binop("add", t, lo.binop("mul", m, up))
                ks = [base]
                for _ in range(STRIDED_UNROLL - 1):
                    ks.append(lo.binop("add", ks[-1], p))
                for v in [read(k) for k in ks]:  # (every read first: loads in flight)
                    acc = lo.call(self.f, f_path, [acc, v])
                return acc

            with returns_located(self.f):
                acc = lo.loop(lo.constant(0), groups, lo.constant(1), z, group)
            rest = lo.binop("add", t, lo.binop("mul", groups, up))
            return _fold_loop(lo, self.f, f_path, acc, read, rest, n, p)
        c = _scalar(lo.captured(self.c, (*path, ("attr", "c"))))
        start = lo.binop("mul", t, c)
        stop = _scalar(lo.call(_chunk_end, (*path, ("attr", "chunk_end")), [start, c, n]))
        if self.lanes == 1 or z is None:
            return _fold_loop(lo, self.f, f_path, z, read, start, stop, lo.constant(1))
        return _lanes_loop(lo, self.f, f_path, z, read, start, stop, self.lanes)


def _lanes_loop(  # noqa: PLR0917  (the loop's parts, from the node that owns it)
    lo: ElementLowering,
    f: Callable[..., Any],
    f_path: NodePath,
    z: Val,
    read: Callable[[Scalar], Val],
    start: Scalar,
    stop: Scalar,
    lanes: int,
) -> Val:
    """``[start, stop)`` cut into ``lanes`` sub-runs of ``m = (stop - start) // lanes``
    elements folded in lockstep from ``z``, the remainder folded into the last, then the
    sub-runs' results folded in order (``plan.Stage.lanes``)."""
    m = lo.binop("floordiv", lo.binop("sub", stop, start), lo.constant(lanes))
    bases = [lo.binop("add", start, lo.binop("mul", m, lo.constant(i))) for i in range(lanes)]

    def body(k: Scalar, acc: Val) -> Val:
        assert isinstance(acc, TupleVal)
        return TupleVal(
            tuple(
                lo.call(f, f_path, [a, read(lo.binop("add", base, k))])
                for a, base in zip(acc.items, bases, strict=True)
            )
        )

    one = lo.constant(1)
    with returns_located(f):
        accs = lo.loop(lo.constant(0), m, one, TupleVal((z,) * lanes), body)
    assert isinstance(accs, TupleVal)
    tail_start = lo.binop("add", start, lo.binop("mul", m, lo.constant(lanes)))
    last = _fold_loop(lo, f, f_path, accs.items[-1], read, tail_start, stop, one)
    out = accs.items[0]
    for a in (*accs.items[1:-1], last):
        out = lo.call(f, f_path, [out, a])
    return out


@dataclass(frozen=True, eq=False)
class FoldSeg(Scheduled):
    """``a`` reduced along its innermost axis in segments: element ``(*row, s)`` folds
    ``a[*row, offsets[s]:offsets[s + 1]]`` from ``z``."""

    replayable = True

    f: Callable[..., Any]
    z: object
    a: Any
    offsets: Any
    """``nseg + 1`` int64 segment starts (the exclusive sum of the lengths, then the total)."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return (*shape_of(self.a)[:-1], shape_of(self.offsets)[0] - 1)

    def refit(self) -> FoldSeg:
        """The segment lengths checked against ``a`` as computed (``a`` held a filter)."""
        n, total = shape_of(self.a)[-1], int(self.offsets[-1])
        if total != n:
            _segments_mismatch(total, n)
        return self

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("f", self.f),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("a", self.a), ("offsets", self.offsets))

    def static_key(self) -> tuple[object, ...]:
        return ("fold_seg", items_key(self.z))

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        a_path, rows, s = (*path, ("attr", "a")), list(idx[:-1]), _scalar(idx[-1])
        o_path = (*path, ("attr", "offsets"))
        z = lower_items(lo, self.z, (*path, ("attr", "z")))
        start = _scalar(lo.element(self.offsets, o_path, [s]))
        stop = _scalar(lo.element(self.offsets, o_path, [lo.binop("add", s, lo.constant(1))]))

        def read(k: Scalar) -> Val:
            return lo.element(self.a, a_path, [*rows, k])

        one = lo.constant(1)
        return _fold_loop(lo, self.f, (*path, ("attr", "f")), z, read, start, stop, one)

    def expand(self, ctx: Context) -> object | None:
        segments, n = self.shape[-1], shape_of(self.a)[-1]
        wide = wide_rule(ctx.backend.name, ctx.determinism)
        lanes = seg_lanes(segments, n, wide=wide, commutes=wide and commutes(self.f))
        if lanes == 1:
            return None
        part = SegPartials(self.f, self.z, self.a, self.offsets, lanes)
        what = f"fold_seg stage: {segments} segment(s) x {lanes} lanes"
        src = as_arrays_source(ctx.compute(part, what))
        return Fold(self.f, self.z, src, lanes)


@dataclass(frozen=True, eq=False)
class SegPartials(Delayed):
    """The lanes of a segmented fold: element ``(*row, s, t)`` folds the elements
    ``offsets[s] + t, offsets[s] + t + lanes, ...`` of segment ``s`` (``plan.seg_lanes``)."""

    f: Callable[..., Any]
    z: object
    a: Any
    offsets: Any
    lanes: int

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return (*shape_of(self.a)[:-1], shape_of(self.offsets)[0] - 1, self.lanes)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("f", self.f),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("a", self.a), ("offsets", self.offsets))

    def static_key(self) -> tuple[object, ...]:
        return ("seg_partials", items_key(self.z))

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        a_path, rows = (*path, ("attr", "a")), list(idx[:-2])
        s, t = _scalar(idx[-2]), _scalar(idx[-1])
        o_path = (*path, ("attr", "offsets"))
        z = lower_items(lo, self.z, (*path, ("attr", "z")))
        start = _scalar(lo.element(self.offsets, o_path, [s]))
        stop = _scalar(lo.element(self.offsets, o_path, [lo.binop("add", s, lo.constant(1))]))
        lanes = _scalar(lo.captured(self.lanes, (*path, ("attr", "lanes"))))

        def read(k: Scalar) -> Val:
            return lo.element(self.a, a_path, [*rows, k])

        first = lo.binop("add", start, t)
        return _fold_loop(lo, self.f, (*path, ("attr", "f")), z, read, first, stop, lanes)


def _check_f(f: Any) -> Any:
    """``f`` as a node holds it (a known built-in as its plain function)."""
    if not callable(f):
        raise TypeError(f"the combining function must be callable, not {type(f).__name__}")
    f = plain(f)
    if isinstance(f, types.BuiltinFunctionType | np.ufunc):
        raise TypeError(
            f"fold's combine function must be a plain Python function or lambda, not "
            f"{type(f).__name__} {getattr(f, '__name__', '')!r}: write a def that computes it"
        )
    return f


def fold(f: Callable[..., Any], z: Any, a: Any) -> Fold:
    """Reduce the innermost axis of ``a`` with the associative ``f`` and its neutral
    element ``z``: rank ``r`` -> ``r - 1`` (an empty axis gives ``z``). ``a`` is an
    array, a delayed array or a tuple of them (then ``f`` combines tuples and ``z`` is a
    tuple); the result's dtype is what ``acc = z; acc = f(acc, x)...`` gives in Python."""
    f = _check_f(f)
    a = as_source(a)
    shape = shape_of(a)
    if not shape:
        raise ValueError("fold needs an array of at least one axis (use fold_all)")
    held = to_items(z, "the neutral element z")
    python_ints_fit(z, a, "fold: the neutral element")
    return Fold(f, held, a, shape[-1])


def fold1(f: Callable[..., Any], a: Any) -> Fold:
    """``fold`` without a neutral element: each row starts from its first element;
    ``ValueError`` for an empty innermost axis."""
    f = _check_f(f)
    a = as_source(a)
    shape = shape_of(a)
    if not shape:
        raise ValueError("fold1 needs an array of at least one axis")
    if shape[-1] == 0:
        raise ValueError("fold1 of an empty axis: there is no first element (use fold)")
    return Fold(f, NO_Z, a, shape[-1])


def fold_all(f: Callable[..., Any], z: Any, a: Any) -> Fold:
    """Reduce every element of ``a`` (row-major order) with ``f`` from ``z``: a 0-d
    array (a tuple of them for tuples)."""
    f = _check_f(f)
    a = as_source(a)
    shape = shape_of(a)
    n = math.prod(shape)
    held = to_items(z, "the neutral element z")
    python_ints_fit(z, a, "fold_all: the neutral element")
    if len(shape) != 1:
        a = _flat(a, n)
    return Fold(f, held, a, n)


def _flat(a: Any, n: int) -> Any:
    if isinstance(a, np.ndarray) and a.flags.c_contiguous:
        return a.reshape(n)
    if not isinstance(a, Delayed):
        a = Leaf(a)
    return reshape(a, (n,))


def fold_seg(f: Callable[..., Any], z: Any, a: Any, seg: Any) -> FoldSeg:
    """Reduce the innermost axis of ``a`` in segments: ``seg`` is a 1-D integer array of
    segment lengths (non-negative, summing to the axis length); segment ``s`` of each row
    folds its elements from ``z`` (an empty segment gives ``z``). Rank ``r`` -> ``r`` with
    an innermost extent of ``len(seg)``."""
    f = _check_f(f)
    a = as_source(a)
    shape = shape_of(a)
    if not shape:
        raise ValueError("fold_seg needs an array of at least one axis")
    held = to_items(z, "the neutral element z")
    python_ints_fit(z, a, "fold_seg: the neutral element")
    lengths = _host_lengths(seg)
    if lengths.size and int(lengths.min()) < 0:
        raise ValueError("fold_seg: segment lengths must be non-negative")
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if int(offsets[-1]) != shape[-1] and (length_known(a) or int(offsets[-1]) > shape[-1]):
        # (over a filter, whose length is known once computed: ``FoldSeg.refit``)
        _segments_mismatch(int(offsets[-1]), shape[-1])
    # offload's own array, never written: frozen, so compute_g copies it to the device
    # once (its cached copy), not on every call of a kept node
    use(offsets)
    return FoldSeg(f, held, a, offsets)


def _segments_mismatch(total: int, n: int) -> None:
    raise ValueError(f"fold_seg: the segment lengths sum to {total} but the axis has {n} elements")


def _host_lengths(seg: Any) -> np.ndarray[Any, np.dtype[np.int64]]:
    if isinstance(seg, Delayed):
        raise TypeError("fold_seg: the segment lengths must be an array (compute it first)")
    host = seg.get() if hasattr(seg, "get") and not isinstance(seg, np.ndarray) else seg
    arr = np.asarray(host)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(
            f"fold_seg: the segment lengths must be a 1-D integer array, not "
            f"{arr.ndim}-D {arr.dtype}"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
        raise ValueError("fold_seg: a segment length does not fit int64")
    return arr.astype(np.int64)
