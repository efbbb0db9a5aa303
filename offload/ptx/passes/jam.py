"""Register blocking: unroll-and-jam of the index space (GPU backend only; not in the registry).

A staged reduction (``offload.opt.stage``) still reads two shared-memory values per
multiply-add in ``C[i, j] = sum(A[i, k] * Bt[j, k] for k in range(n))``: the kernel is bound
by shared-memory reads (matrix-mult at 10.8x cuBLAS, run 5). When one thread computes the
``f0 x f1`` elements ``(i + a*T, j + b*T)`` together, it reads ``A[i + a*T, k]`` once for
``f1`` elements and ``Bt[j + b*T, k]`` once for ``f0``: ``f0 + f1`` reads per ``f0 * f1``
multiply-adds. This pass makes that function: a *blocked* function (``Function.blocking``)
with ``f0`` index parameters for axis 0 and ``f1`` for axis 1, one per copy, that returns
the results of every copy.

The copies run in one control flow ("jam"), so the pass applies only when every branch
condition depends on no blocked axis (``offload.analysis.uniform``): then every copy takes
the same path, the one the shared condition values take. (A *checked* jam, which the
walking kernels use, also admits boundary tests and checks them at run time:
``JamIndex.checked``.) Each value is made once per
combination of the copies of the axes it depends on: a value that depends on axis 0 only
(``A[i, k]``) has ``f0`` copies, a uniform one (the counter ``k``) one, and the accumulator
``f0 * f1``. Copy ``c`` computes exactly the ops the element function runs at copy ``c``'s
index, in the same order, so every element is bit-exact and the blocked function reads
exactly what its elements read.

The kernel maps the copies onto its thread tile (``offload.ptx.kernel_source``): copy
``(a, b)`` of the thread at ``(i, j)`` is the element ``(i + a*tile, j + b*tile)``, clamped
into the index space, so a warp still stores neighbouring elements.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from offload.analysis.boundary import BoundaryTests
from offload.analysis.uniform import NONE, Deps, thread_dependence
from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import TILE_OPS, Opcode
from offload.ir.types import BOOL, ScalarType
from offload.opt.base import FunctionPass
from offload.ptx.passes.sequential import sequential

Key = tuple[int, ...]
"""A copy: one copy number per axis (0 on the axes a value does not depend on)."""


class _Jam:
    def __init__(
        self, fn: Function, factors: tuple[int, ...], deps: dict[Value, Deps], checked: bool
    ) -> None:
        self.fn = fn
        self.factors = factors
        self.deps = deps
        self.checked = checked
        """Branches that may part the copies are checked (see ``JamIndex.checked``)."""
        self.blocked = {axis for axis, f in enumerate(factors) if f > 1}
        self.extra: list[Block] = []
        """Blocks made besides the copies of ``fn``'s: checked branches, the fallback."""
        self.fallback: Block | None = None
        self.copies: list[Key] = list(itertools.product(*(range(f) for f in factors)))
        self.vmap: dict[tuple[Value, Key], Value] = {}
        self.bmap: dict[Block, Block] = {}

    def key(self, v: Value, copy: Key) -> Key:
        on = self.deps.get(v, NONE)
        return tuple(c if axis in on else 0 for axis, c in enumerate(copy))

    def keys(self, v: Value) -> list[Key]:
        """The copies ``v`` is made in, in row-major order."""
        return list(dict.fromkeys(self.key(v, c) for c in self.copies))

    def get(self, v: Value, copy: Key) -> Value:
        return self.vmap.get((v, self.key(v, copy)), v)

    def new_value(self, v: Value, key: Key) -> Value:
        hint = v.hint if not any(key) or v.hint is None else f"{v.hint}_c{'_'.join(map(str, key))}"
        new = Value(v.type, hint)
        self.vmap[(v, key)] = new
        return new

    def run(self) -> Function:
        fn, factors = self.fn, self.factors
        params: list[Value] = []
        for axis, f in enumerate(factors):
            p = fn.index_params[axis]
            for c in range(f):
                key = tuple(c if a == axis else 0 for a in range(len(factors)))
                params.append(self.new_value(p, key))
        zero = (0,) * len(factors)
        params += [self.new_value(p, zero) for p in fn.capture_params]
        for block in fn.blocks:  # every value first: a block may use one defined later in the list
            args = params if block is fn.entry else self.block_args(block)
            self.bmap[block] = Block(args=args, hint=block.hint)
            for op in block.ops:
                for key in self.keys(op.result):
                    self.new_value(op.result, key)
        if self.checked:
            self.fallback, each = sequential(fn, self.each_index(params), params[sum(factors) :])
        for block in fn.blocks:
            new = self.bmap[block]
            for op in block.ops:
                for key in self.keys(op.result):
                    operands = [self.get(x, key) for x in op.operands]
                    result = self.vmap[(op.result, key)]
                    new.ops.append(Op(op.opcode, operands, result, dict(op.attrs), op.span))
            new.terminator = self.terminator(block)
        if self.checked:
            self.extra += each
        return Function(
            fn.name,
            [*(self.bmap[b] for b in fn.blocks), *self.extra],
            sum(factors),
            list(fn.captures),
            list(fn.result_types),
            fn.span,
            factors,
            fn.prologue,  # the hoisted work is per call, whatever the blocking
        )

    def each_index(self, params: list[Value]) -> list[list[Value]]:
        """Each copy's index parameter values, one per axis (row-major copy order)."""
        firsts = [sum(self.factors[:axis]) for axis in range(len(self.factors))]
        return [
            [params[at + c] for at, c in zip(firsts, copy, strict=True)] for copy in self.copies
        ]

    def block_args(self, block: Block) -> list[Value]:
        return [self.new_value(a, key) for a in block.args for key in self.keys(a)]

    def edge(self, target: Block, args: list[Value]) -> tuple[Block, list[Value]]:
        passed = [
            self.get(x, key) for p, x in zip(target.args, args, strict=True) for key in self.keys(p)
        ]
        return self.bmap[target], passed

    def terminator(self, block: Block) -> Jump | Branch | Return:
        t = block.terminator
        if isinstance(t, Jump):
            return Jump(*self.edge(t.target, t.args), t.span)
        if isinstance(t, Branch):
            cond = self.get(t.cond, (0,) * len(self.factors))
            then_b, then_a = self.edge(t.then_target, t.then_args)
            else_b, else_a = self.edge(t.else_target, t.else_args)
            branch = Branch(cond, then_b, then_a, else_b, else_a, t.span, t.uniform)
            if self.deps.get(t.cond, NONE) & self.blocked:
                return self.check(block, t.cond, branch)
            return branch
        assert isinstance(t, Return)
        return Return([self.get(v, c) for c in self.copies for v in t.values], t.span)

    def check(self, block: Block, cond: Value, branch: Branch) -> Branch:
        """``branch`` (on copy 0's ``cond``) where every copy's ``cond`` agrees with copy
        0's, else a jump to the fallback: ``block``'s copy ends by testing that."""
        assert self.checked and self.fallback is not None, "a branch that parts the copies"
        new, span = self.bmap[block], branch.span
        parted: Value | None = None
        for key in self.keys(cond)[1:]:
            differs = Value(BOOL, "parts")
            new.ops.append(Op(Opcode.XOR, [branch.cond, self.vmap[(cond, key)]], differs, {}, span))
            if parted is not None:
                either = Value(BOOL, "parts")
                new.ops.append(Op(Opcode.OR, [parted, differs], either, {}, span))
                differs = either
            parted = differs
        assert parted is not None
        agree = Block(args=[], hint="agree")
        agree.terminator = branch
        self.extra.append(agree)
        return Branch(parted, self.fallback, [], agree, [], span, uniform=True)


