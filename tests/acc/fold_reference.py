"""References for the collectives' tests: Python folds in the order of the reduction tree
that ``offload.acc.plan`` fixes, and a backend that runs every kernel on the IR
interpreter (the specification); the skeleton collectives (scans, permute, filter) are
computed by ``interp_collectives``, their user functions on the interpreter."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from offload import driver
from offload.acc import graph
from offload.acc.base import Collective, Context
from offload.acc.commute import commutes
from offload.acc.graph import COLLECTIVE, Scheduler, kind
from offload.acc.nodes import Zip
from offload.acc.plan import stages, wide_rule
from offload.delayed import Delayed
from offload.ir.interp import compute as interp_compute
from offload.options import CompileOptions
from tests.acc.interp_collectives import specify


def reduce_row(f: Callable[..., Any], z: Any, xs: Sequence[Any]) -> Any:
    """``acc = z; acc = f(acc, x)`` over ``xs``; ``z is None``: from the first element."""
    it = iter(xs)
    acc = next(it) if z is None else z
    with np.errstate(all="ignore"):
        for x in it:
            acc = f(acc, x)
    return acc


def row_items(a: Any, r: int) -> list[Any]:
    """Row ``r`` of the innermost axis as Python-visible elements (tuples for tuples)."""
    if isinstance(a, tuple):
        cols = [row_items(x, r) for x in a]
        return [tuple(c[k] for c in cols) for k in range(len(cols[0]))]
    flat = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
    return list(flat[r])


def tree_fold(f: Callable[..., Any], z: Any, xs: list[Any], rows: int, *, wide: bool) -> Any:
    """One row folded in the order of the tree ``plan.stages`` fixes for these sizes."""
    vals = xs
    lanes = z is not None and not isinstance(z, tuple)
    plan = stages(rows, len(xs), wide=wide, commutes=wide and commutes(f), lanes=lanes)
    for st in plan:
        if st.strided:
            parts = [vals[t :: st.p] for t in range(st.p)]
        else:
            parts = [vals[t * st.c : (t + 1) * st.c] for t in range(st.p)]
        vals = [lanes_fold(f, z, p, st.lanes) for p in parts]
    if z is None and not vals:
        raise ValueError("empty")
    return reduce_row(f, z, vals)


def lanes_fold(f: Callable[..., Any], z: Any, run: list[Any], lanes: int) -> Any:
    """A contiguous partial with ``lanes`` accumulators (``plan.Stage.lanes``): equal
    sub-runs, the remainder joining the last, their results folded in order."""
    if lanes == 1:
        return reduce_row(f, z, run)
    m = len(run) // lanes
    subs = [run[i * m : (i + 1) * m] for i in range(lanes - 1)] + [run[(lanes - 1) * m :]]
    accs = [reduce_row(f, z, sub) for sub in subs]
    return reduce_row(f, None, accs)


def fold_reference(f: Callable[..., Any], z: Any, a: Any, *, wide: bool) -> list[Any]:
    """Every row of ``a`` (an array or a tuple of arrays) folded, in row-major order."""
    shape = (a[0] if isinstance(a, tuple) else a).shape
    rows = math.prod(shape[:-1])
    return [tree_fold(f, z, row_items(a, r), rows, wide=wide) for r in range(rows)]


def as_result(values: list[Any], shape: tuple[int, ...], dtypes: Sequence[Any]) -> Any:
    """Python results as arrays of the given dtypes (a tuple of arrays for tuples)."""
    if len(dtypes) == 1:
        return np.array(values, dtype=dtypes[0]).reshape(shape)
    return tuple(
        np.array([v[k] for v in values], dtype=dt).reshape(shape) for k, dt in enumerate(dtypes)
    )


def same_bits(got: Any, want: Any) -> bool:
    """Equal values and dtypes (NaN equal to NaN), tuples element by element."""
    if isinstance(want, tuple):
        return isinstance(got, tuple) and all(map(same_bits, got, want))
    got, want = np.asarray(got), np.asarray(want)
    return (
        got.dtype == want.dtype
        and got.shape == want.shape
        and bool(np.array_equal(got, want, equal_nan=got.dtype.kind == "f"))
    )


class _InterpKernel:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def launch(self, shape: Any, outs: Any, captures: Any) -> None:
        for out, got in zip(outs, interp_compute(self.fn, shape, captures), strict=True):
            out[...] = got


class InterpBackend:
    """Every kernel run by the IR interpreter (named like a CPU target)."""

    name = "interp"

    def compile(self, fn: Any, options: Any) -> _InterpKernel:
        return _InterpKernel(fn)

    def allocate(self, shape: Any, dtypes: Any) -> list[Any]:
        return [np.empty(shape, dt) for dt in dtypes]

    def writable(self, out: Any) -> bool:
        return isinstance(out, np.ndarray)

    def prepare_outputs(self, outs: Any) -> None:
        pass

    def prepare_captures(self, captures: Any) -> list[Any]:
        return list(captures)

    def pinned_captures(self, values: Any) -> dict[int, Any]:
        return {}

    def launcher(self, fn: Any, kernel: Any, values: Any, general: Any) -> None:
        return None

    def explain(self, fn: Any, options: Any, shape: Any) -> str:
        return "== interpreted"


INTERP = InterpBackend()


class _InterpScheduler(Scheduler):
    """The graph scheduler with each skeleton collective computed by its specification
    (``interp_collectives.specify``) instead of its skeleton."""

    def __init__(self, ctx: Context, root: object, like: str) -> None:
        super().__init__(ctx, root)
        self.like = like

    def rewrite(self, node: object) -> object:
        if kind(node) != COLLECTIVE or id(node) in self.done:
            return super().rewrite(node)
        assert isinstance(node, Collective)
        self.keep.append(node)
        srcs = {attr: self.rewrite(src) for attr, src in node.sources()}
        arrays = {attr: self.arrays(src, attr) for attr, src in srcs.items()}
        result = specify(node, self.like, self.ctx.determinism, arrays)
        if result is None:  # no skeleton work (a ``Part`` picking from its source)
            result = node.materialise(self.ctx, arrays)
        out = graph._collective_result(result)
        self.done[id(node)] = out
        return out


def interpret(node: Any, determinism: str = "deterministic", like: str = "cpu-seq") -> Any:
    """``node`` computed stage by stage, every kernel on the interpreter; a skeleton
    collective by its specification on the chunk tree (scans) or task split (permute)
    that target ``like`` uses in ``determinism`` mode (folds take the CPU's tree, or the
    wide one under ``cross_target``, whatever ``like``)."""
    ctx = Context(INTERP, CompileOptions(verify=True), determinism, run=driver.run)
    tree = _InterpScheduler(ctx, node, like).rewrite(node)
    if isinstance(tree, Zip) and graph._zip_of_arrays(tree):
        return graph._unzip(tree)  # the root was a collective of a tuple result
    if not isinstance(tree, Delayed):  # the root was a collective: its array
        return tree
    return ctx.run_tree(tree, tuple(tree.shape), None, None)


def wide_for(target: str, determinism: str) -> bool:
    """Whether ``target`` (a backend name) uses the wide tree in ``determinism`` mode."""
    return wide_rule(target, determinism)
