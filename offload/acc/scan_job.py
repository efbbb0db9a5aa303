"""How a scan runs on a target: the chunk tree of ``scan_src`` (kernels ``totals`` and
``rescan``, level by level, the GPU's one-block ``tail``, ``compute_p``'s one-pass
``fused``) or, on the GPU, the one-pass scan of ``scan_onepass_src``; the chunk size of
the tree for a target, a row length and a mode (``chunk_size``). ``offload.acc.scan``
holds the nodes and the determinism rules (its docstring); ``offload.stream.scans`` and
``offload.acc.filter`` run the same jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from offload.acc.combine import ScalarFunction
from offload.acc.skeletons import scan_onepass_src
from offload.acc.skeletons.build import (
    GPU_TARGETS,
    SIM_MAX_BLOCKS,
    SIM_THREADS,
    THREADS,
    Module,
    Remembered,
    cdiv,
    compile_module,
    xp_for,
)
from offload.acc.skeletons.scan_gpu_src import (
    TAIL_MAX,
    staged_scan_module,
    staged_threads,
    tail_kernel,
)
from offload.acc.skeletons.scan_onepass_src import onepass_module, pad
from offload.acc.skeletons.scan_src import combine_wrapper, fused_kernel, scan_module
from offload.acc.skeletons.workspace import discard, kept
from offload.cpu.threads import ThreadChoice, now
from offload.diagnostics import OffloadError

GPU_CHUNK = 32
"""Elements per chunk (per GPU thread) of the GPU's chunk tree, and the CPU's under
``cross_target``."""
ONEPASS_PER_SM = 4
"""Blocks of the one-pass scan a multiprocessor should hold at once (``launch_bounds``: at
most 64 registers a thread for 256 threads); the look-back's code alone left room for
two (H200, Nsight Compute: 25% occupancy)."""
CPU_CHUNK = 8192
"""Elements per parallel task of ``compute_p``'s chunk tree (``deterministic``)."""
CPU_SEQUENTIAL_BELOW = 1 << 20
"""A row shorter than this is one chunk on ``compute_p`` too (``compute_s``'s scan and
bits): the tree reads the row twice, so on two cores it only ties one pass, and a
loaded machine made it lose (2-core VM, scanl1 (+) float32, compute_s / compute_p tree /
one chunk: 1e5 0.148 / 0.241 / 0.133 ms; 1e6 under load 1.13 / 1.78 / 0.91 ms). From
2^20 the tree is kept for machines with many cores."""

Dt = np.dtype[Any]


def onepass_block(target: str, mode: str, dts: tuple[Dt, ...]) -> int | None:
    """The block size of the one-pass scan (``scan_onepass_src``) of components ``dts``
    where it applies, else ``None``: on the GPU and its simulator, in every mode but
    ``cross_target`` (whose float bits are the chunk tree's, as on the CPU), and there for
    components that are all integers (any grouping of an associative combine gives the
    same bits)."""
    if target not in GPU_TARGETS:
        return None
    if mode == "cross_target" and any(dt.kind not in "iu" for dt in dts):
        return None
    most = SIM_THREADS if target == "gpu-sim" else THREADS
    # (the tile's staging, as the staged kernels', plus the chunk totals)
    return staged_threads(dts, GPU_CHUNK + 2, most)


def chunk_size(target: str, length: int, determinism: str) -> int:
    """The chunk of the scan tree of a row of ``length``: a function of the length, the
    target kind and the mode only."""
    if target in GPU_TARGETS or determinism == "cross_target":
        return GPU_CHUNK
    if target == "cpu-seq" or length < CPU_SEQUENTIAL_BELOW:
        return max(length, 1)
    return CPU_CHUNK


_MODULES = Remembered()
"""Compiled scan modules (``ScanJob.module``)."""
_ONEPASS = Remembered()
"""Compiled one-pass scan modules (``ScanJob._one_pass``)."""
_TAIL_LEVELS = Remembered()
"""The tail kernel's level tables (``_tail_levels``)."""


