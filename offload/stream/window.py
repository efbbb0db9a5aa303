"""Running an element function over one block of its index space, on windows of its inputs.

Streaming (``offload.stream``) and Dask (``offload.dask``) both compute a result block by
block: the block ``[lo_0, lo_0 + n_0) x [lo_1, lo_1 + n_1) ...`` of the result, with each
captured array cut to the part the block reads (its *read window*, halo included). Both use
the two pieces here:

* ``windowed(fn)`` rewrites the optimised IR once so that one kernel serves every block:
  index parameter ``k`` becomes ``i_k + offset_k`` (the element function sees global
  indices), a load ``a[x, y]`` becomes ``a[x - base_a0, y - base_a1]`` (the kernel gets the
  window, whose element ``[0, 0]`` is ``a[base_a0, base_a1]``), and ``a.shape[d]`` becomes
  the whole array's extent. The offsets, bases and extents are new scalar captures, so the
  rewritten IR (and its compiled kernel) is the same for every block.
* ``ReadWindows(fn)`` finds each captured array's read window for a block, from the
  function's index expressions: offload's range analysis (``offload.analysis.ranges``) runs
  over a probe copy of the function whose index parameters are confined to the block and
  whose ``shape`` reads are the arrays' real extents. The windows are sound (every read of
  the block falls inside them), so the block's values are the unblocked ones, bit for bit.
  Where a read is not bounded by the block's indices (``a[b[i]]``, a loop over a whole
  axis), its window is the whole axis.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.analysis.ranges import RangeFacts
from offload.diagnostics import Span
from offload.ir.clone import clone_function
from offload.ir.core import Capture, Function, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import INDEX, ArrayType, ScalarType
from offload.opt.util import replace_uses

Window = tuple[tuple[int, int], ...]
"""Per axis of a captured array, the half-open interval ``[start, stop)`` a block reads."""

Block = tuple[tuple[int, int], ...]
"""Per axis of the result, the half-open interval ``[start, stop)`` of one block."""


@dataclass(frozen=True)
class WindowedFunction:
    """``windowed``'s result: the rewritten IR and where its new captures are."""

    fn: Function
    """The IR with ``offset``/``base``/``extent`` captures appended after the originals."""
    n_original: int
    """How many captures the original function had (they keep their positions)."""
    arrays: tuple[int, ...]
    """Positions of the original captures that are arrays, in order."""

    def values(
        self,
        originals: Sequence[Any],
        block: Block,
        windows: dict[int, Window],
        extents: dict[int, tuple[int, ...]],
    ) -> list[Any]:
        """The captured values of the rewritten function for one block: ``originals`` with
        each array replaced by the caller (already cut to its window), then the block's
        offsets, then each array's window start and whole extent per axis."""
        out = list(originals)
        out += [lo for lo, _ in block]
        for k in self.arrays:
            out += [start for start, _ in windows[k]]
            out += list(extents[k])
        return out


def windowed(fn: Function) -> WindowedFunction:
    """``fn`` (optimised IR, not register-blocked) rewritten to compute one block on
    windows of its captured arrays (see the module docstring); ``fn`` is not changed."""
    if fn.blocking:
        raise ValueError("windowed() takes IR before register blocking")
    out = clone_function(fn)
    entry = out.entry
    n_original = len(out.captures)
    arrays = tuple(k for k, c in enumerate(out.captures) if isinstance(c.type, ArrayType))
    # Contents a kernel is specialised on are the whole array's, not a window's.
    out.captures = [Capture(c.name, c.type) for c in out.captures]

    def scalar(name: str) -> Value:
        value = Value(INDEX, name.replace(".", "_"))
        entry.args.append(value)
        out.captures.append(Capture(name, INDEX))
        return value

    offsets = [scalar(f"offset.{k}") for k in range(out.n_index)]
    params = out.capture_params
    bases: dict[Value, list[Value]] = {}
    extents: dict[Value, list[Value]] = {}
    for k in arrays:
        t = out.captures[k].type
        assert isinstance(t, ArrayType)
        name = out.captures[k].name
        bases[params[k]] = [scalar(f"{name}.base.{d}") for d in range(t.ndim)]
        extents[params[k]] = [scalar(f"{name}.extent.{d}") for d in range(t.ndim)]

    mapping: dict[Value, Value] = {}
    shifted: list[Op] = []
    for index, offset in zip(out.index_params, offsets, strict=True):
        g = Value(INDEX, index.hint)
        shifted.append(Op(Opcode.ADD, [index, offset], g))
        mapping[index] = g
    for block in out.blocks:
        ops: list[Op] = []
        for op in block.ops:
            if op.opcode is Opcode.SHAPE and op.operands[0] in extents:
                mapping[op.result] = extents[op.operands[0]][op.attrs["axis"]]
                continue
            if op.opcode is Opcode.LOAD and op.operands[0] in bases:
                array, *indices = op.operands
                local: list[Value] = []
                for x, base in zip(indices, bases[array], strict=True):
                    d = Value(INDEX, x.hint)
                    ops.append(Op(Opcode.SUB, [x, base], d, span=op.span))
                    local.append(d)
                op.operands = [array, *local]
            ops.append(op)
        block.ops = ops
    replace_uses(out, mapping)
    for op, index in zip(shifted, out.index_params, strict=True):
        op.operands[0] = index  # (replace_uses turned it into the shifted value)
    entry.ops = shifted + entry.ops
    return WindowedFunction(out, n_original, arrays)


