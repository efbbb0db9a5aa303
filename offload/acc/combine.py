"""A user's scalar function (a scan's combine ``f(a, b)``, permute's index function
``ix(i...)``, filter's predicate ``p(x)``) compiled for a skeleton.

The function goes through the ordinary frontend and the common pass pipeline, so it is
checked (restriction rules, diagnostics with spans) and typed (NEP 50) exactly like an
element function. The operands are typed by the arrays the skeleton applies it to: the
function is lowered as the element of a one-element delayed array whose sources are
one-element arrays of those dtypes (a tuple operand is a tuple of sources: struct of
arrays), and emission turns each read of such a source into a plain parameter. The result
is one Python function, source text that numba compiles for the CPU (``njit``) and the
GPU (a ``numba.cuda`` device function) alike::

    def ol_fn(a0, a1, b0, b1, u0):      # operand leaves, then the user's captures
        ...                             # the emitted body (offload.emit)
        return (r0, r1)                 # always a tuple, one item per result leaf

The user's own captures (arrays and scalars it reads) become the trailing parameters
``u0, u1, ...``; ``ScalarFunction.captures(...)`` re-reads their current values at each
call, so a changed captured scalar never gives a stale result.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.cpu.loopnest import CpuHooks
from offload.diagnostics import OffloadError, TypeMismatch, unlocated
from offload.emit import BaseHooks, emit_body, print_source
from offload.emit.template import assign, const, expr, name
from offload.frontend.captures import capture_type_key
from offload.frontend.lower import Lowered, fetch_captures
from offload.frontend.nodes import (
    ArrayNode,
    ElementLowering,
    Index,
    NodeFunction,
    NodePath,
    function_key,
)
from offload.frontend.reader import Fetcher, make_fetcher, make_resolution_test
from offload.frontend.source import get_source
from offload.frontend.values import TupleVal, Val
from offload.ir.core import Function
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions

Dtypes = tuple[np.dtype[Any], ...]
"""The leaf dtypes of one operand (one entry for a scalar operand)."""


class _Operands(ArrayNode):
    """``fn(x0, (x1, x2), ...)`` at index 0: each operand's leaves are one-element arrays
    ``x<k>`` of the operand's dtypes (lowered as captured arrays, emitted as parameters)."""

    shape = (1,)

    def __init__(self, fn: Callable[..., Any], operands: Sequence[Dtypes]) -> None:
        self.fn = fn
        self.layout: list[tuple[int, ...]] = []
        k = 0
        for dts in operands:
            self.layout.append(tuple(range(k, k + len(dts))))
            for dt in dts:
                setattr(self, f"x{k}", np.zeros(1, dtype=dt))
                k += 1
        self.n_leaves = k
        self.tuple_operand = [len(dts) > 1 for dts in operands]

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("fn", self.fn),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return tuple((f"x{k}", getattr(self, f"x{k}")) for k in range(self.n_leaves))

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        args: list[Val] = []
        for leaves, is_tuple in zip(self.layout, self.tuple_operand, strict=True):
            vals = [
                lo.element(getattr(self, f"x{k}"), (*path, ("attr", f"x{k}")), idx) for k in leaves
            ]
            args.append(TupleVal(tuple(vals)) if is_tuple else vals[0])
        return lo.call(self.fn, (*path, ("attr", "fn")), args)


