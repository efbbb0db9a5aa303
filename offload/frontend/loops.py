"""Lowering of loops: ``while``, ``for k in range(...)``, and ``for`` over a view, a
captured array, ``zip``, ``enumerate`` and ``reversed`` (each a counted loop over a hidden
counter whose element is bound to the loop's target at the top of the body); ``else`` on
either runs when the loop ends without ``break``.

Loops carry every variable assigned in their body (and bound before the loop) as header
block arguments. Their types are found by iteration: the body is lowered with the types the
variables have on entry; if a back edge brings a wider type (``x = 0`` then ``x = x + 0.5``)
the loop's blocks are discarded and the body lowered again with the joined types, until the
header types are stable.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch
from offload.frontend.arith import Arith
from offload.frontend.core import Edge, Env, LoopContext, LoweringCore, StmtHandler
from offload.frontend.intrinsics import lookup_intrinsic
from offload.frontend.promote import TypeKey, join
from offload.frontend.sequences import Sequence_, tuple_sequence
from offload.frontend.values import (
    ArrayRef,
    Elementwise,
    LocalArray,
    PyObj,
    Scalar,
    TupleVal,
    Unbound,
    Val,
    View,
    describe,
    flatten,
    rebuild,
    structure,
)
from offload.frontend.views import Views
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
        self._loop(node, node.body, counter=None)

    def for_(self, node: ast.For) -> None:
        it = node.iter
        if isinstance(node.target, ast.Name) and self._builtin_call(it) == "range":
            assert isinstance(it, ast.Call)
            start, stop, step = self._range_bounds(it)
            self._loop(node, node.body, counter=(node.target.id, start, stop, step))
            return
        seq = self.sequence(it)
        self.core.at(it)
        hidden = f"<for {node.lineno}:{node.col_offset}>"
        zero, one = self.views.i64(0), self.views.i64(1)
        target = node.target

        def bind(k: Scalar) -> None:
            self._assign(target, seq.item(k))

        self._loop(node, node.body, counter=(hidden, zero, seq.length, one), bind=bind)

    @property
    def views(self) -> Views:
        return Views(self.core, Arith(self.core))

    def _builtin_call(self, it: ast.expr) -> str | None:
        """The builtin ``it`` calls (``range``, ``zip``, ...), if it calls one."""
        if not isinstance(it, ast.Call):
            return None
        fn = self.core.expr(it.func)
        intr = lookup_intrinsic(fn.obj) if isinstance(fn, PyObj) else None
        return intr.name if intr is not None and intr.kind == "builtin" else None

    def _range_bounds(self, it: ast.Call) -> tuple[Scalar, Scalar, Scalar]:
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
        return start, stop, step

    # -- what a for loop iterates --------------------------------------------------------

    def sequence(self, it: ast.expr) -> Sequence_:
        """A view, a captured array, ``range``, ``zip``, ``enumerate`` or ``reversed`` as
        a length and an item function."""
        views = self.views
        name = self._builtin_call(it)
        if name is not None:
            assert isinstance(it, ast.Call)
            if name == "range":
                start, stop, step = self._range_bounds(it)
                self.core.at(it)
                if isinstance(step.const, int) and step.const > 0:
                    length = views.max(
                        views.floordiv(
                            views.add(views.sub(stop, start), views.sub(step, views.i64(1))), step
                        ),
                        views.i64(0),
                    )
                else:
                    length = self._range_length(start, stop, step)
                return Sequence_(length, lambda k: views.add(start, views.mul(k, step)))
            if name in ("zip", "enumerate", "reversed"):
                allowed = {"start"} if name == "enumerate" else set()
                for kw in it.keywords:
                    if kw.arg not in allowed:
                        raise self.core.unsupported(kw.value, f"keyword arguments to {name}()")
                return self._combinator(name, it)
        val = self.core.expr(it)
        if isinstance(val, TupleVal):
            return self._tuple_sequence(val, it)
        if isinstance(val, ArrayRef) and val.type.ndim > 0:
            val = views.full(val)
        if isinstance(val, LocalArray):  # read live at each step, as Python iterates
            val = views.local(val, weak=True)
        if isinstance(val, View | Elementwise):
            arr = val
            self.core.at(it)
            return Sequence_(views.lengths(arr)[0], lambda k: views.item(arr, k))
        raise self.core.error(
            TypeMismatch,
            f"a for loop cannot iterate over a {describe(val)}",
            it,
            hint="iterate over range(...), a view such as a[i] or a[:, j], a captured array, "
            "zip(...), enumerate(...) or reversed(...)",
        )

    def _tuple_sequence(self, t: TupleVal, it: ast.expr) -> Sequence_:
        return tuple_sequence(self.core, self.arith, t, it)

    def _range_length(self, start: Scalar, stop: Scalar, step: Scalar) -> Scalar:
        """``len(range(start, stop, step))`` for a step not known to be positive."""
        v = self.views
        one, zero = v.i64(1), v.i64(0)
        up = v.floordiv(v.add(v.sub(stop, start), v.sub(step, one)), step)
        neg = self.arith.unary("neg", step, None)
        down = v.floordiv(v.add(v.sub(start, stop), v.sub(neg, one)), neg)
        positive = v.index_compare(Opcode.GT, step, zero)
        return v.max(v.select(positive, up, down), zero)

    @property
    def arith(self) -> Arith:
        return Arith(self.core)

    def _combinator(self, name: str, it: ast.Call) -> Sequence_:
        v = self.views
        if name == "zip":
            if not it.args:
                raise self.core.error(TypeMismatch, "zip() needs at least one sequence", it)
            seqs = [self.sequence(a) for a in it.args]
            self.core.at(it)
            length = seqs[0].length
            for s in seqs[1:]:
                length = v.min(length, s.length)  # zip stops at the shortest
            return Sequence_(length, lambda k: TupleVal(tuple(s.item(k) for s in seqs)))
        if name == "enumerate":
            starts = [*it.args[1:], *(kw.value for kw in it.keywords)]
            if len(it.args) < 1 or len(starts) > 1:
                raise self.core.error(TypeMismatch, "enumerate() takes 1 or 2 arguments", it)
            inner = self.sequence(it.args[0])
            first = v.i64(0)
            if starts:
                s0 = self.core.scalar(self.core.expr(starts[0]), starts[0], "enumerate's start")
                if not s0.type.is_int:
                    raise self.core.error(
                        TypeMismatch, "enumerate's start must be an integer", starts[0]
                    )
                first = self.core.convert(s0, I64, True)
            self.core.at(it)
            return Sequence_(inner.length, lambda k: TupleVal((v.add(first, k), inner.item(k))))
        if len(it.args) != 1:
            raise self.core.error(TypeMismatch, "reversed() takes one argument", it)
        if self._builtin_call(it.args[0]) in ("zip", "enumerate", "reversed"):
            raise self.core.error(
                TypeMismatch,
                f"reversed() of {self._builtin_call(it.args[0])}(...): Python cannot reverse it",
                it.args[0],
                hint="reverse what it iterates: zip(reversed(a), reversed(b))",
            )
        inner = self.sequence(it.args[0])
        self.core.at(it)
        last = v.sub(inner.length, v.i64(1))
        return Sequence_(inner.length, lambda k: inner.item(v.sub(last, k)))

    def _assign(self, target: ast.expr, value: Val) -> None:
        """Bind a loop target (a name or nested tuple of names) to the element."""
        if isinstance(target, ast.Name):
            self.core.ctx.env[target.id] = value
            return
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, TupleVal) or len(value.items) != len(target.elts):
                what = describe(value)
                raise self.core.error(
                    TypeMismatch,
                    f"cannot unpack a {what} into {len(target.elts)} names",
                    target,
                    hint="zip(a, b) gives pairs, enumerate(v) gives (index, element)",
                )
            for t, item in zip(target.elts, value.items, strict=True):
                self._assign(t, item)
            return
        raise self.core.unsupported(target, "this loop target", "use a name or names")

    # -- the loop itself -----------------------------------------------------------------

    def _loop(
        self,
        node: ast.While | ast.For,
        body: list[ast.stmt],
        counter: tuple[str, Scalar, Scalar, Scalar] | None,
        bind: Callable[[Scalar], None] | None = None,
    ) -> None:
        ctx = self.core.ctx
        entry_block, entry_env = self.core.b.block, dict(ctx.env)
        assigned = _assigned_names(body) | ({counter[0]} if counter else set())
        if bind is not None:
            assert isinstance(node, ast.For)
            assigned |= _target_names(node.target)
        spec: Spec = {}
        for name in sorted(assigned):
            v = entry_env.get(name)
            if v is not None and not isinstance(v, Unbound):
                flat = flatten(v)
                if flat is not None:
                    spec[name] = (structure(v), [(s.type, s.weak) for s in flat])
        for _ in range(_MAX_LOOP_TYPING_ROUNDS):
            n_blocks, n_returns = len(self.core.b.function.blocks), len(ctx.returns)
            header, exits, loop = self._loop_body(node, body, counter, entry_env, spec, bind=bind)
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
        if not node.orelse:
            ctx.env = self.core.merge_edges([*exits, *loop.breaks], "endloop")
            return
        # for/while ... else: the else body runs where the loop ends without break
        ctx.env = self.core.merge_edges(exits, "loopelse")
        if self.core.live:
            self.core.stmts(node.orelse)
        done = [(self.core.b.block, ctx.env)] if self.core.live else []
        ctx.env = self.core.merge_edges([*done, *loop.breaks], "endloop")

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
        *,
        bind: Callable[[Scalar], None] | None,
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
        loop_names = _assigned_names(body) | ({counter[0]} if counter else set())
        if bind is not None:
            assert isinstance(node, ast.For)
            loop_names |= _target_names(node.target)
        for name in loop_names:
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
            if bind is not None:
                self.core.at(node.target if isinstance(node, ast.For) else node)
                bind(ctx.env[counter[0]])  # type: ignore[arg-type]
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


def _target_names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _assigned_names(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names
