"""``EmitHooks`` for the GPU: captured arrays are raw pointers plus extents and strides.

The same hooks serve the real GPU (parameters typed ``CPointer(dtype)``) and numba's CUDA
simulator (the parameters are flat 1-D NumPy arrays): ``p[k]`` means the same for both, so
one kernel source runs in both places.

Parameter names (none starts with ``_`` or ends in ``_<digits>``, per the emitter's name
discipline): ``ix<k>`` index variables, ``oln<k>`` result extents, ``out<j>`` outputs,
``cap<k>`` a captured array's pointer or a captured scalar, ``cap<k>n<a>`` / ``cap<k>s<a>``
its extent / element stride along axis ``a``, ``olerr`` the bounds-fault record;
``nsw_add_i32`` ... are ``offload.ptx.intrinsics``' (bound by ``offload.ptx.compile``).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence

from offload.diagnostics import Span
from offload.emit.hooks import BaseHooks
from offload.emit.template import expr, name
from offload.ir.core import Function
from offload.ir.ops import Opcode
from offload.ir.tile_ops import tile_of
from offload.ir.types import I32, ArrayType, LocalType, ScalarType
from offload.ptx.intrinsics import NSW_FUNCTIONS, RSQRT_FUNCTIONS

ERR_SLOTS = 4
"""``olerr`` holds: [0] fault flag (1), [1] source line, [2] capture index, [3] element."""


def index_var(k: int) -> str:
    return f"ix{k}"


def extent_param(k: int) -> str:
    return f"oln{k}"


def out_param(j: int) -> str:
    return f"out{j}"


def cap_param(k: int) -> str:
    return f"cap{k}"


def cap_extent(k: int, axis: int) -> str:
    return f"cap{k}n{axis}"


def cap_stride(k: int, axis: int) -> str:
    return f"cap{k}s{axis}"


LINEAR = "lin"
"""The variable holding the element's linear (row-major) index inside the thread loops."""

TILE_LANES = ("lty", "ltx")
"""A tiled kernel's thread coordinates in its tile (rows, columns: ``ops.LANE``'s axes)."""
INSIDE = "olin"
"""A tiled kernel's flag: the thread's element is inside the index space (it stores)."""
ORIGIN = "olorg"
"""A rank-1 tiled kernel's first element of the thread's line (an int64)."""
WINDOW = "olwin"
"""A rank-1 tiled kernel's window positions that the line's elements read: ``[0, olwin)``."""


def copy_index_var(axis: int, copy: int) -> str:
    """The index variable of copy ``copy`` along ``axis`` of a blocked kernel
    (``offload.opt.jam``); copy 0 is the plain index variable."""
    return index_var(axis) if copy == 0 else f"ix{axis}c{copy}"


def copy_inside(axis: int, copy: int) -> str:
    """A blocked kernel's flag: copy ``copy``'s index along ``axis`` is inside the space."""
    return f"olin{axis}c{copy}"


def const_array(k: int) -> str:
    """Capture ``k``'s contents in the kernel's constant bank (``Capture.value``)."""
    return f"olc{k}"


def const_global(k: int) -> str:
    """The module-level NumPy array that ``const_array(k)`` is made from."""
    return f"OLC{k}"


def tile_array(slot: int) -> str:
    """The shared-memory tile of ``slot`` (``offload.opt.stage``)."""
    return f"olsm{slot}"


ERR = "olerr"


LOCAL_SITE = -1
"""The capture number a fault record holds for an access to a local array."""


