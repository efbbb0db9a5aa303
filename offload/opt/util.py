"""Small IR surgery shared by the passes: use replacement, constants, CFG clean-up, loops."""

from __future__ import annotations

from dataclasses import dataclass, field

from offload.ir.cfg import immediate_dominators, predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType


def resolve(mapping: dict[Value, Value], value: Value) -> Value:
    """Follow ``mapping`` to the final replacement of ``value`` (chains allowed)."""
    while value in mapping:
        value = mapping[value]
    return value


def replace_uses(fn: Function, mapping: dict[Value, Value]) -> None:
    """Rewrite every operand and terminator argument of ``fn`` through ``mapping``."""
    if not mapping:
        return
    for block in fn.blocks:
        for op in block.ops:
            op.operands = [resolve(mapping, v) for v in op.operands]
        t = block.terminator
        if isinstance(t, Jump):
            t.args = [resolve(mapping, v) for v in t.args]
        elif isinstance(t, Branch):
            t.cond = resolve(mapping, t.cond)
            t.then_args = [resolve(mapping, v) for v in t.then_args]
            t.else_args = [resolve(mapping, v) for v in t.else_args]
        elif isinstance(t, Return):
            t.values = [resolve(mapping, v) for v in t.values]


def op_type(op: Op) -> ScalarType:
    """The scalar type of ``op``'s result (rewrite rules apply to scalar ops only)."""
    t = op.result.type
    assert isinstance(t, ScalarType)
    return t


def op_is_int(op: Op) -> bool:
    """Whether ``op`` gives an integer."""
    return op_type(op).is_int


def const_value(defs: dict[Value, Op], value: Value) -> object | None:
    """The constant ``value`` holds if a ``CONST`` op defines it, else ``None``."""
    op = defs.get(value)
    if op is not None and op.opcode is Opcode.CONST:
        held: object = op.attrs["value"]
        return held
    return None


def definitions(fn: Function) -> dict[Value, Op]:
    """The op defining each op result of ``fn``."""
    return {op.result: op for op in fn.ops()}


def def_blocks(fn: Function) -> dict[Value, Block]:
    """The block defining each value (block argument or op result) of ``fn``."""
    where: dict[Value, Block] = {}
    for block in fn.blocks:
        for arg in block.args:
            where[arg] = block
        for op in block.ops:
            where[op.result] = block
    return where


def remove_unreachable(fn: Function) -> bool:
    """Drop blocks the entry cannot reach; return whether any were dropped."""
    live = set(reverse_postorder(fn))
    kept = [b for b in fn.blocks if b in live]
    changed = len(kept) != len(fn.blocks)
    fn.blocks = kept
    return changed


def edge_args(block: Block, target: Block) -> list[list[Value]]:
    """The argument lists ``block``'s terminator passes to ``target`` (one per edge)."""
    t = block.terminator
    out: list[list[Value]] = []
    if isinstance(t, Jump) and t.target is target:
        out.append(t.args)
    elif isinstance(t, Branch):
        if t.then_target is target:
            out.append(t.then_args)
        if t.else_target is target:
            out.append(t.else_args)
    return out


def drop_block_args(fn: Function, block: Block, keep: list[bool]) -> None:
    """Remove ``block``'s arguments where ``keep`` is false, and the matching edge args."""
    block.args = [a for a, k in zip(block.args, keep, strict=True) if k]
    for pred in fn.blocks:
        t = pred.terminator
        if isinstance(t, Jump) and t.target is block:
            t.args = [a for a, k in zip(t.args, keep, strict=True) if k]
        elif isinstance(t, Branch):
            if t.then_target is block:
                t.then_args = [a for a, k in zip(t.then_args, keep, strict=True) if k]
            if t.else_target is block:
                t.else_args = [a for a, k in zip(t.else_args, keep, strict=True) if k]


def merge_chains(fn: Function) -> bool:
    """Append each block reached only by a ``Jump`` from one predecessor to that predecessor.

    The successor's arguments become the jump's arguments. Returns whether anything merged.
    """
    changed = False
    again = True
    while again:
        again = False
        preds = predecessors(fn)
        for block in list(fn.blocks):
            t = block.terminator
            if not isinstance(t, Jump):
                continue
            succ = t.target
            if succ is block or succ is fn.entry or len(preds[succ]) != 1:
                continue
            mapping = dict(zip(succ.args, t.args, strict=True))
            block.ops.extend(succ.ops)
            block.terminator = succ.terminator
            fn.blocks.remove(succ)
            replace_uses(fn, mapping)
            changed = again = True
            break
    return changed


@dataclass(eq=False)
class Loop:
    """A natural loop: its header, its blocks, and the blocks with a back edge to it."""

    header: Block
    blocks: set[Block] = field(default_factory=set[Block])
    latches: list[Block] = field(default_factory=list[Block])


def natural_loops(fn: Function) -> list[Loop]:
    """Natural loops of ``fn`` (back edges merged per header), innermost (smallest) first."""
    idom = immediate_dominators(fn)
    preds = predecessors(fn)

    def dominates(a: Block, b: Block) -> bool:
        cur: Block | None = b
        while cur is not None:
            if cur is a:
                return True
            cur = idom.get(cur)
        return False

    loops: dict[Block, Loop] = {}
    for block in reverse_postorder(fn):
        for succ in block.successors():
            if succ in idom and dominates(succ, block):
                loop = loops.setdefault(succ, Loop(succ, {succ}))
                loop.latches.append(block)
                work = [block]
                while work:
                    b = work.pop()
                    if b in loop.blocks:
                        continue
                    loop.blocks.add(b)
                    work.extend(p for p in preds[b] if p in idom)
    return sorted(loops.values(), key=lambda lp: len(lp.blocks))