@dataclass(frozen=True)
class Unbounded:
    """A captured array read at indices the block does not bound (whole-axis windows)."""

    capture: int
    axis: int
    span: Span | None


class ReadWindows:
    """The read window of every captured array of ``fn`` for any block of its index space.

    ``fn`` is optimised IR; ``extents[k]`` is the shape of captured array ``k``. Each call of
    ``of`` runs the range analysis once over a probe copy of ``fn`` (a few milliseconds):
    the probe's index parameter ``k`` is ``lo_k + min(p_k, n_k - 1)`` with the block's
    constants, and its ``shape`` reads are constants. ``scalars`` (capture position ->
    value) are the captured integers of the call the windows are for: the probe reads them
    as constants (``x[min(i + 1, n - 1)]`` with a captured ``n``, a stencil's clamp at the
    array's captured extent), so its windows hold for those values only."""

    def __init__(
        self,
        fn: Function,
        extents: dict[int, tuple[int, ...]],
        scalars: dict[int, int] | None = None,
    ) -> None:
        self.extents = extents
        probe = clone_function(fn)
        self._probe = probe
        params = probe.capture_params
        position = {v: k for k, v in enumerate(params)}
        self.names = {k: c.name for k, c in enumerate(fn.captures)}
        """Capture position -> the captured expression (for messages)."""
        self.spans: dict[int, Span | None] = {}
        """Capture position -> where it is first read (errors about it point there)."""
        self._loads: list[tuple[Op, int]] = []
        """Every load of a captured array in the probe, with the capture's position."""
        for op in probe.ops():
            if op.opcode is Opcode.LOAD and op.operands[0] in position:
                self._loads.append((op, position[op.operands[0]]))
                self.spans.setdefault(position[op.operands[0]], op.span)
            elif op.opcode is Opcode.SHAPE and op.operands[0] in position:
                k = position[op.operands[0]]
                extent = extents[k][op.attrs["axis"]]
                op.opcode, op.operands, op.attrs = Opcode.CONST, [], {"value": extent}
        self._starts: list[Op] = []
        self._lasts: list[Op] = []
        head: list[Op] = []
        mapping: dict[Value, Value] = {}
        for index in probe.index_params:
            start = Op(Opcode.CONST, [], Value(INDEX), {"value": 0})
            last = Op(Opcode.CONST, [], Value(INDEX), {"value": 0})
            clamped = Op(Opcode.MIN, [index, last.result], Value(INDEX))
            shifted = Op(Opcode.ADD, [start.result, clamped.result], Value(INDEX, index.hint))
            head += [start, last, clamped, shifted]
            mapping[index] = shifted.result
            self._starts.append(start)
            self._lasts.append(last)
        fixed: list[Op] = []
        for k, value in (scalars or {}).items():
            param = params[k]
            if isinstance(param.type, ScalarType) and param.type.is_int:
                fixed.append(Op(Opcode.CONST, [], Value(param.type), {"value": int(value)}))
                mapping[param] = fixed[-1].result
        replace_uses(probe, mapping)
        for op, index in zip(head[2::4], probe.index_params, strict=True):
            op.operands[0] = index
        probe.entry.ops = head + fixed + probe.entry.ops
        self._blocks = {id(op): b for b in probe.blocks for op in b.ops}

    def of(self, block: Block) -> tuple[dict[int, Window], list[Unbounded]]:
        """Each captured array's window for ``block`` (capture position -> window), and
        the reads whose window on some axis is the whole axis only because the analysis
        could not bound them (``Unbounded``; a block covering a whole axis does not count).
        An array that is never read gets a window of one element (or none if empty)."""
        for (lo, hi), start, last in zip(block, self._starts, self._lasts, strict=True):
            start.attrs["value"] = lo
            last.attrs["value"] = max(hi - lo - 1, 0)
        facts = RangeFacts(self._probe)
        hull: dict[int, list[tuple[int, int] | None]] = {
            k: [None] * len(e) for k, e in self.extents.items()
        }
        unbounded: list[Unbounded] = []
        for op, k in self._loads:
            at = self._blocks[id(op)]
            for axis, x in enumerate(op.operands[1:]):
                n = self.extents[k][axis]
                r = facts.range_of(x, at)
                lo, hi = (0, n - 1) if r is None else (max(r.lo, 0), min(r.hi, n - 1))
                if r is None or ((r.lo < 0 or r.hi > n - 1) and (lo, hi) == (0, n - 1)):
                    unbounded.append(Unbounded(k, axis, op.span))
                if lo > hi:
                    continue  # (a read the analysis shows never happens in this block)
                cur = hull[k][axis]
                hull[k][axis] = (lo, hi) if cur is None else (min(cur[0], lo), max(cur[1], hi))
        windows: dict[int, Window] = {}
        for k, axes in hull.items():
            windows[k] = tuple(
                (0, min(n, 1)) if h is None else (h[0], h[1] + 1)
                for h, n in zip(axes, self.extents[k], strict=True)
            )
        return windows, unbounded