@dataclass(frozen=True)
class ScalarFunction:
    """A compiled scalar function: source text of ``def <fname>(operands..., u...)``."""

    fname: str
    ir: Function
    """The optimised IR (its printed text keys the compiled skeletons)."""
    n_operands: int
    """Operand leaves (index parameters for an index function)."""
    result_dtypes: Dtypes
    user_captures: tuple[int, ...]
    """Positions in ``ir.captures`` of the user's captures (parameters ``u0, u1, ...``)."""
    lowered: Lowered
    root: object
    """What the capture paths start from (the function or the operand node)."""
    kinds: tuple[object, ...]
    """The kinds of all captures the lowering was typed for."""
    operand_node: bool
    """Lowered through ``_Operands`` (its one index parameter is unused)."""
    texts: dict[bool, str] = field(default_factory=dict, init=False, compare=False, repr=False)
    """``source``'s text per target kind, made once (a warm skeleton call asks each time)."""
    fetch: Fetcher | None = field(default=None, init=False, compare=False, repr=False)
    """The reader of the captures' current values, generated once (see ``read``)."""

    resolution: Callable[[object], bool] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    """Whether the helpers built into the lowering are still what a root's names lead to
    (``make_resolution_test``; ``None``: nothing was resolved), made once."""

    def read(self, root: object | None = None) -> list[Any]:
        """The current values of every capture of the lowering (``fetch_captures``), read
        from ``root`` (else the function it was lowered from)."""
        fetch = self.fetch
        if fetch is None:
            fetch = make_fetcher(self.lowered.captures)
            object.__setattr__(self, "fetch", fetch)
        return fetch(self.root if root is None else root)

    def serves(self, root: object) -> bool:
        """Whether this lowering computes ``root`` (another closure of the same code, or
        the same function later): the helpers it calls still resolve to the objects built
        in, and its captures still have the kinds the lowering was typed for."""
        test = self.resolution
        if test is None and self.lowered.resolved:
            test = make_resolution_test(self.lowered.resolved)
            object.__setattr__(self, "resolution", test)
        if test is not None and not test(root):
            return False
        try:
            values = self.read(root)
        except Exception:  # (a name deleted, a cell emptied: lowering again reports it)
            return False
        return capture_type_key(values) == self.kinds

    def bound(self, root: object) -> ScalarFunction:
        """This lowering reading its captures from ``root`` (``serves`` it): the source
        text and the reader are shared, so a closure made per call costs no lowering."""
        if root is self.root:
            return self
        made = copy.copy(self)
        object.__setattr__(made, "root", root)
        return made

    def source(self, gpu: bool) -> str:
        """The function's Python source for the CPU (``njit``) or the GPU (device)."""
        text = self.texts.get(gpu)
        if text is None:
            text = self.texts[gpu] = _source(self, gpu)
        return text

    def captures(self) -> list[Any]:
        """The current values of the user's captures, typed as the IR expects."""
        values = self.read()
        out: list[Any] = []
        for k in self.user_captures:
            v, t = values[k], self.ir.captures[k].type
            out.append(t.dtype.type(v) if isinstance(t, ScalarType) else v)
        return out

    @property
    def params(self) -> list[str]:
        """The parameter names: operand leaves ``p0..``, then captures ``u0..``."""
        return [f"p{k}" for k in range(self.n_operands)] + [
            f"u{j}" for j in range(len(self.user_captures))
        ]


CACHE_ENTRIES = 256
"""Lowerings kept (least recently used dropped): an entry holds its function and what
the function captures alive; a closure made per call shares its code's entry
(``closure_kinds``)."""
_CACHE: OrderedDict[tuple[object, ...], ScalarFunction] = OrderedDict()
_LOCK = threading.Lock()


def _cached(
    key: tuple[object, ...], root: Callable[[ScalarFunction], object]
) -> ScalarFunction | None:
    """The cached lowering under ``key`` bound to the root ``root(hit)`` makes for it,
    where it serves that root (``ScalarFunction.serves``)."""
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is None:
        return None
    mine = root(hit)
    return hit.bound(mine) if hit.serves(mine) else None


def _remember(key: tuple[object, ...], sf: ScalarFunction) -> ScalarFunction:
    with _LOCK:
        _CACHE[key] = sf
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    return sf


def compile_combine(
    f: Callable[..., Any], operands: Sequence[Dtypes], fname: str, what: str
) -> ScalarFunction:
    """``f`` applied to operands of the given leaf dtypes (``what`` names it in errors:
    "scanl's combine function")."""
    _require_function(f, what)
    dts = tuple(tuple(d.str for d in o) for o in operands)
    key = ("ops", function_key(f), closure_kinds(f), dts, fname)

    def root(hit: ScalarFunction) -> object:
        return hit.root if getattr(hit.root, "fn", None) is f else _Operands(f, operands)

    hit = _cached(key, root)
    if hit is not None:
        return hit
    node = _Operands(f, operands)
    lowered = check_and_lower(node, 1)
    operand_caps = {k for k, p in enumerate(lowered.captures) if _is_operand(p.steps)}
    return _remember(key, _finish(fname, lowered, node, operand_caps, node.n_leaves))


def compile_index_function(
    ix: Callable[..., Any], rank: int, fname: str, what: str
) -> ScalarFunction:
    """``ix(i0, ..., i<rank-1>)`` of int64 indices (permute's index function)."""
    _require_function(ix, what)
    key = ("ix", function_key(ix), closure_kinds(ix), rank, fname)
    hit = _cached(key, lambda _: ix)
    if hit is not None:
        return hit
    lowered = check_and_lower(ix, rank)
    return _remember(key, _finish(fname, lowered, ix, set(), rank))


@contextlib.contextmanager
def returns_located(f: Callable[..., Any]) -> Iterator[None]:
    """Errors about what ``f`` returns that lowering its call left without a location (a
    loop's accumulator, typed as a whole) located at ``f``'s return."""
    try:
        yield
    except TypeMismatch as err:
        d = unlocated(err)  # (one located already, or by a note, stays as it is)
        if d is None:
            raise
        raise result_error(f, d.message, d.hint) from None


def result_error(f: Callable[..., Any], message: str, hint: str = "") -> TypeMismatch:
    """A ``TypeMismatch`` about what node function ``f`` returns, located at its first
    ``return`` (a lambda: its body) where its source is at hand."""
    span = None
    try:
        src = get_source(f)
    except OffloadError:
        src = None
    if src is not None:
        node: ast.AST = src.node
        returned = (
            node.body
            if isinstance(node, ast.Lambda)
            else next(
                (r for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None),
                None,
            )
        )
        span = src.span(returned) if returned is not None else None
    err = TypeMismatch.at(message, span, hint=hint)
    assert isinstance(err, TypeMismatch)
    return err


