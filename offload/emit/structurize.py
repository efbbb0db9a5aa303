"""Structured control flow from a reducible CFG: ``while``/``if``/``break``/``continue``.

Ramsey's "Beyond Relooper" (ICFP 2022), driven by the dominator tree. Each block's code is
emitted once, in the subtree of its immediate dominator:

* a **loop header** (the target of a back edge) becomes ``while True:`` around its code; a
  back edge is ``continue``; the header's dominator-tree children outside the loop are
  placed after the ``while`` (a jump to them from inside is a ``break``);
* a **merge node** (two or more forward in-edges) is placed after the code of its
  immediate dominator, in reverse-postorder (a jump to it falls through to it);
* any other target has one predecessor and is emitted inline at the jump.

Python has no labelled ``break`` or ``goto``. A jump that must leave more than one loop, or
reach a follow-on block that is not the next fall-through point, goes through the exit
variable ``_exit`` (an int, 0 when no exit is pending): ``_exit = k; break``; after each
loop it leaves, ``if _exit == k: break`` (or ``continue`` for the target loop); code that it
must skip is guarded by ``if _exit == 0:``; where it lands, ``_exit`` is reset to 0.

Every statement list ends in an explicit transfer or falls through to the block that the
structure says comes next, so the only fall-through out of a ``while`` body is a trailing
``continue``, which is dropped for readability.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from offload.emit.blocks import Lines, Names, block_ops, pass_args, ret_stmts
from offload.emit.ops import OpContext
from offload.emit.template import assign, expr
from offload.ir.cfg import dominator_tree, immediate_dominators, predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Function, Jump, Return, Value

EXIT_VAR = "_exit"


@dataclass(eq=False)
class _Loop:
    """Inside the ``while True`` of ``header``."""

    header: Block
    exit_id: int = 0
    """Nonzero once a jump that leaves inner loops continues this loop via ``_exit``."""
    after: dict[int, bool] = field(default_factory=dict[int, bool])
    """Exits to dispatch right after the ``while``: id -> True (continue the next loop
    out, which is the target) or False (break the next loop out)."""


@dataclass(eq=False)
class _Follow:
    """Inside code that is followed by ``block``'s code (``None``: the end of the element)."""

    block: Block | None
    exit_id: int = 0
    """Nonzero once some jump reaches ``block`` through ``_exit``."""
    guarded: bool = False
    """An exit to a further frame passes over this block's code, which it must skip."""


_Frame = _Loop | _Follow
_Line = tuple[str, int] | None


class LoopForest:
    """The CFG facts the structurizer needs; ``reducible`` says whether it applies."""

    def __init__(self, fn: Function) -> None:
        self.rpo = {b: k for k, b in enumerate(reverse_postorder(fn))}
        self.idom = immediate_dominators(fn)
        self.children = dominator_tree(fn)
        preds = predecessors(fn)
        self.forward_in: dict[Block, int] = dict.fromkeys(self.rpo, 0)
        self.bodies: dict[Block, set[Block]] = {}
        """Loop header -> the blocks of its natural loop (the header included)."""
        self.reducible = True
        for u in self.rpo:
            for v in u.successors():
                if v not in self.rpo:
                    continue
                if self.rpo[v] > self.rpo[u]:
                    self.forward_in[v] += 1
                elif self._dominates(v, u):
                    self._add_back_edge(u, v, preds)
                else:
                    self.reducible = False  # a retreating edge into a loop with two entries

    def _dominates(self, a: Block, b: Block) -> bool:
        x: Block | None = b
        while x is not None:
            if x is a:
                return True
            x = self.idom[x]
        return False

    def _add_back_edge(self, source: Block, header: Block, preds: dict[Block, list[Block]]) -> None:
        body = self.bodies.setdefault(header, {header})
        work = [source]
        while work:
            b = work.pop()
            if b in body or b not in self.rpo:
                continue
            body.add(b)
            work.extend(preds[b])

    def is_merge(self, b: Block) -> bool:
        return self.forward_in[b] >= 2


