"""Lowering of statements: assignment, if/elif/else, loops, break/continue, return.

Loops carry every variable assigned in their body (and bound before the loop) as header
block arguments. Their types are found by iteration: the body is lowered with the types the
variables have on entry; if a back edge brings a wider type (``x = 0`` then ``x = x + 0.5``)
the loop's blocks are discarded and the body lowered again with the joined types, until the
header types are stable.
"""

from __future__ import annotations

import ast

from offload.diagnostics import TypeMismatch, WriteNotAllowed
from offload.frontend.base import RESULT, Edge, Env, LoopContext
from offload.frontend.calls import CallLowerer
from offload.frontend.intrinsics import lookup_intrinsic
from offload.frontend.promote import TypeKey, join
from offload.frontend.values import (
    ArrayRef,
    PyObj,
    Scalar,
    TupleVal,
    Unbound,
    Val,
    describe,
    flatten,
    rebuild,
    structure,
)
from offload.ir.core import Block, Value
from offload.ir.ops import Opcode
from offload.ir.types import I64, Type

_MAX_LOOP_TYPING_ROUNDS = 8  # a loop's types only widen, through at most a few steps
_AUG = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
    ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
    ast.RShift: "rshift", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
}  # fmt: skip
_DENIED_WRITES = (ast.Global, ast.Nonlocal, ast.Delete)

Spec = dict[str, tuple[object, list[TypeKey]]]
"""Loop-carried variables: name -> (tuple structure, (type, weak) per scalar leaf)."""


