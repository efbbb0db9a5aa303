"""Lowering of statements: assignment, if/elif/else, break/continue, return (loops are in
loops.py)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from offload.diagnostics import Span, TypeMismatch, UnsupportedSyntax
from offload.frontend.arith import Arith
from offload.frontend.core import RESULT, Edge, LoweringCore, StmtHandler
from offload.frontend.local_arrays import LocalArrays
from offload.frontend.local_exprs import LocalExprs
from offload.frontend.names import Names
from offload.frontend.values import LocalArray, Scalar, TupleVal, Val, describe, flatten

_AUG = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
}  # fmt: skip

MAX_CHAIN_ARMS = 300
"""The most arms an ``if``/``elif`` chain may have. numba's compile time grows faster than
the chain (compute_s on a shared 2-core machine: 100 arms 5 s, 200 arms 14-16 s, 300 arms
20-26 s, 400 arms 50-77 s); a captured lookup array or arithmetic computes the same value
at a fixed cost."""


@dataclass(frozen=True)
class Statements:
    """Handlers of the statements other than loops (one per lowering)."""

    core: LoweringCore
    arith: Arith
    names: Names

    def handlers(self) -> dict[type[ast.stmt], StmtHandler]:
        return {
            ast.Pass: self.pass_,
            ast.Expr: self.expr_statement,
            ast.Assign: self.assign_statement,
            ast.AnnAssign: self.annassign,
            ast.AugAssign: self.augassign,
            ast.Return: self.return_,
            ast.Break: self.break_,
            ast.Continue: self.continue_,
            ast.If: self.if_,
        }

    # -- simple statements ---------------------------------------------------------------

    def pass_(self, node: ast.Pass) -> None:
        return

    def expr_statement(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.core.expr(node.value)  # side-effect free: evaluated for its errors only

    def assign_statement(self, node: ast.Assign) -> None:
        value = self.core.expr(node.value)
        for target in node.targets:
            self.assign(target, value)

    def annassign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        self.assign(node.target, self.core.expr(node.value))

    def augassign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Subscript):
            LocalArrays(self.core, self.arith, self.names).augment(node)
            return
        if not isinstance(node.target, ast.Name):
            # a[i] += x, o.x += y: reported by analysis/writes.py before lowering
            raise self.core.unsupported(node.target, "this assignment target")
        target = self.names.resolve_name(node.target.id, node.target)
        if isinstance(target, LocalArray):  # v += w: in place, as NumPy does
            LocalExprs(self.core, self.arith, self.names).augment_whole(target, node)
            return
        current = self.core.scalar(target, node.target)
        rhs = self.core.scalar(self.core.expr(node.value), node.value)
        self.core.at(node)
        self.core.ctx.env[node.target.id] = self.arith.binop(
            _AUG[type(node.op)], current, rhs, node
        )

    def assign(self, target: ast.expr, value: Val) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, LocalArray):
                LocalArrays(self.core, self.arith, self.names).check_alias(value, target)
            self.core.ctx.env[target.id] = value
            if isinstance(value, Scalar) and value.value.hint is None and value.const is None:
                value.value.hint = target.id
            return
        if isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise self.core.unsupported(target, "starred assignment")
            if not isinstance(value, TupleVal):
                raise self.core.error(
                    TypeMismatch, f"cannot unpack a {describe(value)} into names", target
                )
            if len(value.items) != len(target.elts):
                raise self.core.error(
                    TypeMismatch,
                    f"cannot unpack a tuple of {len(value.items)} into {len(target.elts)} names",
                    target,
                )
            for t, v in zip(target.elts, value.items, strict=True):
                self.assign(t, v)
            return
        if isinstance(target, ast.Subscript):
            LocalArrays(self.core, self.arith, self.names).write(target, value, target)
            return
        raise self.core.unsupported(target, "this assignment target")

    def return_(self, node: ast.Return) -> None:
        if node.value is None:
            raise self.core.error(TypeMismatch, "an element function must return a value", node)
        value = self.core.expr(node.value)
        helper = len(self.core.inline_stack) > 1
        if flatten(value) is None and not (helper and isinstance(value, LocalArray)):
            raise self.core.error(
                TypeMismatch,
                f"cannot return {_article(describe(value))}",
                node.value,
                hint="return a number, a bool, or a tuple of them",
            )
        self.core.ctx.returns.append((self.core.b.block, {RESULT: value}))
        self.core.dead()

    def break_(self, node: ast.Break) -> None:
        self.core.ctx.loops[-1].breaks.append((self.core.b.block, dict(self.core.ctx.env)))
        self.core.dead()

    def continue_(self, node: ast.Continue) -> None:
        self.core.ctx.loops[-1].continues.append((self.core.b.block, dict(self.core.ctx.env)))
        self.core.dead()

    # -- if ----------------------------------------------------------------------------

    def if_(self, node: ast.If) -> None:
        self._check_chain(node)
        cond = self.core.truth(self.core.expr(node.test), node.test)
        if cond.const is not None:
            self.core.stmts(node.body if cond.const else node.orelse)
            return
        self.core.at(node.test)
        then_b, else_b = self.core.branch_on(cond, "then", "else")
        before = self.core.ctx.env
        edges: list[Edge] = []
        for block, body in ((then_b, node.body), (else_b, node.orelse)):
            self.core.position(block)
            self.core.ctx.env = dict(before)
            self.core.stmts(body)
            if self.core.live:
                edges.append((self.core.b.block, self.core.ctx.env))
        self.core.ctx.env = self.core.merge_edges(edges, "endif")

    def _check_chain(self, node: ast.If) -> None:
        """Raise a located ``UnsupportedSyntax`` at the arm of the ``if``/``elif`` chain
        starting at ``node`` that passes ``MAX_CHAIN_ARMS`` (before lowering it, which
        recurses once per arm). An ``elif`` is an ``else`` holding just an ``if``."""
        arm, arms = node, 1
        while len(arm.orelse) == 1 and isinstance(arm.orelse[0], ast.If):
            arm, arms = arm.orelse[0], arms + 1
            if arms > MAX_CHAIN_ARMS:
                raise UnsupportedSyntax.at(
                    f"an if/elif chain may have at most {MAX_CHAIN_ARMS} arms; this is arm {arms}",
                    self._arm_span(arm),
                    hint="look the value up in a captured array (table[k]) or compute it "
                    "arithmetically instead of testing one case per arm",
                )

    def _arm_span(self, arm: ast.If) -> Span | None:
        """From the ``elif`` keyword to the end of its condition."""
        head, test = self.core.span(arm), self.core.span(arm.test)
        if head is None or test is None:
            return head
        return replace(head, end_line=test.end_line, end_col=test.end_col)


def _article(what: str) -> str:
    """``what`` with its indefinite article (``an elementwise ...``, ``a view ...``)."""
    return f"an {what}" if what[:1] in "aeiou" else f"a {what}"