class Structurizer:
    """Emits one reducible function's blocks as structured statements (``body()``)."""

    def __init__(self, fn: Function, forest: LoopForest, cx: OpContext, names: Names) -> None:
        self.fn = fn
        self.g = forest
        self.cx = cx
        self.names = names
        self.n_exits = 0
        self.follows: set[Block] = {b for b in forest.rpo if forest.is_merge(b)}
        for header, body in forest.bodies.items():
            self.follows.update(c for c in forest.children[header] if c not in body)

    @property
    def uses_exit_var(self) -> bool:
        return self.n_exits > 0

    def body(self) -> list[ast.stmt]:
        """The whole element: the entry's dominator subtree, ended by falling off the end."""
        return tidy(self._tree(self.fn.entry, [_Follow(None)]))

    def _tree(self, x: Block, ctx: list[_Frame], line: _Line = None) -> list[ast.stmt]:
        """``x``'s dominator subtree; ``line`` is the source line of the code just before
        it (no marker is repeated for it)."""
        kids = sorted(self.g.children[x], key=self.g.rpo.__getitem__)
        if x not in self.g.bodies:
            merges = [c for c in kids if self.g.is_merge(c)]
            return self._with_follows(merges, ctx, lambda c: self._node(x, c, line))
        body = self.g.bodies[x]
        inside = [c for c in kids if c in body and self.g.is_merge(c)]
        outside = [c for c in kids if c not in body]

        def loop(c: list[_Frame]) -> list[ast.stmt]:
            frame = _Loop(x)
            code = self._with_follows(inside, [*c, frame], lambda c2: self._node(x, c2, None))
            body = _drop_tail_continue(tidy(code))
            out: list[ast.stmt] = [ast.While(ast.Constant(True), body, [])]
            for k, cont in frame.after.items():
                test = expr("e == k", e=ast.Name(EXIT_VAR, ast.Load()), k=ast.Constant(k))
                act: list[ast.stmt] = [_set_exit(0), ast.Continue()] if cont else [ast.Break()]
                out.append(ast.If(test, act, []))
            return out

        return self._with_follows(outside, ctx, loop)

    def _with_follows(
        self,
        ys: list[Block],
        ctx: list[_Frame],
        inner: Callable[[list[_Frame]], list[ast.stmt]],
    ) -> list[ast.stmt]:
        """``inner``'s code followed by each of ``ys``' (in reverse postorder); a jump to
        ``ys[i]`` from code before it lands there."""
        frames = [_Follow(y) for y in ys]
        out = inner([*ctx, *reversed(frames)])
        for i, y in enumerate(ys):
            code = self._tree(y, [*ctx, *reversed(frames[i + 1 :])])
            out.extend(_place(frames[i], code))
        return out

    def _node(self, x: Block, ctx: list[_Frame], line: _Line) -> list[ast.stmt]:
        """``x``'s ops and terminator; targets with a single predecessor follow inline."""
        lines = Lines()
        lines.last = line
        out = block_ops(x, self.cx, lines)
        t = x.terminator
        if isinstance(t, Return):
            ret = ret_stmts(t, self.names, self.cx.hooks)
            lines.add(out, t.span, [*ret, *self._transfer(ctx, 0)])
        elif isinstance(t, Jump):
            jump, inline = self._jump(x, t.target, t.args, ctx)
            lines.add(out, t.span, jump)
            if inline is not None:
                out.extend(self._tree(inline, ctx, lines.last))
        elif isinstance(t, Branch):
            here = (t.span.file, t.span.line) if t.span is not None else lines.last
            then = self._arm(x, t.then_target, t.then_args, ctx, here)
            other = self._arm(x, t.else_target, t.else_args, ctx, here)
            lines.add(out, t.span, [ast.If(self.names.ref(t.cond), then, other)])
        return out

    def _arm(
        self, x: Block, target: Block, args: list[Value], ctx: list[_Frame], line: _Line
    ) -> list[ast.stmt]:
        jump, inline = self._jump(x, target, args, ctx)
        if inline is not None:
            jump.extend(self._tree(inline, ctx, line))
        return jump or [ast.Pass()]

    def _jump(
        self, x: Block, target: Block, args: list[Value], ctx: list[_Frame]
    ) -> tuple[list[ast.stmt], Block | None]:
        """Block-argument assignment + transfer, and the target if it is to be emitted
        inline (its one predecessor is ``x``)."""
        stmts = pass_args(target, args, self.names)
        if self.g.rpo[target] <= self.g.rpo[x]:
            k = _find(ctx, lambda f: isinstance(f, _Loop) and f.header is target)
            return [*stmts, *self._transfer(ctx, k)], None
        if target in self.follows:
            k = _find(ctx, lambda f: isinstance(f, _Follow) and f.block is target)
            return [*stmts, *self._transfer(ctx, k)], None
        return stmts, target

    def _transfer(self, ctx: list[_Frame], k: int) -> list[ast.stmt]:
        """Control from the innermost frame of ``ctx`` to frame ``ctx[k]``: the start of
        its loop (``_Loop``) or the code placed after it (``_Follow``)."""
        frame, between = ctx[k], ctx[k + 1 :]
        loops = [f for f in between if isinstance(f, _Loop)]
        # ``between`` runs outermost first: after leaving the outermost loop crossed, the
        # follow-on code of the frames outside it would run on the way to the target.
        last_leg = between[: between.index(loops[0])] if loops else between
        skipped = [f for f in last_leg if isinstance(f, _Follow)]
        if isinstance(frame, _Loop) and not loops:
            return [ast.Continue()]
        if isinstance(frame, _Follow) and not skipped and len(loops) <= 1:
            return [ast.Break()] if loops else []
        if not frame.exit_id:
            self.n_exits += 1
            frame.exit_id = self.n_exits
        eid = frame.exit_id
        for n, lp in enumerate(loops):
            if n > 0:
                lp.after[eid] = False  # the next loop out is crossed too: break it
            elif isinstance(frame, _Loop):
                lp.after[eid] = True  # the next loop out is the target: continue it
        if isinstance(frame, _Follow):
            for f in skipped:
                f.guarded = True
        return [_set_exit(eid), *([ast.Break()] if loops else [])]


