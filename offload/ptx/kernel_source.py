"""IR -> the Python source of a numba.cuda kernel over raw pointers (pure; no numba here).

Parameters, in order: the result's extents (int64), one pointer per result, then per capture
either pointer + extents + element strides (arrays) or the typed value (scalars), then the
bounds-fault record when bounds checking is on. Pointers give the PTX a plain ABI that CuPy
launches in a few microseconds (a numba dispatcher launch costs 20-60 us).

Index space to threads -- why a 2-D grid rather than one flat index: the x dimension walks
the last (contiguous) axis, so neighbouring threads touch neighbouring elements (coalesced),
and the y dimension walks the rows (all leading axes flattened, split back into indices by
one divmod per *row*, not per element: a 64-bit division is ~40 instructions on the GPU).
Both are grid-stride loops over int64 counters, so any shape is covered by any grid,
including more than 2**31 elements or rows.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.emit import structure
from offload.emit.hooks import EmitHooks
from offload.emit.pysrc import print_source
from offload.ir.core import Function
from offload.ir.types import ArrayType, ScalarType
from offload.ptx import hooks as h

BODY_MARKER = "OFFLOAD_BODY"


class ParamKind(enum.Enum):
    EXTENT = "extent"
    OUT = "out"
    PTR = "ptr"
    CAP_EXTENT = "cap_extent"
    CAP_STRIDE = "cap_stride"
    SCALAR = "scalar"
    ERR = "err"


@dataclass(frozen=True)
class Param:
    """One kernel parameter and where its value comes from at launch."""

    name: str
    kind: ParamKind
    index: int = 0
    """Result axis (EXTENT), output number (OUT), or capture number (the others)."""
    axis: int = 0
    """Axis of a captured array (CAP_EXTENT, CAP_STRIDE)."""
    dtype: np.dtype[Any] | None = None
    """Element type (OUT, PTR) or scalar type (SCALAR)."""


@dataclass(frozen=True)
class KernelSource:
    """A kernel's Python source and its parameter list."""

    name: str
    """The PTX entry name."""
    source: str
    params: tuple[Param, ...]
    rank: int
    n_outputs: int
    bounds_check: bool


def kernel_params(fn: Function, bounds_check: bool) -> list[Param]:
    """The parameter list (see the module docstring for the order)."""
    params = [Param(h.extent_param(k), ParamKind.EXTENT, k) for k in range(fn.n_index)]
    params += [
        Param(h.out_param(j), ParamKind.OUT, j, dtype=t.dtype)
        for j, t in enumerate(fn.result_types)
    ]
    for k, cap in enumerate(fn.captures):
        t = cap.type
        if isinstance(t, ArrayType):
            params.append(Param(h.cap_param(k), ParamKind.PTR, k, dtype=t.elem.dtype))
            params += [Param(h.cap_extent(k, a), ParamKind.CAP_EXTENT, k, a) for a in range(t.ndim)]
            params += [Param(h.cap_stride(k, a), ParamKind.CAP_STRIDE, k, a) for a in range(t.ndim)]
        else:
            assert isinstance(t, ScalarType)
            params.append(Param(h.cap_param(k), ParamKind.SCALAR, k, dtype=t.dtype))
    if bounds_check:
        params.append(Param(h.ERR, ParamKind.ERR, dtype=np.dtype(np.int64)))
    return params


def _skeleton(name: str, params: list[Param], rank: int) -> str:
    """The thread-mapping loops around ``OFFLOAD_BODY`` (see the module docstring)."""
    ext = [h.extent_param(k) for k in range(rank)]
    nrows = " * ".join(ext[:-1]) if rank >= 2 else "1"
    nlast = ext[-1] if rank >= 1 else "1"
    col = h.index_var(rank - 1) if rank >= 1 else "col"
    split: list[str] = []
    if rank == 2:
        split = [f"{h.index_var(0)} = row"]
    elif rank > 2:
        split = ["rest = row"]
        for k in range(rank - 2, 0, -1):
            split += [f"{h.index_var(k)} = rest % {ext[k]}", f"rest = rest // {ext[k]}"]
        split.append(f"{h.index_var(0)} = rest")
    i8 = " " * 8
    lines = [
        f"def {name}({', '.join(p.name for p in params)}):",
        "    tx = np.int64(cuda.threadIdx.x)"
        " + np.int64(cuda.blockIdx.x) * np.int64(cuda.blockDim.x)",
        "    sx = np.int64(cuda.blockDim.x) * np.int64(cuda.gridDim.x)",
        "    row = np.int64(cuda.threadIdx.y)"
        " + np.int64(cuda.blockIdx.y) * np.int64(cuda.blockDim.y)",
        "    sy = np.int64(cuda.blockDim.y) * np.int64(cuda.gridDim.y)",
        f"    nrows = np.int64({nrows})",
        f"    nlast = np.int64({nlast})",
        "    while row < nrows:",
        *(i8 + s for s in split),
        f"        {col} = tx",
        f"        while {col} < nlast:",
        f"            {h.LINEAR} = row * nlast + {col}",
        f"            {BODY_MARKER}",
        f"            {col} += sx",
        "        row += sy",
    ]
    return "\n".join(lines) + "\n"


class _Splice(ast.NodeTransformer):
    def __init__(self, body: list[ast.stmt]) -> None:
        self.body = body

    def visit_Expr(self, node: ast.Expr) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == BODY_MARKER:
            return self.body
        return node


EmitBody = Callable[[Function, EmitHooks], list[ast.stmt]]


def kernel_name(fn: Function) -> str:
    """The PTX entry name: ``offload_`` + the user's function name (identifier-safe)."""
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in fn.name)
    return f"offload_{safe}"


def build_kernel_source(
    fn: Function, *, bounds_check: bool = False, emit_body: EmitBody | None = None
) -> KernelSource:
    """The kernel for optimised IR ``fn`` (``emit_body`` defaults to the shared emitter)."""
    emit = emit_body or structure.emit_body
    params = kernel_params(fn, bounds_check)
    name = kernel_name(fn)
    tree = ast.parse(_skeleton(name, params, fn.n_index))
    body = emit(fn, h.PointerHooks(fn, bounds_check))
    tree = _Splice(body).visit(tree)
    ast.fix_missing_locations(tree)
    source = _unparse(tree)
    return KernelSource(name, source, tuple(params), fn.n_index, len(fn.result_types), bounds_check)


def _unparse(tree: ast.Module) -> str:
    """Source text with the emitter's ``# offload: file:line`` comments."""
    return print_source(tree)
