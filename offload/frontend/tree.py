"""Lowering a delayed-array tree into ONE element function.

Each node is lowered at a symbolic index: element functions are inlined into each other,
a NumPy leaf becomes a captured-array ``LOAD``, ``reshape`` becomes index arithmetic. No
intermediate array exists in the result. Capture paths are relative to the root of the tree
(``("attr", "x")``, ``("attr", "fn")``, then the function's own steps), so a structurally
identical tree with other leaf arrays re-uses the lowering with its own values.

``TreeLowering`` implements ``nodes.ElementLowering``: each node (an ``ArrayNode``) lowers
its own element through it, so this module knows no node class.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from offload.diagnostics import TypeMismatch, unlocated
from offload.frontend.arith import Arith
from offload.frontend.captures import is_array
from offload.frontend.core import LoweringCore
from offload.frontend.expr import Exprs
from offload.frontend.inline import Inliner
from offload.frontend.names import Names
from offload.frontend.nodes import ArrayNode
from offload.frontend.promote import TypeKey, join
from offload.frontend.values import (
    ArrayRef,
    Getter,
    Scalar,
    Step,
    TupleVal,
    Val,
    describe,
    flatten,
    rebuild,
    structure,
)
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64

_MAX_LOOP_TYPING_ROUNDS = 8  # an accumulator's types only widen, through a few steps


@dataclass(frozen=True)
class TreeLowering:
    """The elements of delayed-array nodes and leaves, and the getters of ``traverse``."""

    core: LoweringCore
    arith: Arith
    names: Names
    exprs: Exprs
    inliner: Inliner

    def element(self, source: object, path: tuple[Step, ...], idx: Sequence[Scalar]) -> Val:
        if isinstance(source, ArrayNode):
            # An element of a node is an array element, as if the node were materialised:
            # a Python number its function returns has the node's dtype (int64, float64,
            # bool), no longer weak (NumPy: ``np.int64(1000) + np.int8(1)`` is int64).
            return _strong(source.lower_element(self, path, idx))
        return self._leaf(source, path, idx)

    def call(self, fn: Callable[..., Any], path: tuple[Step, ...], args: Sequence[Val]) -> Val:
        return self.inliner.inline(fn, path, list(args), {}, None)

    def getter(self, source: object, path: tuple[Step, ...]) -> Getter:
        return Getter(source, path)

    def call_getter(self, getter: Getter, args: list[Val], node: ast.AST) -> Val:
        """``get(*args)`` in a ``traverse`` function: the source's element there."""
        ndim = len(_shape(getter.source))
        if len(args) != ndim:
            raise self.core.error(
                TypeMismatch,
                f"the element getter reads an array of {ndim} dimensions: "
                f"{len(args)} indices given",
                node,
            )
        scalars = self.index_scalars(TupleVal(tuple(args)), ndim, "an element getter index", node)
        # The source is lowered in its own context: the same function may appear again
        # further down the tree without being recursion.
        core = self.core
        saved_stack, core.inline_stack = core.inline_stack, []
        saved_ctx = core.save_context()
        try:
            return self.element(getter.source, getter.path, scalars)
        except TypeMismatch as err:  # (a source's own check of the read: located here)
            d = unlocated(err)
            if d is None:
                raise
            raise self.core.error(TypeMismatch, d.message, node, hint=d.hint) from None
        finally:
            core.inline_stack = saved_stack
            core.restore_context(saved_ctx)

    def index_scalars(
        self, t: Val, ndim: int, what: str, node: ast.AST | None = None
    ) -> list[Scalar]:
        leaves = flatten(t)
        if leaves is None or len(leaves) != ndim:
            raise self.core.error(
                TypeMismatch, f"{what} must give {ndim} integers, not a {describe(t)}", node
            )
        for s in leaves:
            if not s.type.is_int:
                raise self.core.error(
                    TypeMismatch, f"{what} must give integers, not {describe(s)}", node
                )
        return leaves

    def unravel(
        self, new: tuple[int, ...], old: tuple[int, ...], idx: Sequence[Scalar]
    ) -> list[Scalar]:
        const, binop = self.core.const, self.arith.binop
        linear = const(0, (I64, True))
        for k, s in enumerate(idx):
            stride = const(math.prod(new[k + 1 :]), (I64, True))
            linear = binop("add", linear, binop("mul", s, stride, None), None)
        out = []
        for k, extent in enumerate(old):
            stride = const(math.prod(old[k + 1 :]), (I64, True))
            q = binop("floordiv", linear, stride, None)
            out.append(binop("mod", q, const(extent, (I64, True)), None))
        return out

    def constant(self, value: bool | int | float) -> Scalar:
        t = BOOL if type(value) is bool else F64 if isinstance(value, float) else I64
        return self.core.const(value, (t, True))

    def captured(self, value: object, path: tuple[Step, ...]) -> Val:
        name = ".".join(str(a) for k, a in path if k == "attr") or "value"
        return self.names.classify(value, path, name, None)

    def binop(self, op: str, a: Scalar, b: Scalar) -> Scalar:
        return self.arith.binop(op, a, b, None)

    def loop(
        self,
        start: Scalar,
        stop: Scalar,
        step: Scalar,
        init: Val,
        body: Callable[[Scalar, Val], Val],
    ) -> Val:
        core, b = self.core, self.core.b
        flat = flatten(init)
        if flat is None:
            raise TypeMismatch.at(f"a loop carries numbers, not a {describe(init)}", None)
        shape = structure(init)
        keys: list[TypeKey] = [(s.type, s.weak) for s in flat]
        entry = b.block
        lo, hi, by = (core.convert(s, I64) for s in (start, stop, step))
        for _ in range(_MAX_LOOP_TYPING_ROUNDS):
            n_blocks = len(b.function.blocks)
            header = b.new_block([I64, *(k[0] for k in keys)], hint="loop")
            core.position(header)
            ctr = header.args[0]
            acc = rebuild(
                shape, [Scalar(v, k[1]) for v, k in zip(header.args[1:], keys, strict=True)]
            )
            cond = Scalar(b.binary(Opcode.LT, ctr, hi.value), True)
            body_block, exit_block = core.branch_on(cond, "body", "exit")
            core.position(body_block)
            result = body(Scalar(ctr, True, None, lo.nonneg), acc)
            leaves = flatten(result)
            if leaves is None or structure(result) != shape:
                raise TypeMismatch.at(
                    f"the combining function returns a {describe(result)} where its "
                    f"accumulator is a {describe(init)}",
                    None,
                    hint="return the same kind of value (one number, or tuples of one size) "
                    "as the initial value",
                )
            joined = [join(k, (s.type, s.weak)) for k, s in zip(keys, leaves, strict=True)]
            if any(j is None for j in joined):
                raise TypeMismatch.at("the accumulator's types do not combine", None)
            if joined == keys:
                break
            keys = [j for j in joined if j is not None]
            del b.function.blocks[n_blocks:]
        else:  # pragma: no cover - types only widen through short lattices
            raise TypeMismatch.at("could not find stable types for this loop", None)
        back = [core.convert(s, k[0]).value for s, k in zip(leaves, keys, strict=True)]
        b.jump(header, [b.binary(Opcode.ADD, ctr, by.value), *back])
        b.position_at_end(entry)
        first = [core.convert(s, k[0]).value for s, k in zip(flat, keys, strict=True)]
        b.jump(header, [lo.value, *first])
        core.position(exit_block)
        return rebuild(shape, [Scalar(v, k[1]) for v, k in zip(header.args[1:], keys, strict=True)])

    def branch(
        self,
        cond: Scalar,
        then: Callable[[], Val],
        orelse: Callable[[], Val],
        *,
        uniform: bool = False,
    ) -> Val:
        core, b = self.core, self.core.b
        test = core.convert(cond, BOOL)
        then_block, else_block = core.branch_on(test, "then", "else", uniform=uniform)
        arms: list[tuple[Any, Val]] = []
        for block, arm in ((then_block, then), (else_block, orelse)):
            core.position(block)
            value = arm()
            arms.append((b.block, value))
        (t_end, t_val), (e_end, e_val) = arms
        t_flat, e_flat = flatten(t_val), flatten(e_val)
        if t_flat is None or e_flat is None or structure(t_val) != structure(e_val):
            raise TypeMismatch.at(
                f"the two arms give a {describe(t_val)} and a {describe(e_val)}", None
            )
        keys: list[TypeKey] = []
        for x, y in zip(t_flat, e_flat, strict=True):
            j = join((x.type, x.weak), (y.type, y.weak))
            if j is None:
                raise TypeMismatch.at("the two arms' types do not combine", None)
            keys.append(j)
        merge = b.new_block([k[0] for k in keys], hint="join")
        for end, flat in ((t_end, t_flat), (e_end, e_flat)):
            b.position_at_end(end)
            b.jump(merge, [core.convert(s, k[0]).value for s, k in zip(flat, keys, strict=True)])
        core.position(merge)
        shape = structure(t_val)
        return rebuild(shape, [Scalar(v, k[1]) for v, k in zip(merge.args, keys, strict=True)])

    def _leaf(self, arr: object, path: tuple[Step, ...], idx: Sequence[Scalar]) -> Val:
        if not is_array(arr):
            raise TypeMismatch.at(f"a delayed array leaf must be an array, not {arr!r}", None)
        name = ".".join(str(a) for k, a in path if k == "attr") or "array"
        ref = self.names.classify(arr, path, name, None)
        assert isinstance(ref, ArrayRef)
        if ref.type.ndim != len(idx):
            raise TypeMismatch.at(
                f"'{name}' has {ref.type.ndim} dimensions but is read with {len(idx)} indices",
                None,
            )
        convert, wrap = self.core.convert, self.exprs.wrap_index
        values = [wrap(ref, k, convert(s, I64)).value for k, s in enumerate(idx)]
        return Scalar(self.core.b.load(ref.value, values), False)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def _strong(v: Val) -> Val:
    """``v`` with every weak scalar made strong (the same IR type)."""
    if isinstance(v, Scalar):
        return replace(v, weak=False) if v.weak else v
    if isinstance(v, TupleVal):
        return TupleVal(tuple(_strong(x) for x in v.items))
    return v
