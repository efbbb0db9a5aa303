"""Lowering of the expressions that may branch: ``and``/``or``, comparison chains and
conditional expressions (``a if c else b``).

Each short-circuits the way CPython evaluates it: an operand that is a known constant
decides at compile time, otherwise a branch and a merge of the values from each edge.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from offload.frontend.arith import Arith
from offload.frontend.core import ExprHandler, LoweringCore
from offload.frontend.optables import COMPARE
from offload.frontend.values import Elementwise, LocalArray, Scalar, Val, View
from offload.frontend.views import Views


@dataclass(frozen=True)
class Conditions:
    """Handlers for ``BoolOp``, ``Compare`` and ``IfExp`` (one per lowering)."""

    core: LoweringCore
    arith: Arith

    def handlers(self) -> dict[type[ast.expr], ExprHandler]:
        return {ast.BoolOp: self.boolop, ast.Compare: self.compare, ast.IfExp: self.ifexp}

    def boolop(self, node: ast.BoolOp) -> Val:
        is_and = isinstance(node.op, ast.And)
        edges: list[tuple[Any, Val]] = []
        cur = self.core.expr(node.values[0])
        for nxt, prev in zip(node.values[1:], node.values, strict=False):
            t = self.core.truth(cur, prev)
            if t.const is not None:
                if bool(t.const) != is_and:
                    break  # short-circuits here: the result is `cur`
                cur = self.core.expr(nxt)
                continue
            then_b, else_b = self.core.branch_on(t, "and" if is_and else "or", "short")
            edges.append((else_b if is_and else then_b, cur))
            self.core.position(then_b if is_and else else_b)
            cur = self.core.expr(nxt)
        if not edges:
            return cur
        self.core.scalar(cur, node)
        edges.append((self.core.b.block, cur))
        return self.core.merge_values(edges, node, "boolop")

    def compare(self, node: ast.Compare) -> Val:
        edges: list[tuple[Any, Val]] = []
        left = self.core.expr(node.left)
        right0: Val | None = None
        if len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
            right0 = self.core.expr(node.comparators[0])
            if any(
                isinstance(v, View | Elementwise) or (isinstance(v, LocalArray) and not v.weak)
                for v in (left, right0)
            ):
                self.core.at(node)  # row > t: elementwise (frontend/views.py)
                views = Views(self.core, self.arith)
                return views.compare(COMPARE[type(node.ops[0])], left, right0, node)
        result: Scalar | None = None
        for k, (op, comp) in enumerate(zip(node.ops, node.comparators, strict=True)):
            right = right0 if right0 is not None else self.core.expr(comp)
            opcode = COMPARE.get(type(op))
            if opcode is None:
                raise self.core.unsupported(node, f"the '{type(op).__name__}' comparison")
            a = self.core.scalar(left, node.left if k == 0 else node.comparators[k - 1])
            b = self.core.scalar(right, comp)
            self.core.at(node)
            result = self.arith.compare(opcode, a, b, node)
            if k == len(node.ops) - 1:
                break
            if result.const is not None:
                if not result.const:
                    return result
                left = right
                continue
            then_b, else_b = self.core.branch_on(result, "cmp", "short")
            edges.append((else_b, result))
            self.core.position(then_b)
            left = right
        assert result is not None
        if not edges:
            return result
        edges.append((self.core.b.block, result))
        return self.core.merge_values(edges, node, "cmp")

    def ifexp(self, node: ast.IfExp) -> Val:
        cond = self.core.truth(self.core.expr(node.test), node.test)
        if cond.const is not None:
            return self.core.expr(node.body if cond.const else node.orelse)
        then_b, else_b = self.core.branch_on(cond, "then", "else")
        self.core.position(then_b)
        a = self.core.expr(node.body)
        edges: list[tuple[Any, Val]] = [(self.core.b.block, a)]
        self.core.position(else_b)
        b = self.core.expr(node.orelse)
        edges.append((self.core.b.block, b))
        return self.core.merge_values(edges, node, "ifexp")
