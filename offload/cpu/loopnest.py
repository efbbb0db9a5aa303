"""The CPU kernel around an element body: hooks over numba arrays and the loop nest.

The generated ``cpu-seq`` kernel for a rank-2 function with one result and one captured
array::

    def kernel(n0, n1, out0, c0, err):
        for i0 in range(n0):
            for i1 in range(n1):
                <element body: x_2 = c0[i0, i1] ... out0[i0, i1] = x_4>

The ``cpu-par`` kernel is a sequential kernel over a range of *tasks*, compiled by numba's
plain pipeline; ``offload.cpu.parallel`` runs contiguous ranges of tasks on numba's
threads. For rank >= 2 the source holds two: ``kernel`` where a task is a whole row (rows
of at most ``TILE`` elements), ``kernel_tiles`` where it is a tile of ``TILE`` elements of
a longer row, and a launch compiles and runs the one its shape needs (``tiled``)::

    def kernel(t0, t1, n0, n1, out0, c0, err):
        for i0 in range(t0, t1):
            for i1 in range(n1):
                <element body>

    def kernel_tiles(t0, t1, n0, n1, out0, c0, err):
        <row i0 and tile of task t0>
        for task in range(t0, t1):
            for i1 in range(tile * 2048, min(tile * 2048 + 2048, n1)):
                <element body>
            <next tile, or the first tile of the next row>

So the work divides well whether the outer extent is small or large (``task_count``)
while each innermost loop stays unit-stride. It is not a numba ``prange``: numba's
parallel pipeline types, simplifies and lowers the element body a second time (as the
body of the gufunc it outlines), which made a 9-way ``if``/``elif`` float32 stencil
compile 2.6 s cold against 0.9 s sequentially (docs/ports.md, "Compile time").
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence

from offload.diagnostics import Span
from offload.emit import BaseHooks, emit_body_and_locals
from offload.emit.template import assign, expr, name
from offload.ir.core import Function
from offload.ir.types import ArrayType, LocalType, ScalarType

TILE = 2048
"""Elements of the last axis per task of a rank >= 2 ``cpu-par`` kernel."""
RANGE_PARAMS = ("t0", "t1")
"""The ``cpu-par`` kernel's first parameters: it computes tasks ``t0 <= task < t1``."""
TILES_KERNEL = "kernel_tiles"
"""The ``cpu-par`` kernel of rows longer than ``TILE`` (rank >= 2; ``tiled``), beside
``kernel`` in the same source and compiled only where a launch needs it."""

MAX_NESTED_RANK = 3
"""``cpu-seq`` nests one loop per axis up to this rank; above it, one loop over the rows
(unravelled) and one over the last axis, so the kernel's nesting does not grow with the
rank (Python allows 20 nested loops; NumPy arrays have up to 64 axes)."""