class StmtLowerer(CallLowerer):
    """Statement handlers (deny by default, like expressions)."""

    def stmts(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if not self.live:
                return  # unreachable code after return/break/continue
            handler = getattr(self, "stmt_" + type(stmt).__name__, None)
            if handler is None:
                if isinstance(stmt, _DENIED_WRITES):
                    raise self.error(
                        WriteNotAllowed,
                        "element functions cannot write globals or delete names",
                        stmt,
                    )
                raise self.unsupported(stmt)
            handler(stmt)

    # -- simple statements ---------------------------------------------------------------

    def stmt_Pass(self, node: ast.Pass) -> None:
        return

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.expr(node.value)  # side-effect free: evaluated for its errors only

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        self.assign(node.target, self.expr(node.value))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(
                WriteNotAllowed, "element functions cannot write to arrays or attributes", node
            )
        current = self.scalar(self.resolve_name(node.target.id, node.target), node.target)
        rhs = self.scalar(self.expr(node.value), node.value)
        self.at(node)
        self.ctx.env[node.target.id] = self.binop(_AUG[type(node.op)], current, rhs, node)

    def assign(self, target: ast.expr, value: Val) -> None:
        if isinstance(target, ast.Name):
            self.ctx.env[target.id] = value
            if isinstance(value, Scalar) and value.value.hint is None and value.const is None:
                value.value.hint = target.id
            return
        if isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise self.unsupported(target, "starred assignment")
            if not isinstance(value, TupleVal):
                raise self.error(
                    TypeMismatch, f"cannot unpack a {describe(value)} into names", target
                )
            if len(value.items) != len(target.elts):
                raise self.error(
                    TypeMismatch,
                    f"cannot unpack a tuple of {len(value.items)} into {len(target.elts)} names",
                    target,
                )
            for t, v in zip(target.elts, value.items, strict=True):
                self.assign(t, v)
            return
        if isinstance(target, ast.Subscript | ast.Attribute):
            raise self.error(
                WriteNotAllowed,
                "element functions cannot write to arrays or attributes",
                target,
                hint="return the value instead: the result array is written for you",
            )
        raise self.unsupported(target, "this assignment target")

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is None:
            raise self.error(TypeMismatch, "an element function must return a value", node)
        value = self.expr(node.value)
        if flatten(value) is None:
            raise self.error(
                TypeMismatch,
                f"cannot return a {describe(value)}",
                node.value,
                hint="return a number, a bool, or a tuple of them",
            )
        self.ctx.returns.append((self.b.block, {RESULT: value}))
        self.dead()

    def stmt_Break(self, node: ast.Break) -> None:
        self.ctx.loops[-1].breaks.append((self.b.block, dict(self.ctx.env)))
        self.dead()

    def stmt_Continue(self, node: ast.Continue) -> None:
        self.ctx.loops[-1].continues.append((self.b.block, dict(self.ctx.env)))
        self.dead()

    # -- if ----------------------------------------------------------------------------

    def stmt_If(self, node: ast.If) -> None:
        cond = self.truth(self.expr(node.test), node.test)
        if cond.const is not None:
            self.stmts(node.body if cond.const else node.orelse)
            return
        self.at(node.test)
        then_b, else_b = self.branch_on(cond, "then", "else")
        before = self.ctx.env
        edges: list[Edge] = []
        for block, body in ((then_b, node.body), (else_b, node.orelse)):
            self.position(block)
            self.ctx.env = dict(before)
            self.stmts(body)
            if self.live:
                edges.append((self.b.block, self.ctx.env))
        self.ctx.env = self.merge_edges(edges, "endif")

    # -- loops -------------------------------------------------------------------------

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.unsupported(node.orelse[0], "'else' on a loop")
        self._loop(node, node.body, counter=None)

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.unsupported(node.orelse[0], "'else' on a loop")
        if not isinstance(node.target, ast.Name):
            raise self.unsupported(node.target, "this loop target", "use 'for k in range(...)'")
        it = node.iter
        fn = self.expr(it.func) if isinstance(it, ast.Call) else None
        intr = lookup_intrinsic(fn.obj) if isinstance(fn, PyObj) else None
        if not (isinstance(it, ast.Call) and intr is not None and intr.name == "range"):
            raise self.unsupported(
                it, "iterating over anything but range(...)", "use 'for k in range(...)'"
            )
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(TypeMismatch, "range() takes 1 to 3 positional arguments", it)
        bounds: list[Scalar] = []
        for a in it.args:
            s = self.scalar(self.expr(a), a, "a range() bound")
            if s.type.is_float:
                raise self.error(TypeMismatch, "range() bounds must be integers", a)
            bounds.append(s)
        self.at(it)
        if len(bounds) == 1:
            bounds.insert(0, self.const(0, (I64, True)))
        if len(bounds) == 2:
            bounds.append(self.const(1, (I64, True)))
        start, stop, step = (self.convert(s, I64, True) for s in bounds)
        if step.const == 0:
            raise self.error(TypeMismatch, "range() step must not be zero", it.args[2])
        self._loop(node, node.body, counter=(node.target.id, start, stop, step))

    def _loop(
        self,
        node: ast.While | ast.For,
        body: list[ast.stmt],
        counter: tuple[str, Scalar, Scalar, Scalar] | None,
    ) -> None:
        ctx = self.ctx
        entry_block, entry_env = self.b.block, dict(ctx.env)
        assigned = _assigned_names(body) | ({counter[0]} if counter else set())
        spec: Spec = {}
        for name in sorted(assigned):
            v = entry_env.get(name)
            if v is not None and not isinstance(v, Unbound):
                flat = flatten(v)
                if flat is not None:
                    spec[name] = (structure(v), [(s.type, s.weak) for s in flat])
        for _ in range(_MAX_LOOP_TYPING_ROUNDS):
            n_blocks, n_returns = len(self.b.function.blocks), len(ctx.returns)
            header, exits, loop = self._loop_body(node, body, counter, entry_env, spec)
            back = loop.continues
            widened = _widen(spec, back)
            if widened is None:
                raise self.error(
                    TypeMismatch,
                    "a variable changes its kind of value inside this loop",
                    node,
                    hint="keep each variable a number (or a tuple of one size) in the loop",
                )
            if widened == spec:
                self._check_invariant_objects(node, assigned, spec, entry_env, back)
                break
            spec = widened
            del self.b.function.blocks[n_blocks:]
            del ctx.returns[n_returns:]
        else:  # pragma: no cover - types only widen through bool < int < float lattices
            raise self.error(TypeMismatch, "could not find stable types for this loop", node)
        self.at(node)
        for blk, env in [*back, (entry_block, entry_env)]:
            self.b.position_at_end(blk)
            args: list[Value] = []
            if counter is not None:
                ctr = header.args[0]
                if blk is entry_block:
                    args.append(counter[1].value)
                else:
                    args.append(self.b.binary(Opcode.ADD, ctr, counter[3].value))
            for name, (_, keys) in spec.items():
                flat = flatten(env[name])  # type: ignore[arg-type]
                assert flat is not None
                args.extend(self.convert(s, k[0]).value for s, k in zip(flat, keys, strict=True))
            self.b.jump(header, args)
        ctx.env = self.merge_edges([*exits, *loop.breaks], "endloop")

    def _check_invariant_objects(
        self, node: ast.AST, assigned: set[str], spec: Spec, entry_env: Env, back: list[Edge]
    ) -> None:
        """Arrays and other objects are not loop-carried: rebinding one in a loop is an
        error rather than a silently stale value in the next iteration."""
        for name in assigned - spec.keys():
            before = entry_env.get(name)
            if before is None or isinstance(before, Unbound):
                continue
            if any(env.get(name) is not before for _, env in back):
                raise self.error(
                    TypeMismatch,
                    f"'{name}' ({describe(before)}) is rebound inside this loop",
                    node,
                    hint="only numbers and tuples of numbers can change from one iteration "
                    "to the next",
                )

    def _loop_body(
        self,
        node: ast.While | ast.For,
        body: list[ast.stmt],
        counter: tuple[str, Scalar, Scalar, Scalar] | None,
        entry_env: Env,
        spec: Spec,
    ) -> tuple[Block, list[Edge], LoopContext]:
        ctx = self.ctx
        types = [k[0] for _, keys in spec.values() for k in keys]
        arg_types: list[Type] = [I64] if counter else []
        header = self.b.new_block([*arg_types, *types], hint="loop")
        self.position(header)
        env = dict(entry_env)
        args = list(header.args[1:] if counter else header.args)
        for name, (shape, keys) in spec.items():
            leaves = [Scalar(args.pop(0), k[1]) for k in keys]
            for leaf in leaves:
                leaf.value.hint = name
            env[name] = rebuild(shape, leaves)
        for name in _assigned_names(body) | ({counter[0]} if counter else set()):
            if name not in spec and not isinstance(entry_env.get(name), ArrayRef | PyObj):
                env[name] = Unbound("it is only assigned inside a loop that may not run")
        ctx.env = env
        if counter is None:
            assert isinstance(node, ast.While)
            cond = self.truth(self.expr(node.test), node.test)
        else:
            cond = self._range_test(header.args[0], counter, node)
        loop = LoopContext()
        exits: list[Edge] = []
        self.at(node)
        if cond.const is True:
            body_block = self.b.new_block(hint="body")
            self.b.jump(body_block)
        elif cond.const is False:
            exits.append((self.b.block, dict(env)))
            body_block = self.b.new_block(hint="body")  # unreachable
        else:
            body_block, exit_block = self.branch_on(cond, "body", "exit")
            exits.append((exit_block, dict(env)))
        self.position(body_block)
        ctx.env = dict(env)
        if counter is not None:
            start, step = counter[1], counter[3]
            nonneg = start.nonneg and isinstance(step.const, int) and step.const > 0
            header.args[0].hint = counter[0]
            ctx.env[counter[0]] = Scalar(header.args[0], True, None, nonneg)
        ctx.loops.append(loop)
        try:
            self.stmts(body)
        finally:
            ctx.loops.pop()
        if self.live:
            loop.continues.append((self.b.block, ctx.env))
        return header, exits, loop

    def _range_test(
        self, ctr: object, counter: tuple[str, Scalar, Scalar, Scalar], node: ast.AST
    ) -> Scalar:
        assert isinstance(ctr, Value)
        _, _, stop, step = counter
        self.at(node)
        if isinstance(step.const, int):
            opcode = Opcode.LT if step.const > 0 else Opcode.GT
            return Scalar(self.b.binary(opcode, ctr, stop.value), True)
        up = self.b.binary(Opcode.LT, ctr, stop.value)
        down = self.b.binary(Opcode.GT, ctr, stop.value)
        positive = self.b.binary(Opcode.GT, step.value, self.b.const(0, I64))
        return Scalar(self.b.select(positive, up, down), True)


def _widen(spec: Spec, back: list[Edge]) -> Spec | None:
    """Join the header types with the types the back edges bring; None on a kind change."""
    out: Spec = {}
    for name, (shape, keys) in spec.items():
        new_keys = list(keys)
        for _, env in back:
            v = env.get(name)
            if v is None or isinstance(v, Unbound) or structure(v) != shape:
                return None
            flat = flatten(v)
            if flat is None:
                return None
            for k, s in enumerate(flat):
                j = join(new_keys[k], (s.type, s.weak))
                if j is None:
                    return None
                new_keys[k] = j
        out[name] = (shape, new_keys)
    return out


def _assigned_names(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names
