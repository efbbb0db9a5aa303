"""Lowering a delayed-array tree into ONE element function.

Each node is lowered at a symbolic index: element functions are inlined into each other,
a NumPy leaf becomes a captured-array ``LOAD``, ``reshape`` becomes index arithmetic. No
intermediate array exists in the result. Capture paths are relative to the root of the tree
(``("attr", "x")``, ``("attr", "fn")``, then the function's own steps), so a structurally
identical tree with other leaf arrays re-uses the lowering with its own values.
"""

from __future__ import annotations

import math
from typing import Any

import offload.delayed as dl
from offload.diagnostics import TypeMismatch
from offload.frontend.captures import capture_kind, is_array
from offload.frontend.stmt import StmtLowerer
from offload.frontend.values import ArrayRef, Getter, Scalar, Step, Val, describe, flatten
from offload.ir.builder import Builder
from offload.ir.types import I64


def is_delayed(obj: object) -> bool:
    return isinstance(obj, dl.Delayed)


def delayed_key(target: object) -> tuple[object, ...]:
    """A structural key: equal for two separately built but identical trees (same
    functions, same leaf array dtypes and ranks), so that a driver can reuse a lowering."""
    if isinstance(target, dl.Delayed):
        parts: list[object] = [type(target).__name__]
        for name in ("fn", "ix_fn"):
            if hasattr(target, name):
                parts.append(getattr(target, name))
        if isinstance(target, dl.Reshape):
            parts.extend((target.shape, _shape(target.x)))
        for name in ("x", "y"):
            if hasattr(target, name):
                parts.append(delayed_key(getattr(target, name)))
        return tuple(parts)
    return capture_kind(target)


class DelayedLowerer(StmtLowerer):
    """Adds delayed-array nodes (and the ``get`` of ``traverse``) to the lowerer."""

    def lower_node(self, d: Any, path: tuple[Step, ...], idx: list[Scalar]) -> Val:
        """The element of ``d`` (reached from the root by ``path``) at index ``idx``."""
        if not isinstance(d, dl.Delayed):
            return self._leaf(d, path, idx)
        if isinstance(d, dl.FromFunction):
            return self.inline(d.fn, (*path, ("attr", "fn")), list(idx), {}, None)
        if isinstance(d, dl.Map):
            v = self.lower_node(d.x, (*path, ("attr", "x")), idx)
            return self.inline(d.fn, (*path, ("attr", "fn")), [v], {}, None)
        if isinstance(d, dl.ZipWith):
            vx = self.lower_node(d.x, (*path, ("attr", "x")), idx)
            vy = self.lower_node(d.y, (*path, ("attr", "y")), idx)
            return self.inline(d.fn, (*path, ("attr", "fn")), [vx, vy], {}, None)
        if isinstance(d, dl.Backpermute):
            t = self.inline(d.ix_fn, (*path, ("attr", "ix_fn")), list(idx), {}, None)
            src = self._index_scalars(t, len(_shape(d.x)), "backpermute's index function")
            return self.lower_node(d.x, (*path, ("attr", "x")), src)
        if isinstance(d, dl.Traverse):
            getter = Getter(d.x, (*path, ("attr", "x")))
            return self.inline(d.fn, (*path, ("attr", "fn")), [getter, *idx], {}, None)
        if isinstance(d, dl.Reshape):
            return self.lower_node(d.x, (*path, ("attr", "x")), self._unravel(d, idx))
        raise TypeMismatch.at(f"unknown delayed array node {type(d).__name__}", None)

    def call_getter(self, getter: Getter, args: list[Val], node: Any) -> Val:
        ndim = len(_shape(getter.source))
        if len(args) != ndim:
            raise self.error(
                TypeMismatch,
                f"the element getter reads an array of {ndim} dimensions: "
                f"{len(args)} indices given",
                node,
            )
        scalars = self._index_scalars(_tuple(args), ndim, "an element getter index", node)
        # The source is lowered in its own context: the same function may appear again
        # further down the tree without being recursion.
        saved_stack, self.inline_stack = self.inline_stack, []
        saved_ctx = self.save_context()
        try:
            return self.lower_node(getter.source, getter.path, scalars)
        finally:
            self.inline_stack = saved_stack
            self.restore_context(saved_ctx)

    # -- helpers -----------------------------------------------------------------------

    def _leaf(self, arr: Any, path: tuple[Step, ...], idx: list[Scalar]) -> Val:
        if not is_array(arr):
            raise TypeMismatch.at(f"a delayed array leaf must be an array, not {arr!r}", None)
        name = ".".join(str(a) for k, a in path if k == "attr") or "array"
        ref = self.classify(arr, path, name, None)
        assert isinstance(ref, ArrayRef)
        if ref.type.ndim != len(idx):
            raise TypeMismatch.at(
                f"'{name}' has {ref.type.ndim} dimensions but is read with {len(idx)} indices",
                None,
            )
        values = [self.wrap_index(ref, k, self.convert(s, I64)).value for k, s in enumerate(idx)]
        return Scalar(self.b.load(ref.value, values), False)

    def _index_scalars(self, t: Val, ndim: int, what: str, node: Any = None) -> list[Scalar]:
        leaves = flatten(t)
        if leaves is None or len(leaves) != ndim:
            raise self.error(
                TypeMismatch, f"{what} must give {ndim} integers, not a {describe(t)}", node
            )
        for s in leaves:
            if not s.type.is_int:
                raise self.error(
                    TypeMismatch, f"{what} must give integers, not {describe(s)}", node
                )
        return leaves

    def _unravel(self, d: Any, idx: list[Scalar]) -> list[Scalar]:
        new, old = d.shape, _shape(d.x)
        linear = self.const(0, (I64, True))
        for k, s in enumerate(idx):
            stride = self.const(math.prod(new[k + 1 :]), (I64, True))
            linear = self.binop("add", linear, self.binop("mul", s, stride, None), None)
        out = []
        for k, extent in enumerate(old):
            stride = self.const(math.prod(old[k + 1 :]), (I64, True))
            q = self.binop("floordiv", linear, stride, None)
            out.append(self.binop("mod", q, self.const(extent, (I64, True)), None))
        return out


def lower_delayed_root(target: Any, rank: int, cls: type[DelayedLowerer]) -> DelayedLowerer:
    """Lower the tree ``target`` (of ``rank`` dimensions) into a new function."""
    from offload.frontend.lower import finish

    shape = target.shape
    if len(shape) != rank:
        raise TypeMismatch.at(f"the delayed array has {len(shape)} dimensions, not {rank}", None)
    builder = Builder(f"delayed_{type(target).__name__.lower()}", rank)
    low = cls(builder)
    idx = [Scalar(v, True, None, True) for v in builder.function.params]
    result = low.lower_node(target, (), idx)
    finish(low, result, None)
    return low


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def _tuple(args: list[Val]) -> Val:
    from offload.frontend.values import TupleVal

    return TupleVal(tuple(args))