class PointerHooks(BaseHooks):
    """Loads as ``cap[i0*s0 + i1*s1 ...]``; results stored at the linear index."""

    def __init__(
        self,
        fn: Function,
        bounds_check: bool = False,
        index_bits: int = 64,
        unit_last: bool = False,
    ) -> None:
        self.fn = fn
        self.bounds_check = bounds_check
        self.index_bits = index_bits
        """The width of the kernel's extents and strides (the guard makes int32 hold them)."""
        self.unit_last = unit_last
        """Whether every captured array's last axis has element stride 1 (the guard checks
        it): its index is added as it is, not multiplied by the stride parameter, so that
        neighbouring elements (``x - 1``, ``x + 1``) are one address plus constants."""
        self.tiled = tile_of(fn) is not None
        """Whether ``fn`` runs in thread tiles (``offload.opt.stage``)."""

    def param_name(self, k: int) -> str:
        fn = self.fn
        if k >= fn.n_index:
            return cap_param(k - fn.n_index)
        if fn.blocking:
            axis = fn.index_axis(k)
            return copy_index_var(axis, k - sum(fn.blocking[:axis]))
        return index_var(k)

    def load(
        self, capture_index: int, index_exprs: list[ast.expr], narrow: Sequence[bool] = ()
    ) -> ast.expr:
        value = self.fn.captures[capture_index].value
        if value is not None:  # the constant bank, at C-order offsets of its own
            flat: ast.expr = ast.Constant(0)
            for axis, (ix, step) in enumerate(zip(index_exprs, value.strides(), strict=True)):
                term = expr(f"np.int64(i) * np.int64({step})", i=ix)
                flat = term if axis == 0 else expr("a + b", a=flat, b=term)
            const = ast.Subscript(name(const_array(capture_index)), flat, ast.Load())
            return expr("r != np.uint8(0)", r=const) if value.dtype.kind == "b" else const
        offset: ast.expr | None = None
        # All-int32 indices (the 32-bit kernel's narrowed values): int32 products and sums
        # that cannot overflow -- the guard bounds sum((n - 1) * |stride|), so every partial
        # sum of an in-bounds offset, below 2**31 -- hence ``nsw``, which lets NVVM widen the
        # offset and strength-reduce it into a pointer increment. Otherwise int64.
        n32 = bool(narrow) and all(narrow) and self.index_bits == 32
        mul = f"{NSW_FUNCTIONS['mul']}(i, s)" if n32 else "i * s"
        add = f"{NSW_FUNCTIONS['add']}(a, b)" if n32 else "a + b"
        last = len(index_exprs) - 1
        for axis, ix in enumerate(index_exprs):
            unit = self.unit_last and axis == last
            term = ix if unit else expr(mul, i=ix, s=name(cap_stride(capture_index, axis)))
            offset = term if offset is None else expr(add, a=offset, b=term)
        read = ast.Subscript(name(cap_param(capture_index)), offset or ast.Constant(0), ast.Load())
        if _is_bool_array(self.fn, capture_index):
            # bool arrays travel as uint8 pointers (numba cannot store i1 through a bool*).
            return expr("r != np.uint8(0)", r=read)
        return read

    def math(self, fn: str, args: list[ast.expr], t: ScalarType) -> ast.expr:
        if fn == "rsqrt" and t.dtype.name in RSQRT_FUNCTIONS:
            return ast.Call(name(RSQRT_FUNCTIONS[t.dtype.name]), args, [])
        return super().math(fn, args, t)

    def local_array(self, t: LocalType) -> ast.expr:
        # Registers or local memory: numba-cuda's per-thread array (an alloca).
        shape = t.shape[0] if len(t.shape) == 1 else t.shape
        return expr(f"cuda.local.array({shape!r}, np.{t.elem.dtype.name})")

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        return name(cap_extent(capture_index, axis))

    def int_nsw(self, code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType) -> ast.expr:
        # Only the 32-bit kernel's int32 ops (narrow marks no other): ``add nsw i32`` etc.
        if t != I32 or self.index_bits != 32:
            return super().int_nsw(code, a, b, t)
        fn = NSW_FUNCTIONS[code.name.lower()]
        return ast.Call(name(fn), [a, b], [])

    def ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        if self.fn.blocking:
            return self._blocked_ret(values)
        stores = self._stores(values, name(LINEAR))
        if self.tiled:  # a thread past the edge computed a clamped copy: it must not store
            return [ast.If(name(INSIDE), stores, [])]
        return stores

    def _stores(self, values: list[ast.expr], at: ast.expr) -> list[ast.stmt]:
        return [
            ast.Assign(
                [ast.Subscript(name(out_param(j)), at, ast.Store())],
                expr("np.uint8(v)", v=v) if t.is_bool else v,
                lineno=0,
            )
            for j, (v, t) in enumerate(zip(values, self.fn.result_types, strict=True))
        ]

    def _blocked_ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        """Each copy's results at its own linear index: in a tiled kernel, if it is inside
        the space (a walking kernel's copies always are)."""
        blocking = self.fn.blocking
        n = len(self.fn.result_types)
        out: list[ast.stmt] = []
        copies = itertools.product(*(range(f) for f in blocking))
        for c, copy in enumerate(copies):
            at: ast.expr = name(copy_index_var(0, copy[0]))
            for axis in range(1, len(blocking)):
                at = expr(
                    "i * n + j",
                    i=at,
                    n=name(extent_param(axis)),
                    j=name(copy_index_var(axis, copy[axis])),
                )
            at = expr(f"np.int{self.index_bits}(i)", i=at)
            stores = self._stores(values[c * n : (c + 1) * n], at)
            if not self.tiled:
                out += stores
                continue
            a, b = copy
            test = expr("p and q", p=name(copy_inside(0, a)), q=name(copy_inside(1, b)))
            out.append(ast.If(test, stores, []))
        return out

    def lane(self, axis: int) -> ast.expr:
        return name(TILE_LANES[1 if self.fn.rank == 1 else axis])  # a line: threadIdx.x

    def barrier(self) -> list[ast.stmt]:
        return [ast.Expr(expr("cuda.syncthreads()"))]

    def stage(self, slot: int, value: ast.expr) -> list[ast.stmt]:
        at: ast.expr = ast.Tuple([name(TILE_LANES[0]), name(TILE_LANES[1])], ast.Load())
        if self.fn.rank == 1:
            at = name(TILE_LANES[1])
        return [
            ast.Assign([ast.Subscript(name(tile_array(slot)), at, ast.Store())], value, lineno=0)
        ]

    def stage_window(self, slot: int, offset: int, capture: int, base: ast.expr) -> list[ast.stmt]:
        q = expr(f"np.int64(l) + np.int64({offset})", l=name(TILE_LANES[1]))
        at = expr("np.int64(o) + np.int64(b) + q", o=name(ORIGIN), b=base, q=q)
        store = ast.Assign(
            [ast.Subscript(name(tile_array(slot)), q, ast.Store())],
            self.load(capture, [at]),
            lineno=0,
        )
        return [ast.If(expr("q < w", q=q, w=name(WINDOW)), [store], [])]

    def tile_read(self, slot: int, along: int, it: ast.expr) -> ast.expr:
        if self.fn.rank == 1:  # a window: the line's element p at position (p - origin) + it
            # unsigned: numba would test a signed index for Python's negative wrap-around
            at = it if along < 0 else expr("np.uint64(np.int64(p) - o + it)",
                                           p=name(index_var(0)), o=name(ORIGIN), it=it)  # fmt: skip
            return ast.Subscript(name(tile_array(slot)), at, ast.Load())
        row, col = (it, name(TILE_LANES[1])) if along == 1 else (name(TILE_LANES[0]), it)
        return ast.Subscript(name(tile_array(slot)), ast.Tuple([row, col], ast.Load()), ast.Load())

    def local_bounds_fail(
        self, t: LocalType, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        return self.bounds_fail(LOCAL_SITE, index_exprs, span)  # capture -1: a local array

    def bounds_fail(
        self, capture_index: int, index_exprs: list[ast.expr], span: Span | None
    ) -> list[ast.stmt]:
        if not self.bounds_check:
            return []
        line = span.line if span is not None else 0
        # Racing faults may interleave their fields; any one fault is reported, and the flag
        # is written last so that a reader that sees it sees some fault's fields.
        fields = [(1, ast.Constant(line)), (2, ast.Constant(capture_index)), (3, name(LINEAR))]
        stmts: list[ast.stmt] = [
            ast.Assign([ast.Subscript(name(ERR), ast.Constant(slot), ast.Store())], value, lineno=0)
            for slot, value in fields
        ]
        stmts.append(
            ast.Assign(
                [ast.Subscript(name(ERR), ast.Constant(0), ast.Store())], ast.Constant(1), lineno=0
            )
        )
        return stmts


def _is_bool_array(fn: Function, capture_index: int) -> bool:
    t = fn.captures[capture_index].type
    return isinstance(t, ArrayType) and t.elem.is_bool
