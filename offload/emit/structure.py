"""The element function's control flow as Python statements: ``emit_body``.

A reducible CFG (every CFG the frontend makes) becomes structured Python, so that numba
and NVVM see natural loops (``offload.emit.structurize``)::

    k_5, x_6 = (v_3, v_4)            # block arguments by parallel assignment
    while True:
        v_8 = k_5 < i1
        if not v_8:
            break
        ...
        k_5, x_6 = (v_12, v_10)       # the back edge falls off the end of the body
    out0[0] = x_6                     # hooks.ret

An irreducible CFG falls back to a dispatch loop over a block id (``offload.emit.dispatch``).

Values that live across blocks (block arguments and ops used outside their block) are
given a typed zero before any control flow, so that numba sees one definite type on every
path (this matters for numba.cuda as much as for njit). Before the statements of each source
line the emitter puts a marker that ``offload.emit.pysrc`` prints as ``# offload: file:line``.
"""

from __future__ import annotations

import ast

from offload.diagnostics import CompileError
from offload.emit.blocks import LINE_MARKER, Names, cross_block_values
from offload.emit.dispatch import BLOCK_VAR, dispatch_loop
from offload.emit.division import constant_values
from offload.emit.flatten import check_depth, flatten_chains
from offload.emit.hooks import EmitHooks
from offload.emit.ops import OpContext
from offload.emit.recursion import recursion_room
from offload.emit.structurize import EXIT_VAR, LoopForest, Structurizer
from offload.emit.template import assign, const, name
from offload.ir.core import Function
from offload.ir.ops import Opcode
from offload.ir.types import ArrayType, LocalType, ScalarType

__all__ = ["BLOCK_VAR", "EXIT_VAR", "LINE_MARKER", "emit_body"]


def emit_body(fn: Function, hooks: EmitHooks) -> list[ast.stmt]:
    """``emit_body_and_locals`` with the local arrays' allocations first."""
    body, allocations = emit_body_and_locals(fn, hooks)
    return [*allocations, *body]


def emit_body_and_locals(fn: Function, hooks: EmitHooks) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """Statements that evaluate ``fn`` for one index and hand the results to ``hooks.ret``.

    The second list allocates the local arrays (one storage per ``LOCAL`` op, which the
    frontend guarantees is enough: ``offload/frontend/local_arrays.py``): a backend runs it
    before the body, once per element or hoisted out of its loop over elements (the
    ``LOCAL`` op itself emits nothing; its contents are undefined until written).

    Control never leaves the statements by ``break``/``continue`` of an enclosing loop, so
    a backend may splice them into its own loop nest. Pure: the same IR and hooks give the
    same statements. Raises ``CompileError`` for IR the emitter cannot express (which a
    verified function never is), and a located ``UnsupportedSyntax`` for loops or blocks
    nested deeper than a kernel can hold (``offload.emit.flatten``). Long ``if``/``elif``
    chains are flattened, so their length does not count as depth.
    """
    for block in fn.blocks:
        if block.terminator is None:
            raise CompileError(f"block {block.hint or ''} of {fn.name} has no terminator")
    entry_is_target = any(fn.entry in b.successors() for b in fn.blocks)
    names = Names(fn, hooks, entry_is_target)
    cx = OpContext(names.ref, names.var, names.capture_of, hooks, constant_values(fn))
    out: list[ast.stmt] = []
    allocations: list[ast.stmt] = []
    for op in fn.ops():
        if op.opcode is Opcode.LOCAL:
            assert isinstance(op.result.type, LocalType)
            allocations.append(assign(names.var(op.result), hooks.local_array(op.result.type)))
    for v in cross_block_values(fn, entry_is_target):
        if isinstance(v.type, LocalType):
            continue  # allocated before the body
        assert isinstance(v.type, ScalarType)
        out.append(assign(names.var(v), const(0, v.type)))
    if entry_is_target:
        params = [v for v in fn.entry.args if not isinstance(v.type, ArrayType)]
        for v in params:
            out.append(assign(names.var(v), name(hooks.param_name(names.params[v]))))
    forest = LoopForest(fn)
    if not forest.reducible:
        body = dispatch_loop(fn, cx, names)
    else:
        s = Structurizer(fn, forest, cx, names)
        # A few frames per nested block (an ``elif`` chain of n arms nests n deep before
        # ``flatten_chains`` undoes it).
        with recursion_room(8 * len(fn.blocks)):
            body = s.body()
        if s.uses_exit_var:
            out.append(assign(EXIT_VAR, ast.Constant(0)))
    body = flatten_chains(body)
    check_depth(body, fn.name, fn.span)
    return [*out, *body], allocations
