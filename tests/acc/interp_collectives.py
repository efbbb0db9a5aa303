"""The specification of the skeleton collectives (scans, ``permute``/``scatter``,
``filter``), with every user function run by the IR interpreter.

What is interpreted, and what is not. A skeleton collective's kernels are not IR: they
are Python text (``offload.acc.skeletons.scan_src``, ``permute_src``) that numba compiles
for the CPU (``njit``) and the GPU (``cuda.jit``), wrapped around the user's function --
a scan's combine, a permute's combine and index function, a filter's predicate -- which
the frontend lowers to IR and ``offload.acc.combine`` emits as a Python function. Some
glue is NumPy on the host: the segment layout of a segmented scan, the exclusive sum of
the filter's chunk counts, the GPU's sort of the permute destinations. So here:

* each user function is run by the interpreter (``offload.ir.interp.evaluate``) on its
  IR as the frontend lowered it (before the pass pipeline), its operands bound by their
  capture paths (the ``x<k>`` leaves of ``combine._Operands``), not by position;
* the skeleton around it is this module's Python, written from the skeletons' documented
  algorithm, not from their text: a scan is the inclusive scan of a virtual row
  (neutral element first, reversed for a right scan, head flags for segments) by the
  chunked reduce-then-scan whose chunk is ``scan.chunk_size`` of the target mirrored
  (``like``); a permute applies ``f(new, old)`` in source order (``compute_p``'s
  per-task rows, where ``permute.cpu_tasks`` asks for them, folded in task order); a
  filter keeps the elements whose predicate is non-zero, in order;
* results are cast to the operands' dtypes as the skeletons cast them (C casts).

The element trees around a collective (its sources, its consumers), folds and stencils
run on the interpreter backend of ``fold_reference`` kernel by kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from offload.acc import permute as P
from offload.acc import scan as S
from offload.acc import scan_job as SJ
from offload.acc.combine import ScalarFunction, compile_combine, compile_index_function
from offload.acc.filter import Filter
from offload.acc.skeletons.operands import (
    combine_for,
    components,
    neutral,
    pack,
    source_dtypes,
    source_shape,
)
from offload.ir.interp import evaluate

Dt = np.dtype[Any]
Item = tuple[Any, ...]
"""One element of a (possibly tuple) array: one NumPy scalar per component."""


def cast(values: Sequence[Any], dts: Sequence[Dt]) -> Item:
    """``values`` cast to ``dts`` as the skeletons' ``np.<dtype>(r)`` casts them (C casts:
    integers wrap, non-zero is ``True``)."""
    with np.errstate(all="ignore"):
        return tuple(np.asarray(v).astype(dt)[()] for v, dt in zip(values, dts, strict=True))


class Interpreted:
    """A compiled scalar function (``combine.ScalarFunction``) called through the
    interpreter: ``fn(*operands)`` with each operand an ``Item`` (an index function:
    ints), returning the results as an ``Item`` in the IR's result types."""

    def __init__(self, sf: ScalarFunction) -> None:
        self.ir = sf.lowered.ir
        self.values = sf.read()  # the user's captures, read once per materialisation
        self.slots: dict[int, int] = {}
        """Capture position -> operand leaf (``x<k>`` of the operand node)."""
        self.dtypes: dict[int, Dt] = {}
        if sf.operand_node:
            for pos, path in enumerate(sf.lowered.captures):
                steps = path.steps
                if len(steps) == 1 and steps[0][0] == "attr" and str(steps[0][1])[:1] == "x":
                    self.slots[pos] = int(str(steps[0][1])[1:])
                    self.dtypes[pos] = np.dtype(self.values[pos].dtype)
        self.operand_node = sf.operand_node

    def __call__(self, *operands: Item) -> Item:
        leaves = [v for op in operands for v in op]
        if not self.operand_node:  # an index function: the operands are the index
            return evaluate(self.ir, [int(i) for i in leaves], self.values)
        caps = list(self.values)
        for pos, leaf in self.slots.items():
            caps[pos] = np.array([leaves[leaf]], dtype=self.dtypes[pos])
        return evaluate(self.ir, (0,), caps)


def host_components(value: Any) -> list[np.ndarray[Any, Any]]:
    """A computed source's arrays on the host, C-contiguous."""
    out = []
    for c in components(value):
        if hasattr(c, "get") and not isinstance(c, np.ndarray):
            c = c.get()
        out.append(np.ascontiguousarray(c))
    return out


# -- scans ------------------------------------------------------------------------------


