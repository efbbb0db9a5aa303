"""Lowering of loops: ``while`` and ``for k in range(...)``.

Loops carry every variable assigned in their body (and bound before the loop) as header
block arguments. Their types are found by iteration: the body is lowered with the types the
variables have on entry; if a back edge brings a wider type (``x = 0`` then ``x = x + 0.5``)
the loop's blocks are discarded and the body lowered again with the joined types, until the
header types are stable.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch
from offload.frontend.core import Edge, Env, LoopContext, LoweringCore, StmtHandler
from offload.frontend.intrinsics import lookup_intrinsic
from offload.frontend.promote import TypeKey, join
from offload.frontend.values import (
    ArrayRef,
    Elementwise,
    PyObj,
    Scalar,
    Unbound,
    View,
    describe,
    flatten,
    rebuild,
    structure,
)
from offload.ir.core import Block, Value
from offload.ir.ops import Opcode
from offload.ir.types import I64, Type

_MAX_LOOP_TYPING_ROUNDS = 8  # a loop's types only widen, through at most a few steps

Spec = dict[str, tuple[object, list[TypeKey]]]
"""Loop-carried variables: name -> (tuple structure, (type, weak) per scalar leaf)."""


@dataclass(frozen=True)
class Loops:
    """Handlers of ``while`` and ``for`` (one per lowering)."""

    core: LoweringCore

    def handlers(self) -> dict[type[ast.stmt], StmtHandler]:
        return {ast.While: self.while_, ast.For: self.for_}

    def while_(self, node: ast.While) -> None:
        if node.orelse:
            raise self.core.unsupported(node.orelse[0], "'else' on a loop")
        self._loop(node, node.body, counter=None)

    def for_(self, node: ast.For) -> None:
        if node.orelse:
            raise self.core.unsupported(node.orelse[0], "'else' on a loop")
        if not isinstance(node.target, ast.Name):
            raise self.core.unsupported(
                node.target, "this loop target", "use 'for k in range(...)'"
            )
        it = node.iter
        fn = self.core.expr(it.func) if isinstance(it, ast.Call) else None
        intr = lookup_intrinsic(fn.obj) if isinstance(fn, PyObj) else None
        if not (isinstance(it, ast.Call) and intr is not None and intr.name == "range"):
            raise self.core.unsupported(
                it, "iterating over anything but range(...)", "use 'for k in range(...)'"
            )
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.core.error(TypeMismatch, "range() takes 1 to 3 positional arguments", it)
        bounds: list[Scalar] = []
        for a in it.args:
            s = self.core.scalar(self.core.expr(a), a, "a range() bound")
            if s.type.is_float:
                raise self.core.error(TypeMismatch, "range() bounds must be integers", a)
            bounds.append(s)
        self.core.at(it)
        if len(bounds) == 1:
            bounds.insert(0, self.core.const(0, (I64, True)))
        if len(bounds) == 2:
            bounds.append(self.core.const(1, (I64, True)))
        start, stop, step = (self.core.convert(s, I64, True) for s in bounds)
        if step.const == 0:
            raise self.core.error(TypeMismatch, "range() step must not be zero", it.args[2])
        self._loop(node, node.body, counter=(node.target.id, start, stop, step))

    def _loop(
        self,
        node: ast.While | ast.For,
        body: list[ast.stmt],
        counter: tuple[str, Scalar, Scalar, Scalar] | None,
    ) -> None:
        ctx = self.core.ctx
        entry_block, entry_env = self.core.b.block, dict(ctx.env)
        assigned = _assigned_names(body) | ({counter[0]} if counter else set())
        spec: Spec = {}
        for name in sorted(assigned):
            v = entry_env.get(name)
            if v is not None and not isinstance(v, Unbound):
                flat = flatten(v)
                if flat is not None:
                    spec[name] = (structure(v), [(s.type, s.weak) for s in flat])
        for _ in range(_MAX_LOOP_TYPING_ROUNDS):
            n_blocks, n_returns = len(self.core.b.function.blocks), len(ctx.returns)
            header, exits, loop = self._loop_body(node, body, counter, entry_env, spec)
            back = loop.continues
            widened = _widen(spec, back)
            if widened is None:
                raise self.core.error(
                    TypeMismatch,
                    "a variable changes its kind of value inside this loop",
                    node,
                    hint="keep each variable a number (or a tuple of one size) in the loop",
                )
            if widened == spec:
                self._check_invariant_objects(node, assigned, spec, entry_env, back)
                break
            spec = widened
            del self.core.b.function.blocks[n_blocks:]
            del ctx.returns[n_returns:]
        else:  # pragma: no cover - types only widen through bool < int < float lattices
            raise self.core.error(TypeMismatch, "could not find stable types for this loop", node)
        self.core.at(node)
        for blk, env in [*back, (entry_block, entry_env)]:
            self.core.b.position_at_end(blk)
            args: list[Value] = []
            if counter is not None:
                ctr = header.args[0]
                if blk is entry_block:
                    args.append(counter[1].value)
                else:
                    args.append(self.core.b.binary(Opcode.ADD, ctr, counter[3].value))
            for name, (_, keys) in spec.items():
                flat = flatten(env[name])  # type: ignore[arg-type]
                assert flat is not None
                args.extend(
                    self.core.convert(s, k[0]).value for s, k in zip(flat, keys, strict=True)
                )
            self.core.b.jump(header, args)
        ctx.env = self.core.merge_edges([*exits, *loop.breaks], "endloop")

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
                raise self.core.error(
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
        ctx = self.core.ctx
        types = [k[0] for _, keys in spec.values() for k in keys]
        arg_types: list[Type] = [I64] if counter else []
        header = self.core.b.new_block([*arg_types, *types], hint="loop")
        self.core.position(header)
        env = dict(entry_env)
        args = list(header.args[1:] if counter else header.args)
        for name, (shape, keys) in spec.items():
            leaves = [Scalar(args.pop(0), k[1]) for k in keys]
            for leaf in leaves:
                leaf.value.hint = name
            env[name] = rebuild(shape, leaves)
        for name in _assigned_names(body) | ({counter[0]} if counter else set()):
            if name not in spec and not isinstance(
                entry_env.get(name), ArrayRef | PyObj | View | Elementwise
            ):
                env[name] = Unbound("it is only assigned inside a loop that may not run")
        ctx.env = env
        if counter is None:
            assert isinstance(node, ast.While)
            cond = self.core.truth(self.core.expr(node.test), node.test)
        else:
            cond = self._range_test(header.args[0], counter, node)
        loop = LoopContext()
        exits: list[Edge] = []
        self.core.at(node)
        if cond.const is True:
            body_block = self.core.b.new_block(hint="body")
            self.core.b.jump(body_block)
        elif cond.const is False:
            exits.append((self.core.b.block, dict(env)))
            body_block = self.core.b.new_block(hint="body")  # unreachable
        else:
            body_block, exit_block = self.core.branch_on(cond, "body", "exit")
            exits.append((exit_block, self._exit_env(exit_block, env, body, counter)))
        self.core.position(body_block)
        ctx.env = dict(env)
        if counter is not None:
            start, step = counter[1], counter[3]
            nonneg = start.nonneg and isinstance(step.const, int) and step.const > 0
            header.args[0].hint = counter[0]
            ctx.env[counter[0]] = Scalar(header.args[0], True, None, nonneg)
        ctx.loops.append(loop)
        try:
            self.core.stmts(body)
        finally:
            ctx.loops.pop()
        if self.core.live:
            loop.continues.append((self.core.b.block, ctx.env))
        return header, exits, loop

    def _exit_env(
        self,
        exit_block: Block,
        env: Env,
        body: list[ast.stmt],
        counter: tuple[str, Scalar, Scalar, Scalar] | None,
    ) -> Env:
        """The environment where the loop test fails. A range of constant bounds that is
        not empty leaves its counter at the range's last value (Python keeps it bound)."""
        out = dict(env)
        if counter is None or not isinstance(out.get(counter[0]), Unbound):
            return out
        name, start, stop, step = counter
        if name in _assigned_names(body):
            return out
        bounds = (start.const, stop.const, step.const)
        if not all(type(c) is int for c in bounds):
            return out
        r = range(*(int(c) for c in bounds if c is not None))
        if len(r) == 0:
            return out
        self.core.b.position_at_end(exit_block)
        out[name] = self.core.const(r[-1], (I64, True))
        return out

    def _range_test(
        self, ctr: object, counter: tuple[str, Scalar, Scalar, Scalar], node: ast.AST
    ) -> Scalar:
        assert isinstance(ctr, Value)
        _, _, stop, step = counter
        self.core.at(node)
        if isinstance(step.const, int):
            opcode = Opcode.LT if step.const > 0 else Opcode.GT
            return Scalar(self.core.b.binary(opcode, ctr, stop.value), True)
        up = self.core.b.binary(Opcode.LT, ctr, stop.value)
        down = self.core.b.binary(Opcode.GT, ctr, stop.value)
        positive = self.core.b.binary(Opcode.GT, step.value, self.core.b.const(0, I64))
        return Scalar(self.core.b.select(positive, up, down), True)


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
