"""``EmitHooks`` for the GPU: captured arrays are raw pointers plus extents and strides.

The same hooks serve the real GPU (parameters typed ``CPointer(dtype)``) and numba's CUDA
simulator (the parameters are flat 1-D NumPy arrays): ``p[k]`` means the same for both, so
one kernel source runs in both places.

Parameter names (none starts with ``_`` or ends in ``_<digits>``, per the emitter's name
discipline): ``ix<k>`` index variables, ``oln<k>`` result extents, ``out<j>`` outputs,
``cap<k>`` a captured array's pointer or a captured scalar, ``cap<k>n<a>`` / ``cap<k>s<a>``
its extent / element stride along axis ``a``, ``olerr`` the bounds-fault record.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from offload.diagnostics import Span
from offload.emit.hooks import BaseHooks
from offload.emit.template import expr, name
from offload.ir.core import Function
from offload.ir.types import ArrayType

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
ERR = "olerr"


class PointerHooks(BaseHooks):
    """Loads as ``cap[i0*s0 + i1*s1 ...]``; results stored at the linear index."""

    def __init__(self, fn: Function, bounds_check: bool = False, index_bits: int = 64) -> None:
        self.fn = fn
        self.bounds_check = bounds_check
        self.index_bits = index_bits
        """The width of the kernel's extents and strides (the guard makes int32 hold them)."""

    def param_name(self, k: int) -> str:
        if k < self.fn.n_index:
            return index_var(k)
        return cap_param(k - self.fn.n_index)

    def load(
        self, capture_index: int, index_exprs: list[ast.expr], narrow: Sequence[bool] = ()
    ) -> ast.expr:
        offset: ast.expr | None = None
        # All-int32 indices (the 32-bit kernel's narrowed values): int32 products and sums,
        # wrapped because numba computes int32 * int32 in int64 (the guard makes every
        # in-bounds offset fit). Otherwise int64, as an index that stayed i64 is one NVVM
        # may strength-reduce into a pointer increment.
        w = "np.int32" if narrow and all(narrow) and self.index_bits == 32 else ""
        for axis, ix in enumerate(index_exprs):
            term = expr(f"{w}(i * s)", i=ix, s=name(cap_stride(capture_index, axis)))
            offset = term if offset is None else expr(f"{w}(a + b)", a=offset, b=term)
        read = ast.Subscript(name(cap_param(capture_index)), offset or ast.Constant(0), ast.Load())
        if _is_bool_array(self.fn, capture_index):
            # bool arrays travel as uint8 pointers (numba cannot store i1 through a bool*).
            return expr("r != np.uint8(0)", r=read)
        return read

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        return name(cap_extent(capture_index, axis))

    def ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        return [
            ast.Assign(
                [ast.Subscript(name(out_param(j)), name(LINEAR), ast.Store())],
                expr("np.uint8(v)", v=v) if t.is_bool else v,
                lineno=0,
            )
            for j, (v, t) in enumerate(zip(values, self.fn.result_types, strict=True))
        ]

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
