"""Cooperative loops (GPU kernels only): a warp per element for a loop over a segment.

A loop whose range depends on the element -- ``for k in range(rowptr[i], rowptr[i + 1]):
acc += val[k] * x[col[k]]`` -- walks its segment in every thread on its own: neighbouring
threads read addresses a segment apart, so each of a warp's reads touches 32 cache lines.
This pass gives each element a group of ``G`` lanes (a warp) and splits the loop's body:

* the *terms*, what the body computes from the counter alone (the loads and the product),
  run in parallel, lane ``l`` at ``k = c + l * s`` for a chunk of ``G`` iterations starting
  at ``c``: one coalesced read per chunk;
* the *recurrence*, what depends on the loop-carried values (``acc + term``), runs in
  every lane for ``l = 0 .. G-1`` in turn, on lane ``l``'s terms (``SHFL``): the iterations'
  original order, so the result is bit-exact (no reassociation, no ``fastmath`` needed),
  and every lane holds the same values after the loop.

For a group of one lane (the interpreter: ``GROUP_SIZE`` 1, ``GROUP_LANE`` 0, ``SHFL`` the
value itself) the result is the original loop, iteration for iteration::

    ^H2(c, a..):  condbr lt(c, n), ^P, ^exit(..)
    ^P:           k = c + lane * s ; condbr lt(k, n), ^T, ^J(zeros)
    ^T:           the terms at k ; br ^J(terms)
    ^J(t..):      br ^L(0, a..)
    ^L(l, b..):   condbr lt(l, G), ^M, ^N(b..)
    ^M:           kl = c + l * s ; condbr lt(kl, n), ^S, ^L2(b..)
    ^S:           u.. = SHFL(t.., l) ; the recurrence on b.., u.. and kl ; br ^L2(new b..)
    ^L2(d..):     br ^L(l + 1, d..)
    ^N(e..):      br ^H2(c + G * s, e..)

Candidates: the function's only loop, a counted two-block loop (``offload.opt.counted``)
with a constant positive step, whose start or bound depends on the element (a loop over a
range every element shares is ``offload.opt.stage``'s), whose counter is not used after it
and whose header computes only its test. The lane offsets stay in the counter's type: a
32-bit counter indexes an array, so a segment's end is below ``2**30`` and ``c + G * s``
cannot wrap (``offload.opt.narrow``'s trusted load indices).
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.analysis.uniform import NONE, thread_dependence
from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import MAY_FAULT, TILE_OPS, Opcode
from offload.ir.tile_ops import tile_of
from offload.ir.types import BOOL, ScalarType
from offload.opt.clone import clone_function
from offload.opt.counted import CountedLoop, match_counted
from offload.opt.rewrite import python_scalar
from offload.opt.util import const_value, definitions, natural_loops

GROUP = 32
"""Lanes per element on a GPU: one warp, so that ``SHFL`` is one ``shfl.sync``."""


def _op(code: Opcode, operands: list[Value], t: ScalarType, **attrs: object) -> Op:
    return Op(code, operands, Value(t), dict(attrs))


def _const(value: object, t: ScalarType) -> Op:
    return _op(Opcode.CONST, [], t, value=python_scalar(value, t))


@dataclass
class _Split:
    """A candidate loop's body split into terms and recurrence."""

    loop: CountedLoop
    step: int
    terms: list[Op]
    recurrence: list[Op]
    carried: list[Value]
    """The header's arguments other than the counter (the loop-carried values)."""
    shared: list[Value]
    """Term values the recurrence or the latch reads (each moved by one ``SHFL``)."""