@dataclass(frozen=True)
class ScanJob:
    """One inclusive scan of virtual rows (``scan_src``): what every level shares."""

    target: str
    mode: str
    combine: ScalarFunction
    dts: tuple[Dt, ...]
    """The scanned components' dtypes (the head flag first when ``segmented``)."""
    caps: list[Any]
    """The combine's captured values."""
    right: bool = False
    segmented: bool = False
    frozen: dict[tuple[int, ...], Any] | None = field(default=None, compare=False, repr=False)
    """Where given (a job the replay lane keeps, with its neutral elements: ``Scan.runner``),
    the GPU's one-pass launch per (threads, rows, length, has_z), frozen after its first
    launch (``Module.freeze``): later launches give the new arrays' addresses alone."""

    def run(
        self,
        xs: list[Any],
        zs: list[Any],
        has_z: int,
        rows: int,
        length: int,
        *,
        outs: list[Any] | None = None,
    ) -> list[Any]:
        """The inclusive scans of the ``rows`` virtual rows of ``length``: arrays
        (rows, length), one per component -- written into ``outs`` where given."""
        if outs is None:
            xp = xp_for(self.target)
            outs = [xp.empty((rows, length), dt) for dt in self.dts]
        if rows == 0 or length == 0:
            return outs
        chunk = chunk_size(self.target, length, self.mode)
        one = self.onepass_threads() if chunk == GPU_CHUNK and length > chunk else None
        if one is not None:
            self._one_pass(one, (xs, zs, outs), has_z, rows, length)
            return outs
        tb = self.staged_threads() if chunk == GPU_CHUNK else None
        module = self.module(tb)
        self._level(module, (xs, zs, outs), (has_z, int(self.right)), (rows, length, chunk))
        return outs

    def module(self, tb: int | None) -> Module:
        """The compiled skeleton module (``tb``: ``staged_threads``), remembered by what its
        text depends on -- the combine's source text (made once per lowering, shared by
        every closure it serves) among it: a warm call makes no module text."""
        combine = self.combine.source(gpu=self.target in GPU_TARGETS)
        key = (self.target, combine, self.dts, len(self.caps), self.right, self.segmented, tb)
        module: Module = _MODULES.get(key, lambda: self._compile(tb))
        return module

    def _compile(self, tb: int | None) -> Module:
        src = self.source(tb)
        kernels = ["totals", "rescan"]
        if self.target in GPU_TARGETS:
            src += "\n\n" + tail_kernel(len(self.dts), len(self.caps), GPU_CHUNK) + "\n"
            kernels.append("tail")
        if self.target == "cpu-par":
            src += "\n\n" + fused_kernel(len(self.dts), len(self.caps)) + "\n"
            kernels.append("fused")
        return compile_module(self.target, src, ["ol_comb", "cmb"], kernels, {}, threads=tb)

    def onepass_threads(self) -> int | None:
        """The block size of the one-pass scan (``scan_onepass_src``) where it applies, else
        ``None`` (``onepass_block``)."""
        return onepass_block(self.target, self.mode, self.dts)

    def onepass_module(self, tb: int) -> Module:
        """The compiled one-pass scan module for blocks of ``tb`` threads, remembered."""
        combine = self.combine.source(gpu=True)

        def make() -> Module:
            src = self.onepass_module_source(tb)
            return compile_module(
                self.target, src, ["ol_comb", "cmb"], ["onepass"], {},
                threads=tb, bounded=True, per_sm=ONEPASS_PER_SM,
            )  # fmt: skip

        key = (self.target, combine, self.dts, len(self.caps), self.right, self.segmented, tb)
        made = (*key, scan_onepass_src.LOOK_BACK, scan_onepass_src.EPOCHS, ONEPASS_PER_SM)
        module: Module = _ONEPASS.get(made, make)
        return module

    def onepass_module_source(self, tb: int) -> str:
        """The one-pass scan module's text for blocks of ``tb`` threads."""
        combine = self.combine.source(gpu=True)
        user = self.dts[1:] if self.segmented else self.dts
        wrapper = combine_wrapper("ol_comb", user, len(self.caps), self.right, self.segmented)
        sim = self.target == "gpu-sim"
        return onepass_module(
            combine, wrapper, self.dts, len(self.caps), tb=tb, ch=GPU_CHUNK, sim=sim
        )

    def _one_pass(
        self,
        tb: int,
        arrays: tuple[list[Any], list[Any], list[Any]],
        has_z: int,
        rows: int,
        length: int,
        *,
        seed: list[Any] | None = None,
        prefix: bool = False,
    ) -> list[Any]:
        """The inclusive scans of ``_level`` in one launch (``scan_onepass_src``): a block
        a tile of ``tb`` chunks, tiles taken in order from a counter; with ``seed`` (one
        row) the row starts from that prefix. With ``prefix``, returns the last tile's
        inclusive prefix (arrays of one element, a component each: a streamed row's next
        seed)."""
        xs, zs, outs = arrays
        nch = cdiv(length, GPU_CHUNK)
        tpr = cdiv(nch, tb)
        tiles = rows * tpr
        pads = [pad(dt) for dt in self.dts]
        wkey: tuple[Any, ...] | None = None
        if seed is None and not prefix:
            # (kept per stream: the kernel leaves its counters and statuses ready for the
            # next launch; a seeded row's prefix is read from its own arrays afterwards)
            spec = ("onepass", tiles, self._dtype_strs)
            wkey, made = kept(self.target, spec, lambda: self._workspace(tiles, pads))
        else:
            made = self._workspace(tiles, pads)
        state, ags, incs = made
        try:
            if seed is not None:
                seeds = seed
            elif self.target == "gpu":  # (the kernel's seed argument, unread: any array)
                seeds = incs
                frozen = None if self.frozen is None or prefix else self.frozen
                launch = None if frozen is None else frozen.get((tb, rows, length, has_z))
                if launch is not None:
                    at = int(state.data.ptr)
                    before: list[Any] = [*xs, *outs]
                    after: list[Any] = [*ags, *incs, *incs]
                    ptrs = [int(a.data.ptr) for a in before] + [at, at + 4 * tiles]
                    launch(*ptrs, *[int(a.data.ptr) for a in after])
                    return []
            else:  # (the simulator copies every argument back: one that overlaps no other)
                seeds = [inc[tiles * p : tiles * p + 1] for inc, p in zip(incs, pads, strict=True)]
            module = self.onepass_module(tb)
            i64 = np.int64
            head = (i64(nch), i64(length), i64(GPU_CHUNK), i64(has_z), i64(self.right), i64(tpr))
            flag = i64(seed is not None)
            args = (*head, flag, *xs, *zs, *outs, state[:tiles], state[tiles:], *ags, *incs)
            # (the GPU: a block a tile; the simulator runs its few blocks one after another)
            blocks = tiles if self.target == "gpu" else min(tiles, SIM_MAX_BLOCKS)
            module.launch("onepass", tiles, *args, *seeds, *self.caps, blocks=blocks)
        except BaseException:
            if wkey is not None:
                discard(wkey)  # (its counters may be left counting)
            raise
        if self.frozen is not None and self.target == "gpu" and seed is None:
            key = (tb, rows, length, has_z)
            self._freeze(module, key, tiles, (*args, *seeds, *self.caps), blocks)
        if not prefix:
            return []
        last = [(tiles - 1) * p for p in pads]
        return [inc[k : k + 1] for inc, k in zip(incs, last, strict=True)]

    @cached_property
    def _dtype_strs(self) -> tuple[str, ...]:
        """The components' dtypes as strings (a kept workspace's key; made once a job)."""
        return tuple(dt.str for dt in self.dts)

    def _workspace(self, tiles: int, pads: list[int]) -> tuple[Any, list[Any], list[Any]]:
        """A one-pass launch's statuses and counters (int32: a status a tile, then the
        tile counter, the finished blocks and the epoch, all zero), tiles' totals and
        inclusive prefixes (``pad`` elements a tile, a component each; one more prefix:
        the simulator's unread seed)."""
        xp = xp_for(self.target)
        state = xp.zeros(tiles + 3, np.int32)
        ags = [xp.empty(tiles * p, dt) for p, dt in zip(pads, self.dts, strict=True)]
        incs = [xp.empty((tiles + 1) * p, dt) for p, dt in zip(pads, self.dts, strict=True)]
        return state, ags, incs

    def _freeze(
        self, module: Module, key: tuple[int, ...], tiles: int, args: tuple[Any, ...], blocks: int
    ) -> None:
        """The launch of ``args`` frozen under ``key`` (``frozen``): every array argument
        but the neutral elements and the combine's captures is new on each call."""
        if self.frozen is None or key in self.frozen:
            return
        m, h = len(self.dts), 7  # (the sizes and flags before the arrays)
        # (inputs; then outputs, status, counter, totals, prefixes, seeds)
        variable = [*range(h, h + m), *range(h + 2 * m, h + 6 * m + 2)]
        made = module.freeze("onepass", tiles, args, variable, blocks)
        if made is not None:
            self.frozen[key] = made

    def one_pass_row(
        self, xs: list[Any], zs: list[Any], has_z: int, length: int, seed: list[Any] | None
    ) -> tuple[list[Any], list[Any]]:
        """The one-pass scan of one virtual row of ``length`` from ``xs`` (arrays (1, n)),
        continued from ``seed`` (the previous part's ``_one_pass`` prefix): its results
        (arrays (1, length)) and its last prefix -- a streamed vector's chunk."""
        tb = self.onepass_threads()
        if tb is None:
            raise OffloadError("internal: a one-pass row scan where the one pass does not apply")
        xp = xp_for(self.target)
        outs = [xp.empty((1, length), dt) for dt in self.dts]
        return outs, self._one_pass(tb, (xs, zs, outs), has_z, 1, length, seed=seed, prefix=True)

    def staged_threads(self) -> int | None:
        """The block size of the GPU's shared-memory kernels for these components, or
        ``None`` (the CPU; components too wide or bool: the direct kernels)."""
        if self.target not in GPU_TARGETS:
            return None
        most = SIM_THREADS if self.target == "gpu-sim" else THREADS
        return staged_threads(self.dts, GPU_CHUNK, most)

    def source(self, staged: int | None = None) -> str:
        """The skeleton module's text (kernels ``totals`` and ``rescan``); with
        ``staged`` the GPU's shared-memory kernels for blocks of that many threads."""
        user = self.dts[1:] if self.segmented else self.dts
        gpu = self.target in GPU_TARGETS
        combine = self.combine.source(gpu=gpu)
        wrapper = combine_wrapper("ol_comb", user, len(self.caps), self.right, self.segmented)
        if staged is not None:
            return staged_scan_module(
                combine, wrapper, self.dts, len(self.caps), tb=staged, ch=GPU_CHUNK
            )
        return scan_module(self.target, combine, wrapper, len(self.dts), len(self.caps))

    def _level(
        self,
        module: Module,
        arrays: tuple[list[Any], list[Any], list[Any]],
        flags: tuple[int, int],
        sizes: tuple[int, int, int],
    ) -> None:
        """One level of the chunk tree: chunk totals, their scan (recursively), the rescan.
        ``arrays`` is (inputs, neutral elements, outputs); ``flags`` (has_z, rev);
        ``sizes`` (rows, length, chunk)."""
        xs, zs, outs = arrays
        rows, length, chunk = sizes
        nch = cdiv(length, chunk)
        head = _head(length, chunk, flags)
        if nch == 1:  # one chunk per row: no carries (the outputs stand in for them, unread)
            module.launch("rescan", rows, *head, *xs, *zs, *outs, *outs, *self.caps)
            return
        if self.target == "cpu-par" and nch <= chunk:
            self._two_ways(module, arrays, flags, sizes)
            return
        self._tree(module, arrays, flags, sizes)

    def _two_ways(
        self,
        module: Module,
        arrays: tuple[list[Any], list[Any], list[Any]],
        flags: tuple[int, int],
        sizes: tuple[int, int, int],
    ) -> None:
        """``compute_p``'s level of a row of at most ``chunk`` chunks: the tree on all
        threads, or kernel ``fused`` (the same bits in one pass on one thread), whichever
        the level's ``ThreadChoice`` measures faster -- a loaded machine or few cores make
        the tree, which reads the row twice, lose to one pass."""
        import numba

        xs, zs, outs = arrays
        rows, length, chunk = sizes
        choice = module.choices.get("level")
        if choice is None:
            threads_now = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
            choice = module.choices.setdefault("level", ThreadChoice(threads_now))
        one = choice.pick(rows * length) == 1
        start = now()
        if one:
            head = _head(length, chunk, flags)
            module.kernels["fused"](np.int64(rows), *head, *xs, *zs, *outs, *self.caps)
        else:
            self._tree(module, arrays, flags, sizes)
        elapsed = now() - start
        key = "fused" if one else "tree"
        if key in module.warm:
            choice.record(rows * length, 1 if one else choice.max_threads, elapsed)
        module.warm.add(key)

    def _tree(
        self,
        module: Module,
        arrays: tuple[list[Any], list[Any], list[Any]],
        flags: tuple[int, int],
        sizes: tuple[int, int, int],
    ) -> None:
        """Chunk totals, their scan, the rescan (``_level`` with more than one chunk)."""
        xs, zs, outs = arrays
        rows, length, chunk = sizes
        nch = cdiv(length, chunk)
        head = _head(length, chunk, flags)
        xp = xp_for(self.target)
        totals = [xp.empty((rows, nch), dt) for dt in self.dts]
        module.launch("totals", rows * nch, *head, *xs, *zs, *totals, *self.caps)
        carries = self.carries(module, totals, zs, chunk)
        module.launch("rescan", rows * nch, *head, *xs, *zs, *carries, *outs, *self.caps)

    def carries(self, module: Module, totals: list[Any], zs: list[Any], chunk: int) -> list[Any]:
        """The inclusive scans of the chunk totals ``totals`` (rows, nch): what ``rescan``
        starts each chunk from (forward, without a neutral element, whatever the scan's
        direction). Public for ``offload.stream.scans``, which streams the totals and the
        rescan of a long scan and must scan the totals as this tree does."""
        rows, nch = (int(k) for k in totals[0].shape)
        xp = xp_for(self.target)
        carries = [xp.empty((rows, nch), dt) for dt in self.dts]
        if self.target in GPU_TARGETS and rows * nch <= TAIL_MAX:
            self._tail(module, totals, carries, (rows, nch, chunk))
        else:
            self._level(module, (totals, zs, carries), (0, 0), (rows, nch, chunk))
        return carries

    def _tail(
        self, module: Module, xs: list[Any], outs: list[Any], sizes: tuple[int, int, int]
    ) -> None:
        """What ``_level`` computes for ``xs`` (no neutral element, forward), every level in
        one launch of one block (``scan_gpu_src.tail_kernel``)."""
        rows, length, chunk = sizes
        xp = xp_for(self.target)
        levels, scratch, lens_a, offs_a = _tail_levels(self.target, rows, length, chunk)
        st = [xp.empty(scratch, dt) for dt in self.dts]
        sc = [xp.empty(scratch, dt) for dt in self.dts]
        head = (np.int64(rows), np.int64(levels), lens_a, offs_a)
        module.launch("tail", rows * length, *head, *xs, *outs, *st, *sc, *self.caps, blocks=1)


