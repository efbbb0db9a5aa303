"""Streamed scans: ``compute_g`` of ``scanl``, ``scanl1``, ``scanr``, ``scanr1`` and the
``_total`` forms over host arrays larger than the device memory budget, with the bits of
the unstreamed call.

The scan's source -- its *producer*, an element tree over host arrays or a host array --
is computed in chunks of its leading axis by the streamed windowed kernels (as a fold's,
``offload.stream.collectives``), and each chunk is scanned on the device by the scan's
own skeleton kernels (``offload.acc.scan``), its result copied back to the host chunk by
chunk (the result may exceed the budget too).

* Rank >= 2: the rows are independent and the chunks cut whole rows, so each chunk is
  an ordinary scan of its rows (``Scan.materialise``). The unstreamed tree of a row
  depends on the row's length only (``offload.acc.scan_job.chunk_size``), so a chunk's rows
  get their unstreamed bits. The segmented scans stream this way too.
* Rank 1, the one pass (every GPU scan but a ``cross_target`` float one: ``ScanJob.run``):
  the unstreamed scan is the one-pass kernel over the *virtual sequence* ``v`` (``z``
  first where there is one; reversed for a right scan) in tiles, each tile's prefix the
  left fold of the tiles' totals before it. The producer's chunks are cut at tile
  boundaries of ``v`` (``Cut.phase``, as below with ``C`` a tile) and scanned in ``v``'s
  order (a right scan's last chunk first), each by the same kernel continued from the
  previous chunk's last prefix (``ScanJob.one_pass_row``'s seed; on the GPU the next
  chunk's stream waits for the previous kernel's event): the same tiles, the same left
  fold, so the unstreamed bits, reading the source once.
* Rank 1, the chunk tree (``cross_target`` floats): the unstreamed GPU scan is a
  reduce-then-scan over ``v`` cut into chunks of ``C`` elements (``GPU_CHUNK``): kernel
  ``totals`` folds each chunk left to right, the totals are scanned by the same tree
  (``ScanJob.carries``), and kernel ``rescan`` folds each chunk again from the previous
  chunk's carry. A running value carried from chunk to chunk would associate differently
  (a float ``+`` would change bits), so this tree is reproduced instead, in two passes
  over the source:

  1. the producer's chunks are cut at the tree's chunk boundaries (``Cut.phase``:
     positions ``k`` with ``k + has_z`` a multiple of ``C``, mirrored for a right scan),
     and kernel ``totals`` over each streamed chunk writes its tree chunks' totals into
     the one device array of all the totals (``L / C`` values, kept out of the budget);
  2. the totals' carries are computed by the unstreamed tree's own code
     (``ScanJob.carries``); then the producer is streamed again, each chunk widened by
     the ``C`` elements of the tree chunk before it (``Cut.overlap``), and kernel
     ``rescan`` runs over the widened chunk with the carries from that tree chunk's: the
     first tree chunk is scanned without a carry (its results, wrong, are dropped), and
     every later one starts from its global carry -- the unstreamed call's combines in
     its order. The widened chunk reads only real elements, so the combine sees no
     operand it would not see unstreamed.

  Computing the producer twice costs a second pass over its inputs (a scan reads its
  source twice on the device anyway). ``scanl1_seg`` of a vector is the same tree over
  (head flag, element) pairs: the flags (bytes, from the segment lengths, on the host)
  are cut and copied with each chunk (so too in the one pass).
* ``scanl_seg`` of a vector: its virtual sequence puts ``z`` before each segment, which
  shifts it against the source by the number of segments so far, so no cut of the
  source's axis keeps the tree's boundaries. The sequence is made on the host instead
  (``with_neutrals``: the producer computed there, ``z`` inserted) and streamed as the
  ``scanl1_seg`` of segments one longer, which is the same sequence, tiles and combines:
  the unstreamed bits, for a host copy of the source. Where ``z``'s type is not the
  source's (the combine would see other operand types) it is not streamed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload.acc.nodes import Leaf, as_source
from offload.acc.scan import Part, Scan, scanl1_seg
from offload.acc.scan_job import GPU_CHUNK, ScanJob, chunk_size, onepass_block
from offload.acc.skeletons.build import captured, cdiv, xp_for
from offload.acc.skeletons.operands import (
    check_determinism,
    combine_for,
    neutral,
    source_dtypes,
    target_of,
)
from offload.acc.skeletons.segments import segment_layout
from offload.acc.values import from_items, shape_of
from offload.config import config
from offload.frontend.nodes import ArrayNode
from offload.stream import calls
from offload.stream import compiled as cache
from offload.stream.collectives import (
    cast,
    device_context,
    producer_of,
    to_host,
    unsupported,
)
from offload.stream.device import stream_backend_name
from offload.stream.plan import Plan
from offload.stream.window import Block

WORK = 3
"""A chunk's device buffers beside its producer's results, in result bytes: the rescan's
output (and, rank >= 2, the skeleton's working copies)."""
Dt = np.dtype[Any]
TOTALS_RESERVE = 8
"""Device bytes kept out of the budget per tree chunk and per result byte of an element:
the totals, their carries and the carries' tree."""


@dataclass(frozen=True)
class StreamedScan:
    """A scan streaming covers (``recognise``)."""

    scan: Scan
    producer: ArrayNode
    """The element tree whose leading axis the chunks cut (a host array as a ``Leaf``)."""
    part: int | None
    """The item of a ``_total`` scan's pair the root is (``Part``), else ``None``."""

    @property
    def vector(self) -> bool:
        """A scan of a vector: streamed through the tree of its one row (rank 1)."""
        return len(shape_of(self.producer)) == 1

    @property
    def has_z(self) -> int:
        return int(self.scan.z is not None)

    def length(self) -> int:
        """The virtual sequence's length (rank 1)."""
        return shape_of(self.producer)[0] + self.has_z

    def chunk(self) -> int:
        """The unstreamed tree's chunk on the streaming backend."""
        return chunk_size(stream_backend_name(), self.length(), config.determinism)

    def cut(self) -> calls.Cut:
        """How the producer's leading axis is cut (module docstring)."""
        dts = source_dtypes(self.scan.a)
        item = sum(dt.itemsize for dt in dts)
        if not self.vector:
            return calls.Cut(work=WORK * item)
        tile, n = self.tile(), shape_of(self.producer)[0]
        c = tile or self.chunk()
        phase = (n + self.has_z) % c if self.scan.right else (-self.has_z) % c
        if tile is not None:  # (the one pass: whole tiles a chunk, nothing widened)
            return calls.Cut(c, c, 0, phase, (0, 0), WORK * item)
        overlap = (0, c) if self.scan.right else (c, 0)
        reserve = TOTALS_RESERVE * item * (cdiv(self.length(), c) + 1)
        return calls.Cut(c, c, reserve, phase, overlap, WORK * item)

    def dtypes(self) -> tuple[Dt, ...]:
        """The scanned components (``scanl1_seg``: the head flag first)."""
        dts = tuple(source_dtypes(self.scan.a))
        return dts if self.scan.seg is None else (np.dtype(np.uint8), *dts)

    def tile(self) -> int | None:
        """Elements of the unstreamed one-pass scan's tile where a vector's scan takes it
        (``ScanJob.run``), else ``None``."""
        if not self.vector or self.length() <= GPU_CHUNK:
            return None
        tb = onepass_block(stream_backend_name(), config.determinism, self.dtypes())
        return None if tb is None else tb * GPU_CHUNK


def recognise(root: object) -> StreamedScan | None:
    """``root`` as a scan streaming covers; ``None`` where it is no scan (nor an item of a
    ``_total`` scan); ``StreamUnsupported`` for a scan it does not cover, saying why."""
    part: int | None = None
    node = root
    if isinstance(root, Part):
        node, part = root.whole, root.index
    if not isinstance(node, Scan):
        return None
    producer = producer_of(node.a, "the scan's source")
    if node.seg is not None:
        if len(shape_of(producer)) == 1 and node.z is not None:
            source, result = tuple(source_dtypes(node.a)), tuple(np.dtype(d) for d in node.dtypes)
            if source != result:
                raise unsupported(
                    f"it is a {node.name} of a vector whose neutral element's type is not "
                    f"its source's ({_names(result)}, not {_names(source)})"
                )
        if type(node.seg) is not np.ndarray:
            raise unsupported(f"the segment lengths of its {node.name} are not a host array")
    return StreamedScan(node, producer, part)


def _names(dts: Sequence[Dt]) -> str:
    return ", ".join(str(d) for d in dts)


def with_neutrals(ss: StreamedScan) -> StreamedScan:
    """``ss`` itself, or for a ``scanl_seg`` of a vector the ``scanl1_seg`` of its virtual
    sequence (``z`` put before each segment, segments one longer: the sequence the
    unstreamed GPU scan runs over, so the same tiles and bits), made on the host (the
    producer computed there first, streamed, where it is not a host array)."""
    scan = ss.scan
    if scan.seg is None or scan.z is None or not ss.vector:
        return ss
    seg = np.asarray(scan.seg, np.int64)
    got = _host_source(ss.producer)
    zs = from_items(scan.z)
    zs = zs if isinstance(zs, tuple) else (zs,)
    starts = np.concatenate(([0], np.cumsum(seg)[:-1])).astype(np.int64)
    seq = [
        np.insert(x, starts, np.asarray(z).astype(x.dtype)) for x, z in zip(got, zs, strict=True)
    ]
    node = scanl1_seg(scan.f, seq[0] if len(seq) == 1 else tuple(seq), seg + 1)
    found = recognise(node)
    assert found is not None
    return found


def _host_source(producer: ArrayNode) -> list[Any]:
    """The producer's components as host arrays (computed, streamed, where it is not a
    host array)."""
    if isinstance(producer, Leaf) and type(producer.x) is np.ndarray:
        return [producer.x]
    got = calls.run(producer, tuple(shape_of(producer)))
    return list(got) if isinstance(got, tuple) else [got]


def need(ss: StreamedScan) -> int:
    """Device bytes the unstreamed call would take: the producer's host inputs and the
    result."""
    found = cache.entry(ss.producer, len(shape_of(ss.producer)))
    values: list[Any] = found.fetch(ss.producer)
    inputs = sum(int(values[k].nbytes) for k in cache.host_arrays(values))
    item = sum(dt.itemsize for dt in source_dtypes(ss.scan.a))
    return inputs + item * int(np.prod(ss.scan.shape, dtype=np.int64))


def plan(ss: StreamedScan, rows: int | None = None) -> Plan:
    """The chunks the producer of ``ss`` is streamed in (of a ``scanl_seg`` of a vector:
    its virtual sequence, ``with_neutrals``)."""
    ss = with_neutrals(ss)
    shape = shape_of(ss.producer)
    return calls.plan_for(ss.producer, shape, rows=rows, cut=ss.cut())


def run(ss: StreamedScan, dtype: Any = None, rows: int | None = None) -> Any:
    """The streamed scan (module docstring): host NumPy arrays, the unstreamed
    ``compute_g``'s bits."""
    if 0 not in shape_of(ss.producer):
        ss = with_neutrals(ss)
    shape = shape_of(ss.producer)
    ctx = device_context()
    if 0 in shape:  # (nothing to stream: the empty scan as the unstreamed call makes it)
        whole = to_host(ss.scan.materialise(ctx, _empty_sources(ss, shape)))
    else:
        p = calls.prepare(ss.producer, shape, None, rows=rows, cut=ss.cut())
        whole = _vector(ss, p) if ss.vector else _rows(ss, p)
    out = whole if ss.part is None else whole[ss.part]
    return out if dtype is None else cast(out, dtype)


def _empty_sources(ss: StreamedScan, shape: tuple[int, ...]) -> dict[str, Any]:
    parts = [np.empty(shape, dt) for dt in source_dtypes(ss.scan.a)]
    sources: dict[str, Any] = {"a": parts[0] if len(parts) == 1 else tuple(parts)}
    if ss.scan.seg is not None:
        sources["seg"] = ss.scan.seg
    return sources


def _cast(out: Any, dtype: Any) -> Any:
    """``out`` as ``compute_g(..., dtype=)`` casts a collective's result: an element
    kernel over it (streamed: the result may exceed the budget)."""
    if isinstance(out, tuple):
        return calls.run(as_source(out), tuple(out[0].shape), dtype)
    return calls.run(Leaf(out), tuple(out.shape), dtype)


def _pack(arrays: Sequence[Any]) -> Any:
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _rows(ss: StreamedScan, p: calls.Prepared) -> Any:
    """Rank >= 2: each chunk of rows scanned as an ordinary scan, copied back."""
    scan, ctx = ss.scan, device_context()
    dts = source_dtypes(scan.a)
    full = tuple(scan.shape)
    outs = [np.empty(full, dt) for dt in dts]
    totals = [np.empty(full[:-1], dt) for dt in dts] if scan.total else []

    def each(block: Block, results: Sequence[Any]) -> None:
        (lo, hi), *_ = block
        sources: dict[str, Any] = {"a": _pack(results)}
        if scan.seg is not None:
            sources["seg"] = scan.seg
        got = scan.materialise(ctx, sources)
        if scan.total:
            scanned, total = (_components(to_host(g)) for g in got)
            for o, g in zip(totals, total, strict=True):
                o[lo:hi] = g
        else:
            scanned = _components(to_host(got))
        for o, g in zip(outs, scanned, strict=True):
            o[lo:hi] = g

    calls.execute(p, each)
    if scan.total:
        return _pack(outs), _pack(totals)
    return _pack(outs)


def _components(x: Any) -> list[Any]:
    return list(x) if isinstance(x, tuple) else [x]


def _vector(ss: StreamedScan, p: calls.Prepared) -> Any:
    """Rank 1: one pass where the unstreamed call takes the one-pass scan (``_one_pass``),
    else the unstreamed tree in two passes (module docstring)."""
    scan, ctx = ss.scan, device_context()
    target = target_of(ctx)
    dts = source_dtypes(scan.a)
    sf = combine_for(scan.f, dts, f"{scan.name}'s combine function")
    zs = neutral(scan.z, dts, scan.name) if scan.z is not None else [dt.type(0) for dt in dts]
    caps = captured(target, sf.captures(), ctx.backend)
    mode = check_determinism(ctx)
    flags = None
    if scan.seg is None:
        job = ScanJob(target, mode, sf, dts, caps, right=scan.right)
    else:  # (scanl1_seg: a plain scan of (head flag, value) pairs, as Scan._segmented)
        n = shape_of(ss.producer)[0]
        flags = np.zeros(n, np.uint8)
        flags[segment_layout(scan.seg, n, False, scan.name, np).heads] = 1
        job = ScanJob(target, mode, sf, (np.dtype(np.uint8), *dts), caps, segmented=True)
        zs = [np.uint8(0), *zs]
    if ss.tile() is not None:
        return _delivered(ss, _one_pass(ss, p, job, zs, flags)[len(job.dts) - len(dts) :])
    c = chunk_size(target, ss.length(), job.mode)
    module = job.module(job.staged_threads() if c == GPU_CHUNK else None)
    tree = _Tree(ss, target, module, (zs, caps), c, p.plan)
    tree.flags = flags
    nch = cdiv(ss.length(), c)
    tree.totals = [tree.xp.empty(nch, dt) for dt in job.dts]
    calls.execute(p, tree.total_chunk)
    totals = [t.reshape(1, nch) for t in tree.totals]
    tree.carries = [k.reshape(nch) for k in job.carries(module, totals, zs, c)]
    if tree.xp is not np:  # (the pipeline's streams do not wait for the carries' stream)
        tree.xp.cuda.Device().synchronize()
    tree.outs = [np.empty(ss.length(), dt) for dt in job.dts]
    calls.execute(p, tree.rescan_chunk)
    return _delivered(ss, tree.outs[len(job.dts) - len(dts) :])


def _run_of(ss: StreamedScan, lo: int, hi: int) -> tuple[int, int]:
    """The virtual run [start, stop) that source rows [lo, hi) hold (the neutral element
    with them where the run starts the sequence)."""
    hz, n = ss.has_z, shape_of(ss.producer)[0]
    if ss.scan.right:
        start = 0 if hi == n else n + hz - hi
        return start, n + hz - lo
    start = 0 if lo == 0 else lo + hz
    return start, hi + hz


def _put(ss: StreamedScan, run: tuple[int, int], skip: int = 0) -> tuple[slice, slice]:
    """Where a virtual run's results, in result order, go in the whole result (and which
    of them: all but the first ``skip`` of the run)."""
    start, stop = run
    length = stop - start
    if ss.scan.right:  # (result order: the run reversed, its first elements last)
        at = ss.length() - stop
        return slice(0, length - skip), slice(at, at + length - skip)
    return slice(skip, length), slice(start + skip, stop)


def _one_pass(
    ss: StreamedScan, p: calls.Prepared, job: ScanJob, zs: list[Any], flags: Any
) -> list[Any]:
    """Rank 1 in one pass: the chunks hold whole tiles of the unstreamed one-pass scan
    and are scanned in the virtual sequence's order (a right scan's last chunk first),
    each by the one-pass kernel continued from the previous chunk's last prefix -- the
    unstreamed call's left fold of the tiles' totals, so its bits."""
    xp = xp_for(job.target)
    chunks = p.plan.chunks[::-1] if ss.scan.right else p.plan.chunks
    ordered = replace(p, plan=replace(p.plan, chunks=chunks))
    outs = [np.empty(ss.length(), dt) for dt in job.dts]
    last: list[Any] = []  # (the previous chunk's prefix, and its kernel's event)

    def each(block: Block, results: Sequence[Any]) -> None:
        (lo, hi), *_ = block
        run = _run_of(ss, lo, hi)
        xs = list(results) if flags is None else [xp.asarray(flags[lo:hi]), *results]
        hz = ss.has_z if run[0] == 0 else 0
        if len(last) == 2 and last[1] is not None:  # (the chunks' streams differ)
            xp.cuda.get_current_stream().wait_event(last[1])
        seed = last[0] if last else None
        rows = [x.reshape(1, -1) for x in xs]
        got, prefix = job.one_pass_row(rows, zs, hz, run[1] - run[0], seed)
        event = xp.cuda.get_current_stream().record() if xp is not np else None
        last[:] = [prefix, event]
        keep, put = _put(ss, run)
        for o, g in zip(outs, got, strict=True):
            o[put] = to_host(g[0, keep])

    calls.execute(ordered, each)
    return outs


def _delivered(ss: StreamedScan, outs: list[Any]) -> Any:
    """The scan's result from the inclusive scan of its virtual sequence in result order
    (``Scan.materialise``'s shapes: the ``_total`` forms' pair)."""
    n = shape_of(ss.producer)[0]
    if not ss.scan.total:
        return _pack(outs)
    if ss.scan.right:
        return _pack([o[1:] for o in outs]), _pack([o[0] for o in outs])
    return _pack([o[:n] for o in outs]), _pack([o[n] for o in outs])


class _Tree:
    """The two passes of a vector's scan over one chunk of the producer each call
    (``execute.Reduce``s): ``total_chunk`` writes the chunk's tree-chunk totals,
    ``rescan_chunk`` its results, from the carries, back to the host."""

    def __init__(  # noqa: PLR0917  (the tree's facts)
        self,
        ss: StreamedScan,
        target: str,
        module: Any,
        values: tuple[list[Any], list[Any]],
        c: int,
        plan: Plan,
    ) -> None:
        self.ss = ss
        self.xp = xp_for(target)
        self.module = module
        self.zs, self.caps = values
        """The neutral elements (a head flag's first) and the combine's captures."""
        self.flags: Any = None
        """``scanl1_seg``: the head flag of every element (host), scanned with them."""
        self.c = c
        self.n = shape_of(ss.producer)[0]
        self.rev = int(ss.scan.right)
        self.own = _own_blocks(plan, self.n, bool(self.rev))
        """Widened block -> the rows the plan cut it from (its widening taken off)."""
        self.totals: list[Any] = []
        """The totals of every tree chunk (device, one per component)."""
        self.carries: list[Any] = []
        self.outs: list[Any] = []
        """The inclusive scan of the virtual sequence in result order (host)."""

    def run_of(self, lo: int, hi: int) -> tuple[int, int]:
        return _run_of(self.ss, lo, hi)

    def launch(self, name: str, xs: Sequence[Any], run: tuple[int, int], into: list[Any]) -> None:
        """Kernel ``name`` (``totals``: ``into`` the run's totals; ``rescan``: ``into`` its
        carries, then its results) over the virtual ``run`` [start, stop) ``xs`` hold."""
        start, stop = run
        length, items = stop - start, cdiv(stop - start, self.c)
        hz = self.ss.has_z if start == 0 else 0
        i64 = np.int64
        head = (i64(items), i64(length), i64(self.c), i64(hz), i64(self.rev))
        rows = [x.reshape(1, -1) for x in xs]
        self.module.launch(name, items, *head, *rows, *self.zs, *into, *self.caps)

    def components(self, lo: int, hi: int, results: Sequence[Any]) -> list[Any]:
        """What the kernels scan for source rows [lo, hi): their head flags (copied to the
        device) where the scan is segmented, then ``results`` (those rows')."""
        if self.flags is None:
            return list(results)
        return [self.xp.asarray(self.flags[lo:hi]), *results]

    def total_chunk(self, block: Block, results: Sequence[Any]) -> None:
        """Pass 1: the totals of the tree chunks of the block's own rows."""
        (lo, hi), *_ = block
        a, b = self.own[lo, hi]
        start, stop = self.run_of(a, b)
        g0, count = start // self.c, cdiv(stop - start, self.c)
        into = [t[g0 : g0 + count].reshape(1, count) for t in self.totals]
        xs = self.components(a, b, [r[a - lo : b - lo] for r in results])
        self.launch("totals", xs, (start, stop), into)

    def rescan_chunk(self, block: Block, results: Sequence[Any]) -> None:
        """Pass 2: the widened block rescanned from the carries from its first tree
        chunk's; its results but that first tree chunk's (where the run does not start
        the sequence: the widening, scanned without its carry) copied back."""
        (lo, hi), *_ = block
        start, stop = self.run_of(lo, hi)
        length = stop - start
        outs = [self.xp.empty((1, length), o.dtype) for o in self.outs]
        carries = [k[start // self.c :].reshape(1, -1) for k in self.carries]
        self.launch("rescan", self.components(lo, hi, results), (start, stop), [*carries, *outs])
        keep, put = _put(self.ss, (start, stop), self.c if start > 0 else 0)
        for o, d in zip(self.outs, outs, strict=True):
            o[put] = to_host(d[0, keep])


def _own_blocks(plan: Plan, n: int, right: bool) -> dict[tuple[int, int], tuple[int, int]]:
    """Each widened block of ``plan`` -> its own rows: from the previous block's end (a
    left scan: widened before) or to the next block's start (a right scan)."""
    blocks = [c.block[0] for c in plan.chunks]
    if right:
        ends = [lo for lo, _ in blocks[1:]] + [n]
        return {(lo, hi): (lo, end) for (lo, hi), end in zip(blocks, ends, strict=True)}
    starts = [0] + [hi for _, hi in blocks[:-1]]
    return {(lo, hi): (start, hi) for (lo, hi), start in zip(blocks, starts, strict=True)}
