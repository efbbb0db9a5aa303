"""Lowering of the expressions that may branch: ``and``/``or``, comparison chains and
conditional expressions (``a if c else b``).

Each short-circuits the way CPython evaluates it: an operand that is a known constant
decides at compile time, otherwise a branch and a merge of the values from each edge.
``ExprLowerer`` (expr.py) inherits these handlers.
"""

from __future__ import annotations

import ast
from typing import Any

from offload.diagnostics import TypeMismatch
from offload.frontend.base import LowererBase
from offload.frontend.optables import COMPARE, PY_COMPARE
from offload.frontend.promote import join
from offload.frontend.values import Scalar, Val
from offload.ir.ops import Opcode
from offload.ir.types import BOOL


class ConditionLowerer(LowererBase):
    """Handlers for ``BoolOp``, ``Compare`` and ``IfExp`` (dispatched by ``expr``)."""

    def expr_BoolOp(self, node: ast.BoolOp) -> Val:
        is_and = isinstance(node.op, ast.And)
        edges: list[tuple[Any, Val]] = []
        cur = self.expr(node.values[0])
        for nxt, prev in zip(node.values[1:], node.values, strict=False):
            t = self.truth(cur, prev)
            if t.const is not None:
                if bool(t.const) != is_and:
                    break  # short-circuits here: the result is `cur`
                cur = self.expr(nxt)
                continue
            then_b, else_b = self.branch_on(t, "and" if is_and else "or", "short")
            edges.append((else_b if is_and else then_b, cur))
            self.position(then_b if is_and else else_b)
            cur = self.expr(nxt)
        if not edges:
            return cur
        self.scalar(cur, node)
        edges.append((self.b.block, cur))
        return self.merge_values(edges, node, "boolop")

    def expr_Compare(self, node: ast.Compare) -> Val:
        edges: list[tuple[Any, Val]] = []
        left = self.expr(node.left)
        result: Scalar | None = None
        for k, (op, comp) in enumerate(zip(node.ops, node.comparators, strict=True)):
            right = self.expr(comp)
            opcode = COMPARE.get(type(op))
            if opcode is None:
                raise self.unsupported(node, f"the '{type(op).__name__}' comparison")
            a = self.scalar(left, node.left if k == 0 else node.comparators[k - 1])
            b = self.scalar(right, comp)
            self.at(node)
            result = self.compare(opcode, a, b, node)
            if k == len(node.ops) - 1:
                break
            if result.const is not None:
                if not result.const:
                    return result
                left = right
                continue
            then_b, else_b = self.branch_on(result, "cmp", "short")
            edges.append((else_b, result))
            self.position(then_b)
            left = right
        assert result is not None
        if not edges:
            return result
        edges.append((self.b.block, result))
        return self.merge_values(edges, node, "cmp")

    def compare(self, opcode: Opcode, a: Scalar, b: Scalar, node: ast.AST) -> Scalar:
        """``a <opcode> b`` in the joined operand type; weak if both operands are."""
        key = join((a.type, a.weak), (b.type, b.weak))
        if key is None:
            raise self.error(TypeMismatch, "these values cannot be compared", node)
        weak = a.weak and b.weak
        if weak and a.const is not None and b.const is not None:
            return self.const(bool(PY_COMPARE[opcode](a.const, b.const)), (BOOL, True))
        x = self.convert(a, key[0]).value
        y = self.convert(b, key[0]).value
        return Scalar(self.b.binary(opcode, x, y), weak)

    def expr_IfExp(self, node: ast.IfExp) -> Val:
        cond = self.truth(self.expr(node.test), node.test)
        if cond.const is not None:
            return self.expr(node.body if cond.const else node.orelse)
        then_b, else_b = self.branch_on(cond, "then", "else")
        self.position(then_b)
        a = self.expr(node.body)
        edges: list[tuple[Any, Val]] = [(self.b.block, a)]
        self.position(else_b)
        b = self.expr(node.orelse)
        edges.append((self.b.block, b))
        return self.merge_values(edges, node, "ifexp")
