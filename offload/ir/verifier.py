"""The IR verifier: structural, SSA and typing invariants, all problems reported at once.

A verification failure is a compiler bug (the frontend or a pass built bad IR), so
``IRVerificationError`` is deliberately *not* an ``OffloadError``: it must never be
dressed up as a user diagnostic.
"""

from __future__ import annotations

import math

from offload.ir.cfg import dominators, predecessors
from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.printer import Namer, print_function, print_op
from offload.ir.types import BOOL, INDEX, ArrayType, ScalarType
from offload.ir.verify_ops import op_type_errors


class IRVerificationError(Exception):
    """The IR breaks an invariant (a compiler bug); ``problems`` lists every one found."""

    def __init__(self, fn_name: str, problems: list[str], text: str = "") -> None:
        self.problems = problems
        msg = f"IR of @{fn_name} is invalid ({len(problems)} problem(s)):\n" + "\n".join(
            f"  - {p}" for p in problems
        )
        if text:
            msg += "\n" + text
        super().__init__(msg)


class _Verifier:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.problems: list[str] = []
        self.names = Namer(fn)
        # value -> (block, position): -1 for block arguments, else the op's index.
        self.defs: dict[Value, tuple[Block, int]] = {}
        self.doms: dict[Block, set[Block]] = {}

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}" if where else message)

    def block_name(self, block: Block) -> str:
        return self.names.blocks.get(block, "^<unknown block>")

    def run(self) -> None:
        fn = self.fn
        if not fn.blocks:
            self.problem("", "the function has no blocks")
            return
        if len(set(fn.blocks)) != len(fn.blocks):
            self.problem("", "a block is listed twice in the function")
        self.check_signature()
        self.collect_defs()
        members = set(fn.blocks)
        for block in fn.blocks:
            self.check_terminator(block, members)
        preds = predecessors(fn)
        if preds[fn.entry]:
            names = ", ".join(self.block_name(b) for b in preds[fn.entry])
            self.problem(
                self.block_name(fn.entry), f"the entry block is a branch target of {names}"
            )
        self.doms = dominators(fn)
        self.check_uses()
        for block in fn.blocks:
            for op in block.ops:
                self.check_op(block, op)

    # -- structure ---------------------------------------------------------------------

    def check_signature(self) -> None:
        fn = self.fn
        n_params = len(fn.params)
        if n_params != fn.n_index + len(fn.captures):
            self.problem(
                "signature",
                f"the entry block has {n_params} argument(s), expected n_index ({fn.n_index}) "
                f"+ captures ({len(fn.captures)})",
            )
        for k, v in enumerate(fn.index_params):
            if v.type != INDEX:
                self.problem("signature", f"index parameter {k} has type {v.type}, expected i64")
        for k, (v, cap) in enumerate(zip(fn.capture_params, fn.captures, strict=False)):
            if v.type != cap.type:
                self.problem(
                    "signature",
                    f"capture parameter {k} ({cap.name!r}) has type {v.type}, "
                    f"but the capture says {cap.type}",
                )
            c = cap.value
            if c is not None and not (
                isinstance(cap.type, ArrayType)
                and len(c.shape) == cap.type.ndim
                and c.dtype == cap.type.elem.dtype
                and len(c.data) == c.dtype.itemsize * math.prod(c.shape)
            ):
                self.problem(
                    "signature",
                    f"capture {k} ({cap.name!r}) of type {cap.type} holds constant contents "
                    f"of another type, shape or size ({c.dtype}, {c.shape})",
                )
        for k, t in enumerate(fn.result_types):
            if not isinstance(t, ScalarType):
                self.problem("signature", f"result {k} has non-scalar type {t}")
        if fn.blocking and (min(fn.blocking) < 1 or sum(fn.blocking) != fn.n_index):
            self.problem(
                "signature",
                f"blocking {fn.blocking} does not split the {fn.n_index} index parameter(s)",
            )

    def collect_defs(self) -> None:
        for block in self.fn.blocks:
            where = self.block_name(block)
            for v in block.args:
                self.define(where, v, (block, -1))
                if block is not self.fn.entry and not isinstance(v.type, ScalarType):
                    self.problem(where, f"block argument {self.names.v(v)} has type {v.type}")
            for pos, op in enumerate(block.ops):
                self.define(where, op.result, (block, pos))

    def define(self, where: str, v: Value, site: tuple[Block, int]) -> None:
        if v in self.defs:
            self.problem(where, f"value {self.names.v(v)} is defined more than once")
        else:
            self.defs[v] = site

    def check_terminator(self, block: Block, members: set[Block]) -> None:
        where = self.block_name(block)
        term = block.terminator
        if term is None:
            self.problem(where, "the block has no terminator")
            return
        if isinstance(term, Return):
            self.check_return(where, term)
            return
        if isinstance(term, Jump):
            self.check_edge(where, "br", term.target, term.args, members)
            return
        if isinstance(term, Branch):
            if term.cond.type != BOOL:
                self.problem(where, f"condbr condition has type {term.cond.type}, expected bool")
            self.check_edge(where, "condbr then", term.then_target, term.then_args, members)
            self.check_edge(where, "condbr else", term.else_target, term.else_args, members)
            return
        self.problem(where, f"unknown terminator {type(term).__name__}")  # type: ignore[unreachable]

    def check_return(self, where: str, term: Return) -> None:
        want = self.fn.result_types * math.prod(self.fn.blocking)
        if len(term.values) != len(want):
            self.problem(
                where, f"return gives {len(term.values)} value(s), the function has {len(want)}"
            )
            return
        for k, (v, t) in enumerate(zip(term.values, want, strict=True)):
            if v.type != t:
                self.problem(where, f"return value {k} has type {v.type}, expected {t}")

    def check_edge(
        self, where: str, what: str, target: Block, args: list[Value], members: set[Block]
    ) -> None:
        if target not in members:
            self.problem(where, f"{what} targets a block that is not in the function")
            return
        name = self.block_name(target)
        if len(args) != len(target.args):
            self.problem(
                where,
                f"{what} passes {len(args)} argument(s) to {name}, which takes {len(target.args)}",
            )
            return
        for k, (a, p) in enumerate(zip(args, target.args, strict=True)):
            if a.type != p.type:
                self.problem(
                    where, f"{what} argument {k} to {name} has type {a.type}, expected {p.type}"
                )

    # -- SSA ---------------------------------------------------------------------------

    def check_uses(self) -> None:
        for block in self.fn.blocks:
            where = self.block_name(block)
            for pos, op in enumerate(block.ops):
                for v in op.operands:
                    self.check_use(where, block, pos, v, self.op_text(op))
            term = block.terminator
            if term is None:
                continue
            uses: list[Value]
            if isinstance(term, Return):
                uses = term.values
            elif isinstance(term, Jump):
                uses = term.args
            else:
                uses = [term.cond, *term.then_args, *term.else_args]
            for v in uses:
                self.check_use(where, block, len(block.ops), v, "terminator")

    def check_use(
        self,
        where: str,
        block: Block,
        pos: int,
        v: Value,
        user: str,
    ) -> None:
        site = self.defs.get(v)
        if site is None:
            self.problem(where, f"{user}: use of undefined value {self.names.v(v)}")
            return
        def_block, def_pos = site
        if def_block is block:
            ok = def_pos < pos
        else:
            ok = def_block in self.doms.get(block, set())
        if not ok:
            self.problem(
                where,
                f"{user}: use of {self.names.v(v)} is not dominated by its definition "
                f"(in {self.block_name(def_block)})",
            )

    # -- typing ------------------------------------------------------------------------

    def op_text(self, op: Op) -> str:
        try:
            return f"'{print_op(op, self.names)}'"
        except Exception:  # a malformed op may not print (e.g. a const without a value)
            return f"'{op.opcode} op'"

    def check_op(self, block: Block, op: Op) -> None:
        where = f"{self.block_name(block)}: {self.op_text(op)}"
        errors = op_type_errors(op)
        for e in errors:
            self.problem(where, e)


