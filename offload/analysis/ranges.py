"""Integer range facts over the IR: a sound interval for every integer and bool value.

An abstract interpretation over the CFG with widening. Facts used:

* index parameters and ``SHAPE`` results are in ``[0, index_limit)`` (``2**62`` unless the
  caller assumes less: a ``Function`` carries no shape); captured integer scalars span
  their type, or ``[-scalar_limit, scalar_limit)`` when the caller assumes that (the GPU
  backend's 32-bit variant, whose launch checks the assumption);
* constants; the transfer function of each op (``ADD``, ``MUL``, ``FLOORDIV``, casts ...),
  giving the whole type's range whenever the op could wrap;
* block arguments join the values passed along their incoming edges (loop induction
  variables of ``for range`` loops converge; unbounded ones are widened to the type);
* a comparison a branch tests narrows its operands on each edge, and in every block that
  edge dominates (``if i > 0:`` makes ``i >= 1`` in the then-block and below);
* a block with several incoming edges has the facts that hold on every one of them (the
  union of each value's range over the edges), for the values defined before the block
  (in a block that strictly dominates it): a loop entered under ``if step >= 1:`` keeps
  ``step >= 1`` in its body, since the back edge carries the same fact;
* a branch on a bool block argument narrows by each incoming edge's value (``a or b``
  lowered to short-circuit blocks); a ``select(c, c, b)``/``select(c, a, c)`` condition
  (``or``/``and`` of two evaluated bools) narrows through both arms.

Bools are ranges within ``[0, 1]``. Non-integer values have no range (``None``).

A block keeps the facts a branch into it learns, and inherits from its dominator only the
facts about values *relevant* to it (``offload.analysis.range_scope``: used there or later,
or looked through from such a use): so ``range_of(v, at)`` is precise wherever a pass can
ask about ``v``, and the analysis stays near-linear in the size of the function.
"""

from __future__ import annotations

from offload.analysis.range_domain import INDEX_LIMIT, Range, type_range
from offload.analysis.range_scope import Dominance, relevant_values
from offload.analysis.range_transfer import transfer
from offload.ir.cfg import immediate_dominators, predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType

__all__ = ["INDEX_LIMIT", "Range", "RangeFacts", "type_range"]


def _assumed(full: Range, limit: int | None) -> Range:
    """``full`` cut to ``[-limit, limit)`` when the caller assumes that bound."""
    if limit is None:
        return full
    return full.intersect(Range(-limit, limit - 1)) or full


