"""IR -> the Python source of a numba.cuda kernel over raw pointers (pure; no numba here).

Parameters, in order: the result's extents (int64), one pointer per result, then per capture
either pointer + extents + element strides (arrays) or the typed value (scalars), then the
bounds-fault record when bounds checking is on. Pointers give the PTX a plain ABI that CuPy
launches in a few microseconds (a numba dispatcher launch costs 20-60 us).

Index space to threads -- why the grid's axes and not one flat index: the x dimension walks
the last (contiguous) axis, so neighbouring threads touch neighbouring elements (coalesced);
the y dimension walks the axis before it, and z the leading axes (flattened for rank 4 and
up, and split back into indices by one divmod per *plane*, not per element: a 64-bit
division is ~40 instructions on the GPU). All are grid-stride loops, so any shape is covered
by any grid; up to rank 3 no thread divides at all (a per-row divmod cost 7pt-stencil a
quarter of its issue slots when each thread ran one element).

Index width: a kernel is built with ``index_bits`` 64 (counters, extents and strides are
int64: any size) or 32 (all of them int32, and the body's IR narrowed by
``offload.opt.narrow``). The 32-bit kernel is valid only for launches that satisfy
``offload.ptx.guard``'s check (extents below 2**30, offsets below 2**31); it is what runs
almost always, and 64-bit integer work is what bounded the stencil kernels.
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
from offload.ir.tile_ops import tile_of, tile_slots, window_slots
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
    index_bits: int = 64
    """Width of the counters, extents and strides (32 only under the launch guard)."""
    tile: int | None = None
    """The thread tile's edge of a kernel with staged loads (``offload.opt.stage``): it runs
    in ``tile`` x ``tile`` blocks, one tile of the index space at a time (rank 1: blocks of
    ``tile`` threads, one line of the index space at a time)."""
    blocking: tuple[int, ...] = ()
    """Elements per thread along each axis of a blocked kernel (``offload.opt.jam``): a tile
    of threads covers ``tile * blocking[a]`` elements along axis ``a``."""
    unit_last: bool = False
    """Whether the kernel assumes every captured array's last axis has element stride 1
    (valid only for launches that ``offload.ptx.guard``'s unit-stride check admits)."""

    @property
    def index_dtype(self) -> np.dtype[Any]:
        """The NumPy type of the extent and stride parameters."""
        return np.dtype(np.int32 if self.index_bits == 32 else np.int64)


def kernel_params(fn: Function, bounds_check: bool) -> list[Param]:
    """The parameter list (see the module docstring for the order)."""
    params = [Param(h.extent_param(k), ParamKind.EXTENT, k) for k in range(fn.rank)]
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


def _skeleton(name: str, params: list[Param], rank: int, bits: int) -> str:
    """The thread-mapping loops around ``OFFLOAD_BODY`` (see the module docstring). Every
    integer assignment is wrapped in the index type: numba computes ``int32 op int32`` in
    int64, and a variable assigned both widths would be widened."""
    t = f"np.int{bits}"
    ext = [h.extent_param(k) for k in range(rank)]
    nplanes = " * ".join(ext[:-2]) if rank >= 3 else "1"
    nrows = ext[-2] if rank >= 2 else "1"
    nlast = ext[-1] if rank >= 1 else "1"
    col = h.index_var(rank - 1) if rank >= 1 else "col"
    row = h.index_var(rank - 2) if rank >= 2 else "row"
    split: list[str] = []
    if rank == 3:
        split = [f"{h.index_var(0)} = plane"]
    elif rank > 3:
        split = ["rest = plane"]
        for k in range(rank - 3, 0, -1):
            split += [f"{h.index_var(k)} = {t}(rest % {ext[k]})", f"rest = {t}(rest // {ext[k]})"]
        split.append(f"{h.index_var(0)} = rest")

    def thread(axis: str) -> list[str]:
        return [
            f"    t{axis} = {t}({t}(cuda.threadIdx.{axis}) + {t}(cuda.blockIdx.{axis})"
            f" * {t}(cuda.blockDim.{axis}))",
            f"    s{axis} = {t}({t}(cuda.blockDim.{axis}) * {t}(cuda.gridDim.{axis}))",
        ]

    i8 = " " * 8
    lines = [
        f"def {name}({', '.join(p.name for p in params)}):",
        *thread("x"),
        *thread("y"),
        *thread("z"),
        f"    nplanes = {t}({nplanes})",
        f"    nrows = {t}({nrows})",
        f"    nlast = {t}({nlast})",
        "    plane = tz",
        "    while plane < nplanes:",
        *(i8 + s for s in split),
        f"        {row} = ty",
        f"        while {row} < nrows:",
        f"            lrow = {t}(plane * nrows + {row})",
        f"            {col} = tx",
        f"            while {col} < nlast:",
        f"                {h.LINEAR} = {t}(lrow * nlast + {col})",
        f"                {BODY_MARKER}",
        f"                {col} = {t}({col} + sx)",
        f"            {row} = {t}({row} + sy)",
        f"        plane = {t}(plane + sz)",
    ]
    return "\n".join(lines) + "\n"


def _tiled_skeleton(name: str, params: list[Param], fn: Function, tile: int, bits: int) -> str:
    """The tile loop of a staged kernel (rank 2): one ``tile`` x ``tile`` block per tile
    of the index space, walked by a block-stride loop that every thread of the block runs
    alike (the body has barriers). A thread past the edge works on the clamped element, so
    its reads are ones a real element makes, and does not store (``INSIDE``).

    A blocked kernel (``offload.opt.jam``) covers ``tile * f`` elements per tile along an
    axis blocked by ``f``: copy ``c`` of the thread at lane ``l`` is element
    ``l + c * tile`` of the tile (neighbouring threads, neighbouring elements), each copy's
    index clamped on its own, with its own inside flag."""
    t = f"np.int{bits}"
    e0, e1 = h.extent_param(0), h.extent_param(1)
    f0, f1 = fn.blocking or (1, 1)
    s0, s1 = tile * f0, tile * f1
    shared = [
        f"    {h.tile_array(slot)} = cuda.shared.array(({tile}, {tile + 1}), np.{st.dtype.name})"
        for slot, st in tile_slots(fn).items()
    ]
    i8 = " " * 8
    lines = [
        f"def {name}({', '.join(p.name for p in params)}):",
        f"    {h.TILE_LANES[0]} = {t}(cuda.threadIdx.y)",
        f"    {h.TILE_LANES[1]} = {t}(cuda.threadIdx.x)",
        *shared,
        f"    olte0 = np.int64({e0})",
        f"    olte1 = np.int64({e1})",
        f"    olntx = (olte1 + np.int64({s1 - 1})) // np.int64({s1})",
        f"    olnt = (olte0 + np.int64({s0 - 1})) // np.int64({s0}) * olntx",
        "    oltile = np.int64(cuda.blockIdx.x)",
        "    while oltile < olnt:",
        f"{i8}olri = oltile // olntx * np.int64({s0}) + np.int64(cuda.threadIdx.y)",
        f"{i8}olrj = oltile % olntx * np.int64({s1}) + np.int64(cuda.threadIdx.x)",
    ]
    if fn.blocking:
        for axis, (f, at) in enumerate(((f0, "olri"), (f1, "olrj"))):
            for c in range(f):
                el = f"{at} + np.int64({c * tile})" if c else at
                lines += [
                    f"{i8}{h.copy_inside(axis, c)} = {el} < olte{axis}",
                    f"{i8}{h.copy_index_var(axis, c)} = {t}(min({el}, olte{axis} - np.int64(1)))",
                ]
    else:
        lines += [
            f"{i8}{h.INSIDE} = olri < olte0 and olrj < olte1",
            f"{i8}{h.index_var(0)} = {t}(min(olri, olte0 - np.int64(1)))",
            f"{i8}{h.index_var(1)} = {t}(min(olrj, olte1 - np.int64(1)))",
            f"{i8}{h.LINEAR} = {t}({h.index_var(0)} * {e1} + {h.index_var(1)})",
        ]
    lines += [f"{i8}{BODY_MARKER}", f"{i8}oltile = oltile + np.int64(cuda.gridDim.x)"]
    return "\n".join(lines) + "\n"


def _walk_skeleton(name: str, params: list[Param], fn: Function, bits: int) -> str:
    """The thread mapping of a walking kernel (``offload.ptx.passes.walk``, rank 2 or 3):
    the grid's x dimension walks the last axis, the next dimension groups of ``f`` indices
    of axis 0 (rank 3: y walks axis 1 and z the groups); copy ``c`` of a thread is index
    ``r + c`` of axis 0, ``r = min(group * f, n0 - f)``, so every copy is inside the space
    (the launch guard makes ``n0 >= f``; the last group overlaps the one before it and
    stores the same values again)."""
    t = f"np.int{bits}"
    f0 = fn.blocking[0]
    rank = fn.rank
    assert rank in (2, 3) and fn.blocking[1:] == (1,) * (rank - 1), "a walk blocks axis 0"
    ext = [h.extent_param(k) for k in range(rank)]
    idx = [h.index_var(k) for k in range(rank)]
    groups = "z" if rank == 3 else "y"

    def thread(axis: str) -> list[str]:
        return [
            f"    t{axis} = {t}({t}(cuda.threadIdx.{axis}) + {t}(cuda.blockIdx.{axis})"
            f" * {t}(cuda.blockDim.{axis}))",
            f"    s{axis} = {t}({t}(cuda.blockDim.{axis}) * {t}(cuda.gridDim.{axis}))",
        ]

    lines = [
        f"def {name}({', '.join(p.name for p in params)}):",
        *thread("x"),
        *thread(groups),
        *(thread("y") if rank == 3 else []),
        f"    n0 = {t}({ext[0]})",
        f"    ngroups = {t}((n0 + {t}({f0 - 1})) // {t}({f0}))",
        f"    group = t{groups}",
        "    while group < ngroups:",
        f"        {idx[0]} = {t}(min({t}(group * {t}({f0})), {t}(n0 - {t}({f0}))))",
        *(f"        {h.copy_index_var(0, c)} = {t}({idx[0]} + {t}({c}))" for c in range(1, f0)),
    ]
    pad = "        "
    linear = idx[0]
    for axis, dim in zip(range(1, rank), ("y", "x")[3 - rank :], strict=True):
        linear = f"{t}({linear} * {t}({ext[axis]}) + {idx[axis]})"
        lines += [f"{pad}{idx[axis]} = t{dim}", f"{pad}while {idx[axis]} < {t}({ext[axis]}):"]
        pad += "    "
    lines += [f"{pad}{h.LINEAR} = {linear}", f"{pad}{BODY_MARKER}"]
    for axis, dim in reversed(list(zip(range(1, rank), ("y", "x")[3 - rank :], strict=True))):
        lines.append(f"{pad}{idx[axis]} = {t}({idx[axis]} + s{dim})")
        pad = pad[:-4]
    lines.append(f"        group = {t}(group + s{groups})")
    return "\n".join(lines) + "\n"


def _line_skeleton(name: str, params: list[Param], fn: Function, line: int, bits: int) -> str:
    """The line loop of a staged rank-1 kernel: one block of ``line`` threads per line of
    the index space, walked by a block-stride loop that every thread runs alike; a thread
    past the edge works on the clamped element and does not store (as in a tile). A window
    slot holds ``2 * line`` elements (``offload.opt.stage``)."""
    t = f"np.int{bits}"
    windows = window_slots(fn)
    shared = [
        f"    {h.tile_array(slot)} = cuda.shared.array("
        f"{2 * line if slot in windows else line}, np.{st.dtype.name})"
        for slot, st in tile_slots(fn).items()
    ]
    i8 = " " * 8
    lines = [
        f"def {name}({', '.join(p.name for p in params)}):",
        f"    {h.TILE_LANES[1]} = {t}(cuda.threadIdx.x)",
        *shared,
        f"    olte0 = np.int64({h.extent_param(0)})",
        f"    olnt = (olte0 + np.int64({line - 1})) // np.int64({line})",
        "    oltile = np.int64(cuda.blockIdx.x)",
        "    while oltile < olnt:",
        f"{i8}{h.ORIGIN} = oltile * np.int64({line})",
        f"{i8}olri = {h.ORIGIN} + np.int64(cuda.threadIdx.x)",
        f"{i8}{h.WINDOW} = min(np.int64({line}), olte0 - {h.ORIGIN}) + np.int64({line - 1})",
        f"{i8}{h.INSIDE} = olri < olte0",
        f"{i8}{h.index_var(0)} = {t}(min(olri, olte0 - np.int64(1)))",
        f"{i8}{h.LINEAR} = {h.index_var(0)}",
        f"{i8}{BODY_MARKER}",
        f"{i8}oltile = oltile + np.int64(cuda.gridDim.x)",
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
    fn: Function,
    *,
    bounds_check: bool = False,
    emit_body: EmitBody | None = None,
    index_bits: int = 64,
    unit_last: bool = False,
) -> KernelSource:
    """The kernel for optimised IR ``fn`` (``emit_body`` defaults to the shared emitter);
    with ``index_bits=32``, ``fn`` should be the output of ``offload.opt.narrow``; with
    ``unit_last``, loads take every captured array's last-axis stride to be 1."""
    if index_bits not in (32, 64):
        raise ValueError(f"index_bits must be 32 or 64, not {index_bits}")
    emit = emit_body or structure.emit_body
    params = kernel_params(fn, bounds_check)
    name = kernel_name(fn)
    tile = tile_of(fn)
    if fn.blocking and tile is None:  # a walking kernel (``offload.ptx.passes.walk``)
        if fn.rank not in (2, 3) or any(f != 1 for f in fn.blocking[1:]):
            raise ValueError("an untiled blocked kernel must walk axis 0 of a rank-2 or 3 space")
        tree = ast.parse(_walk_skeleton(name, params, fn, index_bits))
    elif tile is not None and fn.rank == 1:
        tree = ast.parse(_line_skeleton(name, params, fn, tile, index_bits))
    elif tile is not None:
        tree = ast.parse(_tiled_skeleton(name, params, fn, tile, index_bits))
    else:
        tree = ast.parse(_skeleton(name, params, fn.rank, index_bits))
    body = emit(fn, h.PointerHooks(fn, bounds_check, index_bits, unit_last))
    tree = _Splice(body).visit(tree)
    _add_constants(tree, fn)
    ast.fix_missing_locations(tree)
    source = _unparse(tree)
    return KernelSource(
        name,
        source,
        tuple(params),
        fn.rank,
        len(fn.result_types),
        bounds_check,
        index_bits,
        tile,
        fn.blocking,
        unit_last,
    )


def _add_constants(tree: ast.Module, fn: Function) -> None:
    """Give the kernel the contents of its constant captures (``Capture.value``): a
    module-level NumPy array each (bool as uint8, as the pointers carry it), bound in the
    constant bank at the kernel's start, where NVVM folds the reads at constant offsets."""
    kernel = tree.body[0]
    assert isinstance(kernel, ast.FunctionDef)
    defs: list[ast.stmt] = []
    binds: list[ast.stmt] = []
    for k, cap in enumerate(fn.captures):
        if cap.value is None:
            continue
        dtype = "uint8" if cap.value.dtype.kind == "b" else cap.value.dtype.name
        data = f'np.frombuffer(bytes.fromhex("{cap.value.data.hex()}"), dtype=np.{dtype})'
        defs.append(ast.parse(f"{h.const_global(k)} = {data}").body[0])
        binds.append(
            ast.parse(f"{h.const_array(k)} = cuda.const.array_like({h.const_global(k)})").body[0]
        )
    tree.body[:0] = defs
    kernel.body[:0] = binds


def _unparse(tree: ast.Module) -> str:
    """Source text with the emitter's ``# offload: file:line`` comments."""
    return print_source(tree)