def closure_kinds(f: Any) -> tuple[object, ...]:
    """What a lowering of ``f`` depends on in its closure, cell by cell: a function,
    module or class by identity (a call resolves to it at compile time), any other value
    by its type, dtype and rank (what the lowering types it as); not the cells' identity,
    so a closure made per call -- ``scatter``'s index reader, a lambda in a loop, a
    streamed chunk's shifted index function -- reuses the lowering of the first, and reads
    its own captures (``ScalarFunction.bound``)."""
    kinds: list[object] = []
    for cell in f.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            kinds.append(None)
            continue
        if isinstance(v, types.FunctionType | types.ModuleType | type | types.BuiltinFunctionType):
            kinds.append(("id", id(v)))
        else:
            kinds.append((type(v), str(getattr(v, "dtype", "")), getattr(v, "ndim", None)))
    return tuple(kinds)


def _require_function(f: object, what: str) -> None:
    if not isinstance(f, types.FunctionType):
        raise TypeError(f"{what} must be a plain Python function or lambda, not {type(f).__name__}")


def _is_operand(steps: tuple[tuple[str, object], ...]) -> bool:
    return len(steps) == 1 and steps[0][0] == "attr" and str(steps[0][1]).startswith("x")


def _finish(
    fname: str, lowered: Lowered, root: object, operand_caps: set[int], n_operands: int
) -> ScalarFunction:
    ir = run_pipeline(lowered.ir, CompileOptions())
    user = tuple(k for k in range(len(ir.captures)) if k not in operand_caps)
    dts = tuple(np.dtype(t.dtype) for t in ir.result_types)
    kinds = capture_type_key(fetch_captures(root, lowered))
    return ScalarFunction(
        fname, ir, n_operands, dts, user, lowered, root, kinds, isinstance(root, _Operands)
    )


class _ScalarHooks(BaseHooks):
    """Hooks that read operand sources as parameters and hand the results to ``r<k>``;
    the target's math (``np.floor`` on the CPU, ``math.floor`` on the GPU) comes from
    ``target``'s hooks."""

    def __init__(self, sf: ScalarFunction, target: BaseHooks) -> None:
        self.sf = sf
        self.target = target
        self.operand_of: dict[int, int] = {}
        self.user_of = {k: j for j, k in enumerate(sf.user_captures)}
        operand = 0
        for k in range(len(sf.ir.captures)):
            if k not in self.user_of:
                self.operand_of[k] = operand
                operand += 1

    def math(self, fn: str, args: list[ast.expr], t: ScalarType) -> ast.expr:
        return self.target.math(fn, args, t)

    def int_nsw(self, code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType) -> ast.expr:
        return self.target.int_nsw(code, a, b, t)

    def param_name(self, k: int) -> str:
        n = self.sf.ir.n_index
        if k < n:
            return "q0" if self.sf.operand_node else f"p{k}"
        return f"u{self.user_of[k - n]}"

    def load(
        self, capture_index: int, index_exprs: list[ast.expr], narrow: Sequence[bool] = ()
    ) -> ast.expr:
        if capture_index in self.operand_of:
            return name(f"p{self.operand_of[capture_index]}")
        arr = name(f"u{self.user_of[capture_index]}")
        if not index_exprs:
            return ast.Subscript(arr, ast.Constant(0), ast.Load())
        items: list[ast.expr] = [ast.Call(expr("np.uint64"), [e], []) for e in index_exprs]
        index = items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())
        return ast.Subscript(arr, index, ast.Load())

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        if capture_index in self.operand_of:
            return ast.Constant(1)
        return ast.Subscript(
            ast.Attribute(name(f"u{self.user_of[capture_index]}"), "shape", ast.Load()),
            ast.Constant(axis),
            ast.Load(),
        )

    def ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        return [assign(f"r{k}", v) for k, v in enumerate(values)]


def _source(sf: ScalarFunction, gpu: bool) -> str:
    base: BaseHooks = BaseHooks() if gpu else CpuHooks(sf.ir, False)
    body = emit_body(sf.ir, _ScalarHooks(sf, base))
    inits: list[ast.stmt] = [assign(f"r{k}", const(0, t)) for k, t in enumerate(sf.ir.result_types)]
    if sf.operand_node:
        inits.insert(0, assign("q0", ast.Constant(0)))
    results: list[ast.expr] = [name(f"r{k}") for k in range(len(sf.ir.result_types))]
    ret = ast.Return(ast.Tuple(results, ast.Load()))
    args = ast.arguments([], [ast.arg(p) for p in sf.params], None, [], [], None, [])
    fdef = ast.FunctionDef(
        name=sf.fname, args=args, body=[*inits, *body, ret], decorator_list=[], lineno=0
    )
    return print_source([fdef])


__all__ = [
    "Dtypes",
    "ScalarFunction",
    "compile_combine",
    "compile_index_function",
]