class CpuHooks(BaseHooks):
    """Emission hooks for numba CPU kernels: captures are numba array/scalar arguments."""

    def __init__(self, fn: Function, bounds_check: bool) -> None:
        self.fn = fn
        self.bounds_check = bounds_check
        self.sites: list[tuple[int, Span | None]] = []
        """Checked reads, in emission order: (capture index, span); ``err[0]`` is 1 + site."""
        locals_ = [op.result.type for op in fn.ops() if isinstance(op.result.type, LocalType)]
        self.max_ndim = max(
            [c.type.ndim for c in fn.captures if isinstance(c.type, ArrayType)]
            + [len(t.shape) for t in locals_]
            + [0]
        )

    def param_name(self, k: int) -> str:
        n = self.fn.n_index
        return f"i{k}" if k < n else f"c{k - n}"

    def load(
        self, capture_index: int, index_exprs: list[ast.expr], narrow: Sequence[bool] = ()
    ) -> ast.expr:
        arr = name(f"c{capture_index}")  # (CPU kernels never get narrowed indices)
        if not index_exprs:
            # numba's parfor lowering fails on ``a[()]`` of a 0-d array; ``item()`` is the
            # same read and lowers in both kernels.
            return expr("a.item()", a=arr)
        return ast.Subscript(arr, _unsigned_index(index_exprs), ast.Load())

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        return expr(f"c.shape[{axis}]", c=name(f"c{capture_index}"))

    def ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        n = self.fn.n_index
        if n == 0:
            index: ast.expr = ast.Constant(0)  # rank 0: outputs are passed as 1-element views
        else:
            index = _unsigned_index([name(f"i{k}") for k in range(n)])
        return [
            ast.Assign([ast.Subscript(name(f"out{k}"), index, ast.Store())], v, lineno=0)
            for k, v in enumerate(values)
        ]

    def math(self, fn: str, args: list[ast.expr], t: ScalarType) -> ast.expr:
        # numba's math.floor/ceil/trunc return int64 and it has no math.fmod; NumPy's keep
        # the float type, and np.rint is the exact half-to-even rounding.
        if fn in ("floor", "ceil", "trunc", "fmod", "rint"):
            return ast.Call(expr(f"np.{fn}"), args, [])
        return super().math(fn, args, t)

    def bounds_fail(
        self, capture_index: int, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        if not self.bounds_check:
            return []
        self.sites.append((capture_index, span))
        # Record the first fault (threads may race; any one faulting read is a true report).
        record: list[ast.stmt] = [assign_item("err", 0, ast.Constant(len(self.sites)))]
        for k in range(self.fn.n_index):
            record.append(assign_item("err", 1 + k, name(f"i{k}")))
        for k, e in enumerate(index_exprs):
            record.append(assign_item("err", 1 + self.fn.n_index + k, e))
        return [ast.If(expr("err[0] == 0"), record, [])]

    def local_bounds_fail(
        self, t: LocalType, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        # A local array's site holds -rank in place of a capture index.
        return self.bounds_fail(-len(t.shape), index_exprs, span)

    @property
    def err_size(self) -> int:
        return 1 + self.fn.n_index + self.max_ndim


def _unsigned_index(index_exprs: list[ast.expr]) -> ast.expr:
    """``a[np.uint64(i), ...]``: IR indices are non-negative and in bounds (the frontend
    makes Python's negative-index wrap explicit), and an unsigned index spares numba's own
    wrap-around branch, which kept LLVM from vectorising parallel loops (10x on a copy)."""
    items: list[ast.expr] = [ast.Call(expr("np.uint64"), [e], []) for e in index_exprs]
    return items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())


def assign_item(arr: str, k: int, value: ast.expr) -> ast.stmt:
    """``arr[k] = value``."""
    return ast.Assign([ast.Subscript(name(arr), ast.Constant(k), ast.Store())], value, lineno=0)


def kernel_function(fn: Function, hooks: CpuHooks, parallel: bool) -> list[ast.stmt]:
    """The ``def kernel(n0.., out0.., c0.., err)`` statement that fills the outputs; with
    ``parallel``, ``def kernel(t0, t1, n0.., out0.., c0.., err)``, which fills those of
    tasks ``t0 <= task < t1`` (see the module doc and ``task_count``), and for rank >= 2
    also ``def kernel_tiles(...)`` (``TILES_KERNEL``): ``kernel`` serves rows of at most
    ``TILE`` elements, ``kernel_tiles`` longer ones (``tiled``).

    Local arrays (``np.empty`` in numba: a heap allocation, ~40 ns) are allocated once per
    kernel call (in ``cpu-par``, once per range of tasks: one per thread), never per element:
    each element writes before it reads (the frontend's fill and stores), so reusing the
    storage changes no value."""
    body, allocations = emit_body_and_locals(fn, hooks)
    rank = fn.n_index
    params = [f"n{k}" for k in range(rank)]
    params += [f"out{k}" for k in range(len(fn.result_types))]
    params += [f"c{k}" for k in range(len(fn.captures))]
    params.append("err")
    if parallel:
        ranged = [*RANGE_PARAMS, *params]
        if rank < 2:
            return [_def("kernel", ranged, [*allocations, *_tasks(rank, body)])]
        return [
            _def("kernel", ranged, [*allocations, *_rows_of(rank, body)]),
            _def(TILES_KERNEL, ranged, [*allocations, *_tiles_of(rank, body)]),
        ]
    if rank == 0:
        nest = [*allocations, *body]
    elif rank > MAX_NESTED_RANK:
        nest = [*allocations, *_rows(rank, body)]
    else:
        nest = body
        for k in reversed(range(rank)):
            nest = _index_loop(k, expr(f"range(n{k})"), nest)
        nest = [*allocations, *nest]
    return [_def("kernel", params, nest)]


def task_count(shape: tuple[int, ...]) -> int:
    """The tasks of a ``cpu-par`` kernel over ``shape``: one for rank 0, an element each
    for rank 1, else ``TILE`` elements of one row each (the last tile of a row shorter)."""
    if len(shape) <= 1:
        return shape[0] if shape else 1
    return math.prod(shape[:-1]) * -(-shape[-1] // TILE)


def _index_loop(k: int, iterable: ast.expr, body: list[ast.stmt]) -> list[ast.stmt]:
    """``for _rK in iterable: iK = np.int64(_rK); body``.

    The IR says index parameters are i64, so the kernel says so whatever numba makes of the
    loop variable (it types a ``prange`` variable as unsigned, and an index that then meets
    signed int64 arithmetic, ``k = i0; k += 10``, would unify to float64).
    """
    loop_body = [assign(f"i{k}", expr(f"np.int64(_r{k})")), *body]
    return [ast.For(ast.Name(f"_r{k}", ast.Store()), iterable, loop_body, [])]


def _def(fname: str, params: list[str], body: list[ast.stmt]) -> ast.stmt:
    args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
    return ast.FunctionDef(name=fname, args=args, body=body, decorator_list=[], lineno=0)


def _unravel(q0: ast.expr, rank: int) -> list[ast.stmt]:
    """``i0 .. i{rank-2}`` from the row number ``q0``, last outer axis fastest (row-major)."""
    out: list[ast.stmt] = [assign("q0", q0)]
    q = 0
    for k in reversed(range(1, rank - 1)):
        out.append(assign(f"i{k}", expr(f"q{q} % n{k}")))
        out.append(assign(f"q{q + 1}", expr(f"q{q} // n{k}")))
        q += 1
    out.append(assign("i0", name(f"q{q}")))
    return out


def _rows(rank: int, body: list[ast.stmt]) -> list[ast.stmt]:
    """``cpu-seq`` above ``MAX_NESTED_RANK``: a loop over the rows, then the last axis."""
    last = rank - 1
    rows = " * ".join(f"n{k}" for k in range(last))
    inner = [
        *_unravel(expr("np.int64(row)"), rank),
        *_index_loop(last, expr(f"range(n{last})"), body),
    ]
    return [ast.For(ast.Name("row", ast.Store()), expr(f"range({rows})"), inner, [])]


def tiled(shape: tuple[int, ...]) -> bool:
    """Whether a ``cpu-par`` launch over ``shape`` runs ``TILES_KERNEL`` (rank >= 2 and rows
    longer than ``TILE``), not ``kernel``."""
    return len(shape) >= 2 and shape[-1] > TILE


def _tasks(rank: int, body: list[ast.stmt]) -> list[ast.stmt]:
    """``cpu-par``'s loop over tasks ``t0 .. t1 - 1`` for rank 0 and 1 (a task is the one
    element, or an element)."""
    tasks = expr("range(t0, t1)")
    if rank == 0:
        return [ast.For(ast.Name("task", ast.Store()), tasks, body, [])]
    return _index_loop(0, tasks, body)


def _rows_of(rank: int, body: list[ast.stmt]) -> list[ast.stmt]:
    """Tasks ``t0 .. t1 - 1`` as whole rows (row-major over the axes before the last), run
    as ``cpu-seq``'s nest runs them: per run of rows in one plane (the axes before the last
    two), the plane's index is decoded and the rows of the run and their elements are two
    ``range`` loops. So LLVM peels a stencil's border tests (``i == 0``, ``i == n - 1``) off
    a loop that starts at 0 and vectorises the rest, and hoists what depends on the outer
    indices out of the inner loop: a loop over ``range(lo, hi)`` in an odometer of rows
    measured 10-25% slower on one thread (7-point stencil of 40-element rows: 178 us
    against 164 us for ``cpu-seq``'s nest and for this one), and one kernel holding both
    this loop and ``_tiles_of``'s 2-8% slower than this one alone (2d-convolution: 265 us
    against 254, ``cpu-seq`` 249)."""
    last = rank - 1
    inner = _index_loop(last, expr(f"range(n{last})"), body)
    if rank == 2:
        return _index_loop(0, expr("range(t0, t1)"), inner)
    row = last - 1
    run = [
        *_unravel(expr(f"r // n{row}"), rank - 1),
        assign("a", expr(f"r - q0 * n{row}")),
        assign("b", expr(f"min(n{row}, a + (t1 - r))")),
        *_index_loop(row, expr("range(a, b)"), inner),
        ast.AugAssign(ast.Name("r", ast.Store()), ast.Add(), expr("b - a")),
    ]
    return [assign("r", name("t0")), ast.While(expr("r < t1"), run, [])]


def _tiles_of(rank: int, body: list[ast.stmt]) -> list[ast.stmt]:
    """Tasks ``t0 .. t1 - 1`` as tiles of rows longer than ``TILE``: the first task's row
    and tile decoded once, then stepped as an odometer (dividing per task, the tile by the
    tile count and the row by each extent, cost a 7-point stencil of 66-element rows a
    quarter of its time)."""
    last = rank - 1
    first, *unravel = _unravel(expr("t0 // tiles"), rank)
    step: list[ast.stmt] = [
        _add("tile", 1),
        ast.If(
            expr("tile == tiles"), [assign("tile", ast.Constant(0)), _add(f"i{last - 1}", 1)], []
        ),
    ]
    for k in reversed(range(1, last)):  # carries, innermost first: one pass settles them
        wrap = [assign(f"i{k}", ast.Constant(0)), _add(f"i{k - 1}", 1)]
        step.append(ast.If(expr(f"i{k} == n{k}"), wrap, []))
    tile: list[ast.stmt] = [
        assign("lo", expr(f"tile * {TILE}")),
        assign("hi", expr(f"min(lo + {TILE}, n{last})")),
        *_index_loop(last, expr("range(lo, hi)"), body),
        *step,
    ]
    return [
        assign("tiles", expr(f"(n{last} + {TILE - 1}) // {TILE}")),
        first,
        assign("tile", expr("t0 - q0 * tiles")),
        *unravel,
        ast.For(ast.Name("task", ast.Store()), expr("range(t0, t1)"), tile, []),
    ]


def _add(target: str, k: int) -> ast.stmt:
    """``target += k``."""
    return ast.AugAssign(ast.Name(target, ast.Store()), ast.Add(), ast.Constant(k))
