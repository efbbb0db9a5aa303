"""The fallback for an irreducible CFG: a dispatch loop over a block-id variable::

    _blk = 0
    while True:
        if _blk == 0:
            ...
            x_7, n_8 = x_3, n_4      # block arguments by parallel assignment
            _blk = 1
        elif _blk == 1:
            ...
            out0[i0] = x_7           # hooks.ret
            break

Correct for any CFG, but NVVM/LLVM does not thread the state machine back into natural
loops, so ``offload.emit.structurize`` is used whenever the CFG is reducible (the frontend
never makes an irreducible one).
"""

from __future__ import annotations

import ast

from offload.emit.blocks import Lines, Names, block_ops, pass_args, ret_stmts
from offload.emit.ops import OpContext
from offload.emit.template import assign, expr
from offload.ir.core import Block, Branch, Function, Jump, Return, Value

BLOCK_VAR = "_blk"


def dispatch_loop(fn: Function, cx: OpContext, names: Names) -> list[ast.stmt]:
    """The ``_blk = 0; while True: if _blk == 0: ...`` statements for every block of ``fn``
    (the caller has already given cross-block values their typed zeros)."""
    ids = {b: k for k, b in enumerate(fn.blocks)}
    chain: list[ast.stmt] = []
    for block in reversed(fn.blocks):
        body = _block_stmts(block, cx, names, ids)
        test = expr(f"{BLOCK_VAR} == k", k=ast.Constant(ids[block]))
        chain = [ast.If(test, body, chain)]
    return [assign(BLOCK_VAR, ast.Constant(0)), ast.While(ast.Constant(True), chain, [])]


def _block_stmts(
    block: Block, cx: OpContext, names: Names, ids: dict[Block, int]
) -> list[ast.stmt]:
    lines = Lines()
    out = block_ops(block, cx, lines)
    t = block.terminator
    if isinstance(t, Return):
        lines.add(out, t.span, [*ret_stmts(t, names, cx.hooks), ast.Break()])
    elif isinstance(t, Jump):
        lines.add(out, t.span, _goto(t.target, t.args, names, ids))
    elif isinstance(t, Branch):
        then = _goto(t.then_target, t.then_args, names, ids)
        other = _goto(t.else_target, t.else_args, names, ids)
        lines.add(out, t.span, [ast.If(names.ref(t.cond), then, other)])
    return out or [ast.Pass()]


def _goto(target: Block, args: list[Value], names: Names, ids: dict[Block, int]) -> list[ast.stmt]:
    out = pass_args(target, args, names)
    out.append(assign(BLOCK_VAR, ast.Constant(ids[target])))
    return out