def sequential_scan(cmb: Callable[[Item, Item], Item], v: list[Item]) -> list[Item]:
    """Inclusive scan of ``v``, left to right."""
    out: list[Item] = []
    for e in v:
        out.append(e if not out else cmb(out[-1], e))
    return out


def tree_scan(cmb: Callable[[Item, Item], Item], v: list[Item], chunk: int) -> list[Item]:
    """Inclusive scan of ``v`` by chunks of ``chunk``: each chunk's total folded left to
    right, the totals scanned the same way (recursively), each chunk scanned again from
    the previous chunk's carry (``scan_src``'s documented tree)."""
    nch = -(-len(v) // chunk)
    if nch <= 1:
        return sequential_scan(cmb, v)
    parts = [v[c * chunk : (c + 1) * chunk] for c in range(nch)]
    totals = [sequential_scan(cmb, p)[-1] for p in parts]
    carries = tree_scan(cmb, totals, chunk)
    out: list[Item] = []
    for c, p in enumerate(parts):
        acc = p[0] if c == 0 else cmb(carries[c - 1], p[0])
        out.append(acc)
        for e in p[1:]:
            acc = cmb(acc, e)
            out.append(acc)
    return out


def _row(xs: list[np.ndarray[Any, Any]], r: int) -> list[Item]:
    return [tuple(x[r, j] for x in xs) for j in range(xs[0].shape[1])]


def scan_spec(node: S.Scan, like: str, mode: str, sources: Mapping[str, Any]) -> Any:
    """``node`` (any scan form) as ``Scan.materialise`` documents it, on target ``like``'s
    chunk tree in ``mode``."""
    dts = source_dtypes(node.a)
    f = Interpreted(combine_for(node.f, dts, f"{node.name}'s combine function"))

    def cmb(a: Item, b: Item) -> Item:
        return cast(f(b, a) if node.right else f(a, b), dts)

    xs = host_components(sources["a"])
    *lead, n = xs[0].shape
    rows = math.prod(lead)
    xs = [x.reshape(rows, n) for x in xs]
    z = tuple(neutral(node.z, dts, node.name)) if node.z is not None else None
    seqs: list[list[Item]] = []
    for r in range(rows):
        row = _row(xs, r)
        if node.seg is not None:
            lengths = [int(k) for k in host_components(sources["seg"])[0]]
            seqs.append(_segmented(f, dts, z, row, lengths, like, mode))
            continue
        if node.right:
            row.reverse()
        v = ([z] if z is not None else []) + row
        out = tree_scan(cmb, v, SJ.chunk_size(like, len(v), mode))
        seqs.append(out[::-1] if node.right else out)
    length = n + (0 if z is None else 1 if node.seg is None else source_shape(node.seg)[0])
    outs = [np.empty((rows, length), dt) for dt in dts]
    for r, seq in enumerate(seqs):
        for k, o in enumerate(outs):
            o[r, :] = [e[k] for e in seq]
    shaped = [o.reshape(*lead, length) for o in outs]
    if not node.total:
        return pack(shaped)
    if node.right:
        return pack([o[..., 1:] for o in shaped]), pack([o[..., 0] for o in shaped])
    return pack([o[..., :n] for o in shaped]), pack([o[..., n] for o in shaped])


def _segmented(
    f: Interpreted,
    dts: tuple[Dt, ...],
    z: Item | None,
    row: list[Item],
    lengths: list[int],
    like: str,
    mode: str,
) -> list[Item]:
    """One row of a segmented scan: the plain scan of (head flag, value) pairs under
    ``(fa, a) . (fb, b) = (fa | fb, b if fb else a . b)``, each segment's neutral element
    in front of it where there is one (an empty segment without one has no head)."""
    if sum(lengths) != len(row) or min(lengths, default=0) < 0:
        raise ValueError(f"bad segment lengths {lengths} for a row of {len(row)}")

    def cmb(a: Item, b: Item) -> Item:
        if b[0]:
            return (np.uint8(1), *b[1:])
        return (a[0], *cast(f(a[1:], b[1:]), dts))

    v: list[Item] = []
    start = 0
    for k in lengths:
        seg = [(np.uint8(0), *e) for e in row[start : start + k]]
        start += k
        if z is not None:
            seg.insert(0, (np.uint8(0), *z))
        if seg:
            seg[0] = (np.uint8(1), *seg[0][1:])
        v += seg
    out = tree_scan(cmb, v, SJ.chunk_size(like, len(v), mode))
    return [e[1:] for e in out]


# -- permute and scatter ----------------------------------------------------------------


def _reader(to: Any) -> Callable[[int], Any]:
    def ix(i: int) -> Any:
        return to[i]

    return ix


def destinations(node: P.Permute, sources: Mapping[str, Any]) -> list[tuple[int, ...] | None]:
    """Each source element's destination in row-major source order (``None``: dropped by
    ``IGNORE``); an index outside the result raises ``PermuteIndexError`` for the first
    such element, as ``compute_s`` does."""
    sshape, dshape = source_shape(node.a), source_shape(node.defaults)
    if isinstance(node, P.Scatter):
        ix = _reader(host_components(sources["to"])[0])
    else:
        ix = node.ix
    ixf = Interpreted(compile_index_function(ix, len(sshape), "ixf", f"{node.name}'s index"))
    out: list[tuple[int, ...] | None] = []
    for i in np.ndindex(*sshape):
        d = tuple(int(np.asarray(c).astype(np.int64)) for c in ixf(i))
        if len(d) != len(dshape):
            raise AssertionError(f"index function gave {d} for a result of rank {len(dshape)}")
        if any(c == P.IGNORE for c in d):
            out.append(None)
        elif any(not 0 <= c < k for c, k in zip(d, dshape, strict=True)):
            raise P.PermuteIndexError(
                f"{node.name}: the index function sends source element {tuple(i)} to {d}, "
                f"outside the result's shape {dshape} (return IGNORE to drop an element)"
            )
        else:
            out.append(d)
    return out


def permute_spec(node: P.Permute, like: str, mode: str, sources: Mapping[str, Any]) -> Any:
    """``out = defaults; out[d] = f(a[i], out[d])`` in source order; on ``compute_p``
    (``like="cpu-par"``, deterministic mode) with ``cpu_tasks`` tasks: each task folds
    its slice of the sources into its own row in order, then the rows are folded into
    ``out`` in task order."""
    dts = source_dtypes(node.defaults)
    dshape = source_shape(node.defaults)
    f = Interpreted(compile_combine(node.f, (dts, dts), "ol_comb", f"{node.name}'s combine"))
    outs = [d.reshape(-1).copy() for d in host_components(sources["defaults"])]
    xs = [x.reshape(-1) for x in host_components(sources["a"])]
    with np.errstate(all="ignore"):
        xs = [x.astype(dt) for x, dt in zip(xs, dts, strict=True)]
    dests = destinations(node, sources)
    flat = [None if d is None else int(np.ravel_multi_index(d, dshape)) for d in dests]
    n, m = len(flat), len(outs[0])
    tasks = P.cpu_tasks(n, m) if like == "cpu-par" and mode == "deterministic" else 1
    if tasks == 1:  # one pass in source order, straight into the outputs
        parts = [[(d, tuple(x[s] for x in xs)) for s, d in enumerate(flat) if d is not None]]
    else:  # each task's slice into its own row (the first value as it is), in order
        per = -(-n // tasks)
        parts: list[list[tuple[int, Item]]] = []
        for t in range(tasks):
            row: dict[int, Item] = {}
            for s in range(t * per, min(n, (t + 1) * per)):
                d = flat[s]
                if d is not None:
                    new = tuple(x[s] for x in xs)
                    row[d] = cast(f(new, row[d]), dts) if d in row else new
            parts.append([(d, row[d]) for d in sorted(row)])
    for part in parts:
        for d, new in part:
            got = cast(f(new, tuple(o[d] for o in outs)), dts)
            for o, v in zip(outs, got, strict=True):
                o[d] = v
    return pack([o.reshape(dshape) for o in outs])


# -- filter -----------------------------------------------------------------------------


def filter_spec(node: Filter, sources: Mapping[str, Any]) -> Any:
    """The elements whose predicate is non-zero, in order."""
    dts = source_dtypes(node.a)
    xs = host_components(sources["a"])
    pred = Interpreted(compile_combine(node.pred, (dts,), "pred", "filter's predicate"))
    keep = [bool(pred(tuple(x[i] for x in xs))[0]) for i in range(len(xs[0]))]
    return pack([x[np.array(keep, dtype=bool)] if keep else x[:0].copy() for x in xs])


def specify(node: Any, like: str, mode: str, sources: Mapping[str, Any]) -> Any:
    """The specified result of the collective ``node`` given its sources as arrays;
    ``None`` for a collective without skeleton work (``scan.Part``: its ``materialise``
    picks from its source)."""
    if isinstance(node, S.Scan):
        return scan_spec(node, like, mode, sources)
    if isinstance(node, P.Permute):
        return permute_spec(node, like, mode, sources)
    if isinstance(node, Filter):
        return filter_spec(node, sources)
    if isinstance(node, S.Part):
        return None
    raise NotImplementedError(f"no interpreter specification for {type(node).__name__}")