def _split(fn: Function, group: int) -> _Split | None:
    """The function's one loop split for a group of ``group`` lanes, or ``None``."""
    if fn.blocking or tile_of(fn) is not None or any(op.opcode in TILE_OPS for op in fn.ops()):
        return None
    loops = natural_loops(fn)
    if len(loops) != 1:
        return None
    loop = match_counted(fn, loops[0])
    if loop is None:
        return None
    defs = definitions(fn)
    step = _constant(defs, loop.step)
    t = loop.counter.type
    assert isinstance(t, ScalarType)
    if type(step) is not int or not 0 < step * group < 2**24:
        return None
    deps = thread_dependence(fn)
    start = [args[loop.k_index] for args in _entries(fn, loop)]
    if deps[loop.bound] == NONE and all(deps[v] == NONE for v in start):
        return None  # every element walks the same range: not a segment
    header, body, k = loop.header, loop.body, loop.counter
    cond = header.terminator
    assert isinstance(cond, Branch)
    if [op.result for op in header.ops] != [cond.cond] or loop.into_body():
        return None  # the header computes its test only; the body takes no arguments
    if _used_outside(fn, loop, k):
        return None
    carried = [a for a in header.args if a is not k]
    seq: set[Value] = set(carried)
    terms: list[Op] = []
    recurrence: list[Op] = []
    for op in body.ops:
        if any(v in seq for v in op.operands):
            seq.add(op.result)
            recurrence.append(op)
        else:
            terms.append(op)
    latch = body.terminator
    assert isinstance(latch, Jump)
    if not recurrence or not any(op.opcode in MAY_FAULT for op in terms):
        return None  # nothing to run in order, or no read to spread over the lanes
    made = {op.result for op in terms}
    shared = list(dict.fromkeys(v for op in recurrence for v in op.operands if v in made))
    shared += [
        v for i, v in enumerate(latch.args) if i != loop.k_index and v in made and v not in shared
    ]
    return _Split(loop, step, terms, recurrence, carried, shared)


def _constant(defs: dict[Value, Op], v: Value) -> object | None:
    """The constant ``v`` holds, through casts to 32- and 64-bit integers (the 32-bit
    kernel's widened constants) as well; the callers take small positive ones only."""
    op = defs.get(v)
    while op is not None and op.opcode is Opcode.CAST:
        t = op.result.type
        if not (isinstance(t, ScalarType) and t.is_int and t.dtype.itemsize >= 4):
            return None  # a narrow cast could change the value
        op = defs.get(op.operands[0])
    return None if op is None else const_value(defs, op.result)


def _entries(fn: Function, loop: CountedLoop) -> list[list[Value]]:
    """The argument lists of the edges entering the loop's header from outside it."""
    out: list[list[Value]] = []
    for block in fn.blocks:
        if block is loop.body:
            continue
        t = block.terminator
        if isinstance(t, Jump) and t.target is loop.header:
            out.append(t.args)
        elif isinstance(t, Branch):
            if t.then_target is loop.header:
                out.append(t.then_args)
            if t.else_target is loop.header:
                out.append(t.else_args)
    return out


def _used_outside(fn: Function, loop: CountedLoop, v: Value) -> bool:
    """Whether anything outside the loop's two blocks reads ``v``."""
    for block in fn.blocks:
        if block is loop.header or block is loop.body:
            continue
        if any(v in op.operands for op in block.ops):
            return True
        t = block.terminator
        if isinstance(t, Jump) and v in t.args:
            return True
        if isinstance(t, Branch) and (v is t.cond or v in t.then_args or v in t.else_args):
            return True
        if isinstance(t, Return) and v in t.values:
            return True
    t = loop.header.terminator
    assert isinstance(t, Branch)
    exit_args = t.else_args if t.then_target is loop.body else t.then_args
    return v in exit_args