@dataclass(frozen=True)
class JamIndex(FunctionPass):
    """Block ``fn`` by ``factors`` (one per axis) when every branch is uniform along the
    blocked axes (see above); any other function comes back unchanged."""

    name = "jam"
    factors: tuple[int, ...] = (4, 4)
    max_carried: int = 80
    """32-bit registers the blocked loop may carry (of the 255 a thread can have): more, and
    the blocking does not count as applied (``applied``)."""
    checked: bool = False
    """Block also where branches may part the copies, if every such branch is a boundary
    test along the blocked axes (``offload.analysis.boundary``): the copies follow copy 0's
    path while each of those branches finds every copy's condition equal to copy 0's, and
    otherwise leave for a fallback that computes them one after another
    (``offload.ptx.passes.sequential``; the element function is pure, so starting afresh
    computes what it computes alone). Only for kernels without barriers: the fallback is
    taken by some threads of a block and not others."""

    def applied(self, fn: Function) -> bool:
        """Whether ``fn`` (this pass's result) is blocked within ``max_carried``."""
        return bool(fn.blocking) and carried_words(fn) <= self.max_carried

    def rewrite(self, fn: Function) -> Function:
        if fn.blocking or len(self.factors) != fn.n_index or math.prod(self.factors) == 1:
            return fn
        if min(self.factors) < 1 or any(op.opcode in TILE_OPS for op in fn.ops()):
            return fn
        if any(op.opcode is Opcode.LOCAL for op in fn.ops()):
            return fn  # a copy of every local array per blocked element: local memory
        blocked = {axis for axis, f in enumerate(self.factors) if f > 1}
        agreed: set[Value] = set()
        while True:  # boundary tests, then what depended on the blocked axes only through them
            deps = thread_dependence(fn, agreed)
            parting = {
                t.cond
                for block in fn.blocks
                if isinstance(t := block.terminator, Branch) and deps.get(t.cond, NONE) & blocked
            }
            if not parting or not self.checked:
                break
            tests = [BoundaryTests(fn, axis, deps) for axis in blocked]
            new = {c for c in parting if all(b.test(c) for b in tests)} - agreed
            if not new:
                break
            agreed |= new
        if parting - agreed:
            return fn  # the copies could take different paths (often, if they are checked)
        return _Jam(fn, self.factors, deps, checked=bool(parting)).run()


def carried_words(fn: Function) -> int:
    """The most 32-bit registers the arguments of one block take: the sums a blocked loop
    carries from one iteration to the next (``offload.ptx.variants`` bounds them)."""
    words = [
        sum(-(-a.type.dtype.itemsize // 4) for a in b.args if isinstance(a.type, ScalarType))
        for b in fn.blocks[1:]
    ]
    return max(words, default=0)
