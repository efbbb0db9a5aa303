"""Which index parameters a value may depend on ("thread dependence").

A kernel runs one element per thread, so a value that depends on no index parameter is the
same in every thread (uniform): a loop bound computed from array extents, a captured
scalar, a value loaded at a uniform index. ``offload.opt.stage`` needs to know which loads
are the same along one axis of a thread tile and which branches every thread takes alike.

The analysis is a forward fixpoint over sets of index-parameter numbers:

* index parameter ``k`` depends on ``{k}`` (on its axis, in a blocked function);
  captures and constants on nothing;
* an op's result depends on what its operands depend on (a ``LOAD`` on what its indices
  depend on: captured arrays are read-only, so equal indices read equal values);
* a block argument depends on the values passed to it *and* on the condition of every
  branch from which its block can be reached: which edge a thread arrives by is control
  dependence, and two threads that arrive by different edges parted at some branch that
  reaches the block. Taking every such branch rather than only the controlling ones (those
  whose join the block is) is coarse but sound; a branch after a loop does not reach it.
"""

from __future__ import annotations

from collections.abc import Collection

from offload.ir.cfg import predecessors
from offload.ir.core import Block, Branch, Function, Jump, Value

Deps = frozenset[int]
NONE: Deps = frozenset()


def thread_dependence(fn: Function, agreed: Collection[Value] = ()) -> dict[Value, Deps]:
    """For every scalar value of ``fn``, the index axes it may depend on (of a blocked
    function: the axes of its index parameters). Branches on the conditions ``agreed`` are
    known to be taken alike (a checked jam tests it at run time): they add no control
    dependence."""
    deps: dict[Value, Deps] = {}
    for block in fn.blocks:  # every value gets an entry, uniform ones too
        deps.update((a, NONE) for a in block.args)
        deps.update((op.result, NONE) for op in block.ops)
    for k, v in enumerate(fn.entry.args):
        deps[v] = frozenset({fn.index_axis(k)}) if k < fn.n_index else NONE
    incoming: dict[Value, list[Value]] = {}
    for block in fn.blocks:
        t = block.terminator
        edges: list[tuple[Block, list[Value]]] = []
        if isinstance(t, Branch):
            edges = [(t.then_target, t.then_args), (t.else_target, t.else_args)]
        elif isinstance(t, Jump):
            edges = [(t.target, t.args)]
        for target, args in edges:
            for param, arg in zip(target.args, args, strict=True):
                incoming.setdefault(param, []).append(arg)
    conds = {b: [c for c in cs if c not in agreed] for b, cs in _conditions_reaching(fn).items()}

    def of(v: Value) -> Deps:
        return deps.get(v, NONE)

    changed = True
    while changed:
        changed = False
        for block in fn.blocks:
            if block is not fn.entry:
                control = NONE.union(*(of(c) for c in conds[block]))
                for a in block.args:
                    new = control.union(*(of(x) for x in incoming.get(a, [])))
                    if new != of(a):
                        deps[a] = new
                        changed = True
            for op in block.ops:
                new = NONE.union(*(of(x) for x in op.operands))
                if new != of(op.result):
                    deps[op.result] = new
                    changed = True
    return deps


def _conditions_reaching(fn: Function) -> dict[Block, list[Value]]:
    """For each block, the conditions of the branches from which it can be reached."""
    preds = predecessors(fn)
    out: dict[Block, list[Value]] = {}
    for block in fn.blocks:
        seen: set[Block] = set()
        work = list(preds[block])
        while work:
            b = work.pop()
            if b not in seen:
                seen.add(b)
                work.extend(preds[b])
        out[block] = [t.cond for b in seen if isinstance(t := b.terminator, Branch)]
    return out