def _tail_levels(target: str, rows: int, length: int, chunk: int) -> tuple[int, int, Any, Any]:
    """The tail kernel's tree for ``rows`` rows of ``length``: (levels, scratch elements,
    level lengths, level offsets), the last two as arrays of the target -- kept, so that a
    warm call copies nothing to the device (a few hundred entries at most: lengths up to
    ``TAIL_MAX``)."""

    def make() -> tuple[int, int, Any, Any]:
        lens = [length]
        while lens[-1] > chunk:
            lens.append(cdiv(lens[-1], chunk))
        offs = np.concatenate([[0], np.cumsum([rows * n for n in lens])]).astype(np.int64)
        xp = xp_for(target)
        lens_a = xp.asarray(np.array(lens, np.int64))
        return (len(lens), int(offs[-1]), lens_a, xp.asarray(offs[:-1]))

    made: tuple[int, int, Any, Any] = _TAIL_LEVELS.get((target, rows, length, chunk), make)
    return made


def _head(length: int, chunk: int, flags: tuple[int, int]) -> tuple[np.int64, ...]:
    """The leading arguments of the level kernels (``totals``, ``rescan``, ``fused``):
    chunks a row, row length, chunk, ``has_z``, ``rev``."""
    i64 = np.int64
    return (i64(cdiv(length, chunk)), i64(length), i64(chunk), i64(flags[0]), i64(flags[1]))
