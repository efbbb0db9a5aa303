"""Which index parameters a value may depend on ("thread dependence").

A kernel runs one element per thread, so a value that depends on no index parameter is the
same in every thread (uniform): a loop bound computed from array extents, a captured
scalar, a value loaded at a uniform index. ``offload.opt.stage`` needs to know which loads
are the same along one axis of a thread tile and which branches every thread takes alike.

The analysis is a forward fixpoint over sets of index-parameter numbers:

* index parameter ``k`` depends on ``{k}``; captures and constants on nothing;
* an op's result depends on what its operands depend on (a ``LOAD`` on what its indices
  depend on: captured arrays are read-only, so equal indices read equal values);
* a block argument depends on the values passed to it *and* on every branch condition of
  the function: which edge a thread arrives by is control dependence. Taking all conditions
  rather than only the controlling ones is coarse, but sound and enough for the loops the
  stage pass looks for (whose only branches are uniform loop tests).
"""

from __future__ import annotations

from offload.ir.core import Block, Branch, Function, Jump, Value

Deps = frozenset[int]
NONE: Deps = frozenset()


def thread_dependence(fn: Function) -> dict[Value, Deps]:
    """For every scalar value of ``fn``, the index parameters (by number) it may depend on."""
    deps: dict[Value, Deps] = {}
    for k, v in enumerate(fn.entry.args):
        deps[v] = frozenset({k}) if k < fn.n_index else NONE
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
    conds = [t.cond for b in fn.blocks if isinstance(t := b.terminator, Branch)]

    def of(v: Value) -> Deps:
        return deps.get(v, NONE)

    changed = True
    while changed:
        changed = False
        control = frozenset().union(*(of(c) for c in conds))
        for block in fn.blocks:
            if block is not fn.entry:
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
