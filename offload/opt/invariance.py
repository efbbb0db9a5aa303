"""Index-invariance facts for ``offload.opt.hoist``: which values depend on the index,
which ops may move, and where an element function can be split into a once-per-call
prologue and the per-element rest (the split points of ``hoist``'s module doc).
"""

from __future__ import annotations

from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import Opcode

MOVABLE = frozenset(
    {
        Opcode.CONST,
        Opcode.ADD,
        Opcode.SUB,
        Opcode.MUL,
        Opcode.TRUEDIV,
        Opcode.FLOORDIV,
        Opcode.FLOORMOD,
        Opcode.DIV,
        Opcode.REM,
        Opcode.POW,
        Opcode.MIN,
        Opcode.MAX,
        Opcode.AND,
        Opcode.OR,
        Opcode.XOR,
        Opcode.SHL,
        Opcode.SHR,
        Opcode.NEG,
        Opcode.INVERT,
        Opcode.NOT,
        Opcode.ABS,
        Opcode.EQ,
        Opcode.NE,
        Opcode.LT,
        Opcode.LE,
        Opcode.GT,
        Opcode.GE,
        Opcode.SELECT,
        Opcode.CAST,
        Opcode.MATH,
        Opcode.LOAD,
        Opcode.SHAPE,
    }
)
"""Pure ops (the same operands give the same result, nothing else happens; ``LOAD`` reads
read-only captured arrays): the ops ``P`` may hold. Any other opcode refuses the split."""

CHEAP_MATH = frozenset(
    {
        "sqrt",
        "rsqrt",
        "fabs",
        "floor",
        "ceil",
        "trunc",
        "rint",
        "isnan",
        "isinf",
        "isfinite",
        "copysign",
    }
)
"""Math functions cheap enough to recompute per element (one or a few instructions)."""


def costly(op: Op) -> bool:
    return op.opcode is Opcode.MATH and op.attrs["fn"] not in CHEAP_MATH


def index_dependent(fn: Function, rpo: list[Block]) -> set[Value]:
    """Values that may depend on an index parameter through data flow (a block argument
    where any incoming value does). Control dependence is the split points' concern: they
    require ``P``'s branches to be invariant."""
    dep: set[Value] = set(fn.index_params)
    changed = True
    while changed:
        changed = False
        for block in rpo:
            for op in block.ops:
                if op.result not in dep and any(v in dep for v in op.operands):
                    dep.add(op.result)
                    changed = True
            for target, args in edges(block):
                for param, arg in zip(target.args, args, strict=True):
                    if param not in dep and arg in dep:
                        dep.add(param)
                        changed = True
    return dep


def terminator_uses(block: Block) -> list[Value]:
    t = block.terminator
    if isinstance(t, Return):
        return list(t.values)
    if isinstance(t, Jump):
        return list(t.args)
    if isinstance(t, Branch):
        return [t.cond, *t.then_args, *t.else_args]
    return []


def edges(block: Block) -> list[tuple[Block, list[Value]]]:
    t = block.terminator
    if isinstance(t, Jump):
        return [(t.target, t.args)]
    if isinstance(t, Branch):
        return [(t.then_target, t.then_args), (t.else_target, t.else_args)]
    return []


def post_dominator_chain(rpo: list[Block], preds: dict[Block, list[Block]]) -> list[Block]:
    """The blocks every execution from the entry to a return passes, in order, entry first
    (the entry's post-dominators; Cooper-Harvey-Kennedy over the reversed graph)."""
    exits = [b for b in rpo if isinstance(b.terminator, Return)]
    if not exits:
        return [rpo[0]]
    reachable = set(rpo)
    # Reverse postorder of the reversed graph from a virtual exit (None).
    order: list[Block | None] = []
    seen: set[Block | None] = {None}
    stack: list[tuple[Block | None, list[Block]]] = [(None, list(exits))]
    while stack:
        node, pending = stack[-1]
        if pending:
            nxt = pending.pop(0)
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [p for p in preds[nxt] if p in reachable]))
        else:
            order.append(node)
            stack.pop()
    order.reverse()
    number = {b: k for k, b in enumerate(order)}
    ipdom: dict[Block | None, Block | None] = {None: None}

    def intersect(a: Block | None, b: Block | None) -> Block | None:
        while a is not b:
            while number[a] > number[b]:
                a = ipdom[a]
            while number[b] > number[a]:
                b = ipdom[b]
        return a

    changed = True
    while changed:
        changed = False
        for node in order[1:]:
            assert node is not None
            succs: list[Block | None] = [s for s in node.successors() if s in number]
            if isinstance(node.terminator, Return):
                succs.append(None)
            new: Block | None = None
            first = True
            for s in succs:
                if s in ipdom:
                    new = s if first else intersect(s, new)
                    first = False
            if not first and (node not in ipdom or ipdom[node] is not new):
                ipdom[node] = new
                changed = True
    chain: list[Block] = []
    cur: Block | None = rpo[0]
    while cur is not None and cur in ipdom:
        chain.append(cur)
        cur = ipdom[cur]
    return chain or [rpo[0]]


def split_points(
    fn: Function, rpo: list[Block], preds: dict[Block, list[Block]], dep: set[Value]
) -> list[tuple[Block, set[Block]]]:
    """The valid split points ``X`` in execution order, each with its ``P`` (see the module
    doc). One forward walk along the entry's post-dominator chain: ``P`` only grows, and a
    dependent branch, an impure op or a return in ``P`` ends the walk."""
    chain = post_dominator_chain(rpo, preds)
    reachable = set(rpo)
    found: list[tuple[Block, set[Block]]] = []
    inside: set[Block] = set()
    outside_edges = 0  # edges into P from blocks not in P
    start = chain[0]
    for x in chain[1:]:
        # Grow P by the blocks reachable from ``start`` without passing ``x``.
        work = [start] if start not in inside else []
        while work:
            b = work.pop()
            if b in inside or b is x:
                continue
            t = b.terminator
            if isinstance(t, Return) or t is None:
                return found
            if isinstance(t, Branch) and t.cond in dep:
                return found
            if any(op.opcode not in MOVABLE for op in b.ops):
                return found
            inside.add(b)
            outside_edges += sum(1 for p in preds[b] if p not in inside and p in reachable)
            outside_edges -= sum(1 for s in b.successors() if s in inside and s is not b)
            work.extend(s for s in b.successors() if s not in inside)
        if outside_edges == 0:
            found.append((x, set(inside)))
        start = x
    return found