def _find(ctx: list[_Frame], pred: Callable[[_Frame], bool]) -> int:
    for k in range(len(ctx) - 1, -1, -1):
        if pred(ctx[k]):
            return k
    raise AssertionError("a jump target has no enclosing frame (the CFG is not reducible)")


def _set_exit(k: int) -> ast.stmt:
    return assign(EXIT_VAR, ast.Constant(k))


def _place(frame: _Follow, code: list[ast.stmt]) -> list[ast.stmt]:
    """A follow-on block's code: reset a landed exit, skip it while another passes over."""
    exit_var = ast.Name(EXIT_VAR, ast.Load())
    out: list[ast.stmt] = []
    if frame.exit_id and frame.guarded:
        test = expr("e == k", e=exit_var, k=ast.Constant(frame.exit_id))
        out.append(ast.If(test, [_set_exit(0)], []))
    elif frame.exit_id:
        out.append(_set_exit(0))
    if frame.guarded:
        return [*out, ast.If(expr("e == 0", e=exit_var), code or [ast.Pass()], [])]
    return [*out, *code]


def _drop_tail_continue(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """A ``while`` body without its trailing ``continue`` (falling off the end is one)."""
    if stmts and isinstance(stmts[-1], ast.Continue):
        stmts = stmts[:-1]
    return stmts or [ast.Pass()]


def _is_marker(s: ast.stmt) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)


def _empty(stmts: list[ast.stmt]) -> bool:
    return all(isinstance(s, ast.Pass) or _is_marker(s) for s in stmts)


def _ends_in_transfer(stmts: list[ast.stmt]) -> bool:
    """Whether control never falls off the end of ``stmts``."""
    real = [s for s in stmts if not _is_marker(s)]
    if not real:
        return False
    last = real[-1]
    if isinstance(last, ast.Break | ast.Continue):
        return True
    if isinstance(last, ast.If):
        return _ends_in_transfer(last.body) and _ends_in_transfer(last.orelse)
    return False


def _ends_in_continue(stmts: list[ast.stmt]) -> bool:
    real = [s for s in stmts if not _is_marker(s)]
    return bool(real) and isinstance(real[-1], ast.Continue)


def tidy(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Readability rewrites that keep the meaning: empty arms go, and an arm that always
    transfers control stands alone (``if not c: break``) with the other one after it, so
    the code reads flat. ``while`` bodies are left alone: they are tidied when built."""
    out: list[ast.stmt] = []
    for s in stmts:
        if not isinstance(s, ast.If):
            out.append(s)
            continue
        body, orelse = tidy(s.body), tidy(s.orelse)
        if _empty(body) and _empty(orelse):
            continue  # the test is a variable or a comparison of variables: no effect
        if _empty(orelse):
            out.append(ast.If(s.test, body, []))
        elif _empty(body) or _invert(body, orelse):
            out.append(ast.If(_negate(s.test), orelse, []))
            out.extend(x for x in body if not isinstance(x, ast.Pass))
        elif _ends_in_transfer(body):
            out.append(ast.If(s.test, body, []))
            out.extend(orelse)
        else:
            out.append(ast.If(s.test, body, orelse))
    return out


def _invert(body: list[ast.stmt], orelse: list[ast.stmt]) -> bool:
    """Whether ``if c: body else: orelse`` reads better as ``if not c: orelse`` + body:
    when only the else arm always transfers control, or both do and the body is the one
    that ends in ``continue`` (which a loop's tail drops), or else is the shorter."""
    if not _ends_in_transfer(orelse):
        return False
    if not _ends_in_transfer(body):
        return True
    if _ends_in_continue(body) != _ends_in_continue(orelse):
        return _ends_in_continue(body)
    return len(orelse) <= len(body)


def _negate(test: ast.expr) -> ast.expr:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)