def integer_scalars(values: Sequence[Any]) -> dict[int, int]:
    """Capture position -> value of the captured integers (not bools) among ``values``:
    ``ReadWindows``'s ``scalars``."""
    return {
        k: int(v)
        for k, v in enumerate(values)
        if isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
    }


def window_bytes(window: Window, itemsize: int) -> int:
    """Bytes of a window of elements of ``itemsize`` bytes."""
    return itemsize * math.prod(stop - start for start, stop in window)


def cut(array: Any, window: Window) -> Any:
    """``array`` cut to ``window`` (a view for NumPy, CuPy and Dask arrays)."""
    return array[tuple(slice(start, stop) for start, stop in window)]


class GridWindows:
    """The read windows of every block of a grid, from one analysis per *band*.

    ``bounds[a]`` are the block boundaries on axis ``a`` (``0 = b_0 < b_1 < ... = n_a``).
    A band is every block sharing one interval on one axis (the rest of the result whole on
    the other axes); its windows hold every read of any block in it, so a block's windows
    are the intersection of its bands' windows: sound, exact for reads such as
    ``x[i - 1, j + 1]`` (each capture axis follows one result axis), and a sum over the
    axes of analyses instead of one per block (Dask grids have thousands of blocks)."""

    def __init__(self, reads: ReadWindows, bounds: Sequence[Sequence[int]]) -> None:
        self.reads = reads
        self.bounds = [list(b) for b in bounds]
        whole = [(b[0], b[-1]) for b in self.bounds]
        self._bands: list[list[tuple[dict[int, Window], list[Unbounded]]]] = []
        for axis, cuts in enumerate(self.bounds):
            band: list[tuple[dict[int, Window], list[Unbounded]]] = []
            for lo, hi in itertools.pairwise(cuts):
                block = tuple((lo, hi) if a == axis else w for a, w in enumerate(whole))
                band.append(reads.of(block))
            self._bands.append(band)

    def block(self, index: Sequence[int]) -> Block:
        """The bounds of block ``index`` of the grid."""
        return tuple((b[k], b[k + 1]) for b, k in zip(self.bounds, index, strict=True))

    def of(self, index: Sequence[int]) -> tuple[dict[int, Window], list[Unbounded]]:
        """Block ``index``'s windows (capture -> window) and its unbounded reads."""
        parts = [self._bands[a][k] for a, k in enumerate(index)]
        windows: dict[int, Window] = {}
        for k in parts[0][0]:
            axes = zip(*(p[0][k] for p in parts), strict=True)
            cut_ = [(max(s for s, _ in ws), min(e for _, e in ws)) for ws in axes]
            if any(s >= e for s, e in cut_):  # read in no block of both bands: never read
                cut_ = [(0, min(n, 1)) for n in self.reads.extents[k]]
            windows[k] = tuple(cut_)
        unbounded = [u for _, found in parts for u in found]
        return windows, unbounded
