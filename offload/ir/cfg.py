"""Control-flow graph helpers: predecessors, reverse postorder, dominators.

Used by the verifier (dominance of uses) and by the optimiser. Blocks whose terminator
targets a block outside the function are tolerated (the edge is ignored) so that the
verifier can report such IR instead of crashing on it.
"""

from __future__ import annotations

from offload.ir.core import Block, Function


def successors(block: Block, fn_blocks: set[Block] | None = None) -> list[Block]:
    """``block``'s successors, restricted to ``fn_blocks`` when given."""
    succs = block.successors()
    if fn_blocks is None:
        return succs
    return [s for s in succs if s in fn_blocks]


def predecessors(fn: Function) -> dict[Block, list[Block]]:
    """Each block's predecessors, one entry per edge (a two-way branch to one block counts
    twice), in block order. Edges to blocks outside ``fn`` are ignored."""
    preds: dict[Block, list[Block]] = {b: [] for b in fn.blocks}
    for block in fn.blocks:
        for succ in block.successors():
            if succ in preds:
                preds[succ].append(block)
    return preds


def reverse_postorder(fn: Function) -> list[Block]:
    """The blocks reachable from the entry, in reverse postorder of a depth-first search
    that visits successors in terminator order (then-target before else-target)."""
    if not fn.blocks:
        return []
    members = set(fn.blocks)
    seen: set[Block] = {fn.entry}
    order: list[Block] = []
    # Iterative DFS: (block, iterator position) frames so deep CFGs cannot hit recursion.
    stack: list[tuple[Block, list[Block]]] = [(fn.entry, successors(fn.entry, members))]
    while stack:
        block, pending = stack[-1]
        if pending:
            succ = pending.pop(0)
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, successors(succ, members)))
        else:
            order.append(block)
            stack.pop()
    order.reverse()
    return order


def immediate_dominators(fn: Function) -> dict[Block, Block | None]:
    """Immediate dominator of each reachable block (``None`` for the entry).

    Cooper, Harvey and Kennedy's iterative algorithm over reverse postorder.
    """
    rpo = reverse_postorder(fn)
    if not rpo:
        return {}
    number = {b: k for k, b in enumerate(rpo)}
    preds = predecessors(fn)
    idom: dict[Block, Block] = {rpo[0]: rpo[0]}

    def intersect(a: Block, b: Block) -> Block:
        while a is not b:
            while number[a] > number[b]:
                a = idom[a]
            while number[b] > number[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for block in rpo[1:]:
            new: Block | None = None
            for p in preds[block]:
                if p in idom:
                    new = p if new is None else intersect(p, new)
            if new is not None and idom.get(block) is not new:
                idom[block] = new
                changed = True
    result: dict[Block, Block | None] = {b: idom[b] for b in rpo}
    result[rpo[0]] = None
    return result


def dominators(fn: Function) -> dict[Block, set[Block]]:
    """For each block of ``fn``, the set of blocks that dominate it (itself included).

    An unreachable block is dominated by every block (the usual convention: any use in
    dead code is acceptable), so a use there never fails a dominance check.
    """
    idom = immediate_dominators(fn)
    everything = set(fn.blocks)
    doms: dict[Block, set[Block]] = {}
    for block in fn.blocks:
        if block not in idom:
            doms[block] = set(everything)
            continue
        chain: set[Block] = set()
        b: Block | None = block
        while b is not None:
            chain.add(b)
            b = idom[b]
        doms[block] = chain
    return doms


def dominates(doms: dict[Block, set[Block]], a: Block, b: Block) -> bool:
    """Whether ``a`` dominates ``b`` given ``dominators(fn)``."""
    return a in doms.get(b, ())


def dominator_tree(fn: Function) -> dict[Block, list[Block]]:
    """Children of each reachable block in the dominator tree, in reverse postorder."""
    idom = immediate_dominators(fn)
    children: dict[Block, list[Block]] = {b: [] for b in idom}
    for block in reverse_postorder(fn):
        parent = idom[block]
        if parent is not None:
            children[parent].append(block)
    return children