def _ranged(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and (v.type.is_int or v.type.is_bool)


Env = dict[Value, Range]


_ArgKey = tuple[Value, bool, int, frozenset[tuple[Value, Range]]]
"""A memoised ``_narrow_arg`` question: argument, branch taken, depth, facts so far."""


class RangeFacts:
    """Ranges of the integer and bool values of one function (computed on construction)."""

    def __init__(
        self,
        fn: Function,
        max_rounds: int = 40,
        *,
        index_limit: int = INDEX_LIMIT,
        scalar_limit: int | None = None,
    ) -> None:
        self.fn = fn
        self.index_limit = index_limit
        self.values: Env = {}
        self.block_facts: dict[Block, Env] = {}
        self._rpo = reverse_postorder(fn)
        self._idom = immediate_dominators(fn)
        self._preds = predecessors(fn)
        self._defs = {op.result: op for op in fn.ops()}
        self._dom = Dominance(fn)
        self._relevant = relevant_values(fn, self._defs)
        """The values whose facts each block keeps (``offload.analysis.range_scope``)."""
        self._home: dict[Value, Block] = dict.fromkeys(fn.params, fn.entry)
        """The block defining each value (a parameter's is the entry)."""
        for block in fn.blocks:
            self._home.update((a, block) for a in block.args)
            self._home.update((op.result, block) for op in block.ops)
        self._narrowing = False
        self._arg_memo: dict[
            tuple[Value, bool, int, frozenset[tuple[Value, Range]]], Env | None
        ] = {}
        """``_narrow_arg`` results while no block's facts change: one bool argument is
        asked about through every path of nested short-circuit tests (exponential in
        their depth: fuzzer seed 90480 ran for minutes), its answer is the same each time."""
        for k, p in enumerate(fn.params):
            if _ranged(p):
                assert isinstance(p.type, ScalarType)
                self.values[p] = (
                    Range(0, index_limit - 1)
                    if k < fn.n_index
                    else _assumed(type_range(p.type), scalar_limit)
                )
        changes: dict[Value, int] = {}
        for _ in range(max_rounds):
            if not self._round(changes):
                # Descending rounds from the post-fixpoint: recompute block arguments from
                # their incoming values alone, which undoes imprecision that widening added
                # (a counter bounded by its loop test). Each round stays sound.
                self._narrowing = True
                for _ in range(3):
                    self._round(changes)
                return
        # No fixpoint in time (should not happen with widening): forget everything learnt.
        self.values = {v: type_range(v.type) for v in self.values if isinstance(v.type, ScalarType)}
        self.block_facts = {}

    # -- queries -----------------------------------------------------------------------

    def range_of(self, value: Value, at: Block | None = None) -> Range | None:
        """The range of ``value`` where ``at`` executes (anywhere it is defined if ``None``)."""
        if not _ranged(value):
            return None
        if at is not None:
            r = self.block_facts.get(at, {}).get(value)
            if r is not None:
                return r
        r = self.values.get(value)
        if r is None:
            assert isinstance(value.type, ScalarType)
            return type_range(value.type)
        return r

    # -- the fixpoint ------------------------------------------------------------------

    def _lookup(self, env: Env, v: Value) -> Range | None:
        if not _ranged(v):
            return None
        return env.get(v) or self.values.get(v)

    def _round(self, changes: dict[Value, int]) -> bool:
        changed = False
        for block in self._rpo:
            parent = self._idom.get(block)
            keep = self._relevant.get(block, set())
            env: Env = {}
            if parent is not None:
                env = {v: r for v, r in self.block_facts.get(parent, {}).items() if v in keep}
            edges = [p for p in self._preds[block] if p in self._idom]
            if len(edges) == 1:
                narrowed = self._edge_facts(edges[0], block)
                if narrowed is not None:
                    # kept here whatever their relevance (few: what the branch tests),
                    # inherited below only where relevant
                    env.update(narrowed)
            elif len(edges) > 1:
                for v, joined in self._joined_facts(block, edges).items():
                    if v not in keep:
                        continue
                    known = env.get(v)
                    env[v] = joined if known is None else (joined.intersect(known) or known)
            if env != self.block_facts.get(block):
                self.block_facts[block] = env
                self._arg_memo.clear()
                changed = True
            if block is not self.fn.entry and self._join_args(block, edges, changes):
                self._arg_memo.clear()
                changed = True
            for op in block.ops:
                if not _ranged(op.result):
                    continue
                r = self._transfer(op, env)
                if r is not None and r != self.values.get(op.result):
                    self.values[op.result] = r
                    self._arg_memo.clear()
                    changed = True
        return changed

    def _incoming(
        self, block: Block, preds: list[Block], depth: int = 0
    ) -> list[tuple[list[Value], Env]]:
        """Each feasible edge into ``block``: the values it passes and the facts on it
        (its source's, narrowed by the branch taken). An edge from a block without facts
        yet (a back edge in the first round) is left out until it has them. ``depth``:
        how deep in ``_narrow`` this is asked (a bool loop argument tested in its own loop
        leads back here; the depth bounds that)."""
        incoming: list[tuple[list[Value], Env]] = []
        for pred in dict.fromkeys(preds):
            if pred not in self.block_facts:
                continue
            base = self.block_facts[pred]
            t = pred.terminator
            pairs: list[tuple[list[Value], bool | None]] = []
            if isinstance(t, Jump) and t.target is block:
                pairs.append((t.args, None))
            elif isinstance(t, Branch):
                if t.then_target is block:
                    pairs.append((t.then_args, True))
                if t.else_target is block:
                    pairs.append((t.else_args, False))
            for args, taken in pairs:
                env = dict(base)
                if taken is not None and t is not None and isinstance(t, Branch):
                    narrowed = self._narrow(t.cond, taken, base, depth)
                    if narrowed is None:
                        continue  # an edge the facts prove is never taken
                    env.update(narrowed)
                incoming.append((args, env))
        return incoming

    def _joined_facts(self, block: Block, preds: list[Block]) -> Env:
        """Ranges that hold on every edge into ``block``, for values defined in a block
        that strictly dominates it (a value defined in ``block`` or after it may differ
        from the instance an edge's facts describe, e.g. on a loop's back edge)."""
        incoming = self._incoming(block, preds)
        if not incoming:
            return {}
        out: Env = {}
        for v in incoming[0][1]:
            if not self._dom.strictly_dominates(self._home.get(v), block):
                continue
            joined: Range | None = None
            for _, env in incoming:
                r = self._lookup(env, v)
                if r is None:
                    joined = None
                    break
                joined = r if joined is None else joined.union(r)
            if joined is not None:
                out[v] = joined
        return out

    def _join_args(self, block: Block, preds: list[Block], changes: dict[Value, int]) -> bool:
        incoming = self._incoming(block, preds)
        changed = False
        for k, arg in enumerate(block.args):
            if not _ranged(arg):
                continue
            joined: Range | None = None
            for args, env in incoming:
                r = self._lookup(env, args[k])
                if r is not None:
                    joined = r if joined is None else joined.union(r)
            old = self.values.get(arg)
            if joined is None or joined == old:
                continue
            if old is not None and self._narrowing:
                joined = joined.intersect(old) or old
            elif old is not None:
                joined = joined.union(old)
                changes[arg] = changes.get(arg, 0) + 1
                if changes[arg] > 3:
                    # Widen: a bound still moving after a few rounds goes to the type's.
                    assert isinstance(arg.type, ScalarType)
                    full = type_range(arg.type)
                    joined = Range(
                        full.lo if joined.lo < old.lo else joined.lo,
                        full.hi if joined.hi > old.hi else joined.hi,
                    )
            if joined != old:
                self.values[arg] = joined
                changed = True
        return changed

    def _edge_facts(self, pred: Block, block: Block) -> Env | None:
        t = pred.terminator
        if not isinstance(t, Branch) or t.then_target is t.else_target:
            return None
        return self._narrow(t.cond, t.then_target is block, self.block_facts.get(pred, {}), 0)

    def _narrow(self, cond: Value, taken: bool, env: Env, depth: int) -> Env | None:
        """Facts that hold when ``cond == taken``; ``None`` if that cannot happen."""
        out: Env = {cond: Range(int(taken), int(taken))}
        known = env.get(cond)
        if known is not None and not known.lo <= int(taken) <= known.hi:
            return None  # the facts already rule this value out
        op = self._defs.get(cond)
        if depth > 4:
            return out
        if op is None:
            return self._narrow_arg(cond, taken, env, depth, out)
        if op.opcode is Opcode.SELECT and _ranged(cond):
            # ``c ? a : b == taken``: ``c`` and ``a == taken``, or not ``c`` and ``b == taken``.
            c, a, b = op.operands
            arms: list[Env] = []
            for pick, arm in ((True, a), (False, b)):
                sub = self._narrow(c, pick, env, depth + 1)
                more = None if sub is None else self._narrow(arm, taken, {**env, **sub}, depth + 1)
                if sub is not None and more is not None:
                    arms.append({**sub, **more})
            return _either(arms, out)
        if op.opcode is Opcode.NOT:
            sub = self._narrow(op.operands[0], not taken, env, depth + 1)
            return None if sub is None else {**sub, **out}
        if (op.opcode is Opcode.AND and taken) or (op.opcode is Opcode.OR and not taken):
            merged: Env = dict(out)
            for operand in op.operands:
                sub = self._narrow(operand, taken, {**env, **merged}, depth + 1)
                if sub is None:
                    return None
                merged.update(sub)
            return merged
        rel = _RELATIONS.get(op.opcode)
        if rel is None or not all(_ranged(x) for x in op.operands):
            return out
        x, y = op.operands
        rx, ry = self._lookup(env, x), self._lookup(env, y)
        if rx is None or ry is None:
            return out
        nx, ny = rel(rx, ry, taken)
        if nx is None or ny is None:
            return None
        out[x], out[y] = nx, ny
        return out

    def _narrow_arg(self, arg: Value, taken: bool, env: Env, depth: int, out: Env) -> Env | None:
        """``_narrow`` of a bool block argument: its value on each incoming edge, narrowed
        in that edge's facts; what holds on every edge that can pass ``taken``, for values
        defined before the argument's block. (It depends on the blocks' facts, not ``env``.)"""
        # The answer depends on the facts so far (``out``) and on every block's facts and
        # value ranges: the key holds ``out``, and any change to the others clears the memo
        # (a memo kept across a change of a loop argument's range gave `it < 50` as always
        # true inside `while z < 400 and it < 50`).
        key = (arg, taken, depth, frozenset(out.items()))
        if key not in self._arg_memo:
            self._arg_memo[key] = self._narrow_arg_uncached(arg, taken, depth, out)
        found = self._arg_memo[key]
        return None if found is None else dict(found)

    def _narrow_arg_uncached(self, arg: Value, taken: bool, depth: int, out: Env) -> Env | None:
        block = self._home.get(arg)
        if block is None or block is self.fn.entry or not _ranged(arg):
            return out
        k = block.args.index(arg)
        preds = [p for p in self._preds[block] if p in self._idom]
        incoming = self._incoming(block, preds, depth + 1)
        if not incoming:
            return out
        arms: list[Env] = []
        for args, edge_env in incoming:
            sub = self._narrow(args[k], taken, edge_env, depth + 1)
            if sub is not None:
                facts = {**edge_env, **sub}
                dom = self._dom.strictly_dominates
                arms.append({v: r for v, r in facts.items() if dom(self._home.get(v), block)})
        return _either(arms, out)

    def _transfer(self, op: Op, env: Env) -> Range | None:
        operands: list[Range | None] = []
        for v in op.operands:
            r = self._lookup(env, v) if _ranged(v) else None
            if r is None and _ranged(v):
                return None  # not computed yet (a later block): wait for the next round
            operands.append(r)
        if op.opcode is Opcode.SHAPE:
            return Range(0, self.index_limit - 1)
        assert isinstance(op.result.type, ScalarType)
        return transfer(op, operands, op.result.type)


def _either(arms: list[Env], out: Env) -> Env | None:
    """What holds when one of ``arms`` holds (``None`` if none can), with ``out``: each
    value's range joined over the arms, for the values every arm has a range for."""
    if not arms:
        return None
    joined: Env = {}
    for v, r in arms[0].items():
        union: Range | None = r
        for arm in arms[1:]:
            other = arm.get(v)
            union = None if other is None or union is None else union.union(other)
        if union is not None:
            joined[v] = union
    return {**joined, **out}


def _rel_lt(a: Range, b: Range, taken: bool) -> tuple[Range | None, Range | None]:
    if not taken:  # a >= b
        return _rel_le(b, a, True)[::-1]
    return a.intersect(Range(a.lo, b.hi - 1)), b.intersect(Range(a.lo + 1, b.hi))


def _rel_le(a: Range, b: Range, taken: bool) -> tuple[Range | None, Range | None]:
    if not taken:  # a > b
        return _rel_lt(b, a, True)[::-1]
    return a.intersect(Range(a.lo, b.hi)), b.intersect(Range(a.lo, b.hi))


def _rel_gt(a: Range, b: Range, taken: bool) -> tuple[Range | None, Range | None]:
    r = _rel_lt(b, a, taken)
    return r[1], r[0]


def _rel_ge(a: Range, b: Range, taken: bool) -> tuple[Range | None, Range | None]:
    r = _rel_le(b, a, taken)
    return r[1], r[0]


def _rel_eq(a: Range, b: Range, taken: bool) -> tuple[Range | None, Range | None]:
    if taken:
        both = a.intersect(b)
        return both, both
    return _exclude(a, b), _exclude(b, a)


def _rel_ne(a: Range, b: Range, taken: bool) -> tuple[Range | None, Range | None]:
    return _rel_eq(a, b, not taken)


def _exclude(a: Range, b: Range) -> Range | None:
    """``a`` without the single point ``b`` where that shrinks an interval end."""
    point = b.const
    if point is None:
        return a
    if a.lo == point:
        return a.intersect(Range(point + 1, a.hi))
    if a.hi == point:
        return a.intersect(Range(a.lo, point - 1))
    return a


_RELATIONS = {
    Opcode.LT: _rel_lt,
    Opcode.LE: _rel_le,
    Opcode.GT: _rel_gt,
    Opcode.GE: _rel_ge,
    Opcode.EQ: _rel_eq,
    Opcode.NE: _rel_ne,
}