def _rewrite(fn: Function, sp: _Split, group: int) -> None:
    """Replace the loop by its cooperative form (see the module docstring)."""
    loop = sp.loop
    header, body, k, n = loop.header, loop.body, loop.counter, loop.bound
    kt = k.type
    assert isinstance(kt, ScalarType)
    test = header.terminator
    assert isinstance(test, Branch)
    stay_then = test.then_target is body
    exit_block = loop.exit
    exit_args = test.else_args if stay_then else test.then_args
    latch = body.terminator
    assert isinstance(latch, Jump)

    # ^H2(c, a..): the header's own block, its counter now the chunk's start
    c = k
    h_ops = [_op(Opcode.LT, [c, n], BOOL)]
    p_block, j_block, l_block = Block(hint="coop_part"), Block(hint="coop_join"), Block()
    t_block, m_block, s_block = Block(hint="coop_terms"), Block(), Block(hint="coop_step")
    l2_block, n_block = Block(), Block(hint="coop_next")
    header.ops = h_ops
    header.terminator = Branch(h_ops[0].result, p_block, [], exit_block, exit_args, test.span)

    # ^P: this lane's iteration of the chunk
    s_const = _const(sp.step, kt)
    lane = _op(Opcode.GROUP_LANE, [], kt, group=group)
    offset = _op(Opcode.MUL, [lane.result, s_const.result], kt)
    k_lane = _op(Opcode.ADD, [c, offset.result], kt)
    valid = _op(Opcode.LT, [k_lane.result, n], BOOL)
    zeros = [_const(0, v.type) for v in sp.shared]  # type: ignore[arg-type]
    p_block.ops = [s_const, lane, offset, k_lane, valid, *zeros]
    p_block.terminator = Branch(valid.result, t_block, [], j_block, [z.result for z in zeros])

    # ^T: the terms at k_lane (the body's term ops, reading k_lane for k)
    for op in sp.terms:
        op.operands = [k_lane.result if v is k else v for v in op.operands]
    t_block.ops = sp.terms
    t_block.terminator = Jump(j_block, list(sp.shared))

    # ^J(t..): the lanes' terms; the recurrence starts from the carried values
    got = [Value(v.type, v.hint) for v in sp.shared]
    j_block.args = got
    zero_l = _const(0, kt)
    j_block.ops = [zero_l]
    j_block.terminator = Jump(l_block, [zero_l.result, *sp.carried])

    # ^L(l, b..): lane l's iteration, in order
    l_var = Value(kt, "lane")
    b_vals = [Value(v.type, v.hint) for v in sp.carried]
    l_block.args = [l_var, *b_vals]
    size = _op(Opcode.GROUP_SIZE, [], kt, group=group)
    more = _op(Opcode.LT, [l_var, size.result], BOOL)
    l_block.ops = [size, more]
    l_block.terminator = Branch(more.result, m_block, [], n_block, list(b_vals))

    # ^M: does lane l's iteration run?
    offset_l = _op(Opcode.MUL, [l_var, s_const.result], kt)
    k_l = _op(Opcode.ADD, [c, offset_l.result], kt)
    runs = _op(Opcode.LT, [k_l.result, n], BOOL)
    m_block.ops = [offset_l, k_l, runs]
    m_block.terminator = Branch(runs.result, s_block, [], l2_block, list(b_vals))

    # ^S: the recurrence on lane l's terms
    moved = [_op(Opcode.SHFL, [t, l_var], t.type, group=group) for t in got]  # type: ignore[arg-type]
    rename: dict[Value, Value] = {k: k_l.result}
    rename.update(zip(sp.carried, b_vals, strict=True))
    rename.update(zip(sp.shared, (m.result for m in moved), strict=True))
    for op in sp.recurrence:
        op.operands = [rename.get(v, v) for v in op.operands]
    s_block.ops = [*moved, *sp.recurrence]
    nexts = [rename.get(v, v) for i, v in enumerate(latch.args) if i != loop.k_index]
    s_block.terminator = Jump(l2_block, nexts)

    # ^L2(d..): the next lane
    d_vals = [Value(v.type, v.hint) for v in sp.carried]
    l2_block.args = d_vals
    one = _const(1, kt)
    l_next = _op(Opcode.ADD, [l_var, one.result], kt)
    l2_block.ops = [one, l_next]
    l2_block.terminator = Jump(l_block, [l_next.result, *d_vals])

    # ^N(e..): the next chunk
    e_vals = [Value(v.type, v.hint) for v in sp.carried]
    n_block.args = e_vals
    size2 = _op(Opcode.GROUP_SIZE, [], kt, group=group)
    chunk = _op(Opcode.MUL, [size2.result, s_const.result], kt)
    c_next = _op(Opcode.ADD, [c, chunk.result], kt)
    n_block.ops = [size2, chunk, c_next]
    back = [e_vals[sp.carried.index(a)] if a is not k else c_next.result for a in header.args]
    n_block.terminator = Jump(header, back)

    at = fn.blocks.index(body)
    fn.blocks[at : at + 1] = [
        p_block, t_block, j_block, l_block, m_block, s_block, l2_block, n_block,
    ]  # fmt: skip


@dataclass(frozen=True)
class Cooperate:
    """Run a segment loop on a group of ``group`` lanes (see the module docstring)."""

    group: int = GROUP
    name = "cooperate"

    def run(self, fn: Function) -> Function:
        fn = clone_function(fn)
        sp = _split(fn, self.group)
        if sp is None:
            return fn
        _rewrite(fn, sp, self.group)
        return fn