def verify(fn: Function) -> None:
    """Check every invariant of ``fn``; raise ``IRVerificationError`` listing all problems.

    Structure (terminators, branch targets and arguments, entry without predecessors,
    each value defined once, uses dominated by definitions), the signature (index
    parameters are i64, capture parameters match ``fn.captures``, results are scalars)
    and op typing (``offload.ir.verify_ops``; see docs/ARCHITECTURE.md).
    """
    v = _Verifier(fn)
    v.run()
    if fn.prologue is not None:
        verify(fn.prologue)
        for problem in _prologue_problems(fn, fn.prologue):
            v.problem("prologue", problem)
    if v.problems:
        raise IRVerificationError(fn.name, v.problems, _text(fn))


def _text(fn: Function) -> str:
    """The function's text for the error message, or nothing if it is too broken to print."""
    try:
        return print_function(fn)
    except Exception:  # the problems list already says what is wrong
        return ""


def _prologue_problems(fn: Function, prologue: Function) -> list[str]:
    """How ``prologue`` fails to be ``fn``'s (``Function.prologue``): one index parameter,
    ``fn``'s other captures, one result per trailing one-element array capture of ``fn``."""
    out: list[str] = []
    if prologue.n_index != 1 or prologue.blocking or prologue.prologue is not None:
        out.append("a prologue has one index parameter, no blocking and no prologue")
    k = len(fn.captures) - len(prologue.result_types)
    own = [c.type for c in fn.captures[: max(k, 0)]]
    if k < 0 or own != [c.type for c in prologue.captures]:
        out.append("the prologue's captures are not the function's leading captures")
        return out
    for t, cap in zip(prologue.result_types, fn.captures[k:], strict=True):
        if cap.type != ArrayType(t, 1):
            out.append(f"prologue result {t} is passed as {cap.type}, not array<{t},1>")
    return out
