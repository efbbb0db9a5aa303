"""Running a streamed plan: one chunk after another on the host's backends, or pipelined on
the GPU.

``run_host`` serves every backend whose kernels read host arrays (the simulator, the CPU
targets): each chunk's windows are views of the captured arrays, its results views of the
whole result. ``run_gpu`` is the GPU's copy/compute pipeline: ``slots`` CUDA streams, each
with pinned staging buffers and device buffers for one chunk; chunk ``k``'s host-to-device
copies, kernel and device-to-host copies are queued on stream ``k % slots``, so the copy of
chunk ``k + 1`` overlaps the kernel of chunk ``k`` and the copy back of chunk ``k - 1``.
Pageable host data is staged through the pinned buffers by several host threads (one
thread copies pageable memory at a fraction of the link's rate).

Both launch the same windowed kernel (``offload.stream.window``) with the same windows, so
the simulator exercises the GPU's chunk and halo logic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.ptx.launch import ElementIndexError
from offload.runtime.staging import D2H, H2D, HOST_THREADS, PINNED, copy_jobs, pinned, wait
from offload.stream.plan import Chunk, Plan
from offload.stream.progress import Progress
from offload.stream.window import Block, Window, WindowedFunction, cut

Extents = dict[int, tuple[int, ...]]

Reduce = Callable[[Block, Sequence[Any]], Any]
"""What a streamed reduction does with each chunk's results where they are (host views in
the simulator, the slot's device buffers on the GPU, called on the chunk's stream after its
kernel): ``reduce(block, results)`` gives the chunk's partial, kept in chunk order."""


def chunk_windows(
    wf: WindowedFunction, plan: Plan, chunk: Chunk, extents: Extents
) -> dict[int, Window]:
    """Every array capture's window for ``chunk``: its read window where it is streamed,
    the whole array where it is not (resident, or already on the device)."""
    return {
        k: chunk.windows[k] if k in plan.streamed else tuple((0, n) for n in extents[k])
        for k in wf.arrays
    }


def run_host(  # noqa: PLR0917  (the run's state, passed without a bag)
    kernel: Kernel,
    backend: Backend,
    wf: WindowedFunction,
    plan: Plan,
    values: Sequence[Any],
    extents: Extents,
    outs: Sequence[np.ndarray[Any, Any]],
    progress: Progress,
    reduce: Reduce | None = None,
) -> list[Any]:
    """Run ``plan`` chunk by chunk; ``outs`` are the whole results (C-contiguous host
    arrays: a chunk of rows is a contiguous view). With ``reduce``: each chunk's partial
    (``Reduce``), in chunk order, are returned."""
    partials: list[Any] = []
    for chunk in plan.chunks:
        wins = chunk_windows(wf, plan, chunk, extents)
        originals = [cut(v, wins[k]) if k in plan.streamed else v for k, v in enumerate(values)]
        (lo, hi), *_ = chunk.block
        shape = tuple(b - a for a, b in chunk.block)
        captures = backend.prepare_captures(wf.values(originals, chunk.block, wins, extents))
        try:
            kernel.launch(shape, [o[lo:hi] for o in outs], captures)
        except ElementIndexError as err:  # (the element of the whole result, not the chunk)
            raise err.shifted(lo) from None
        if reduce is not None:
            partials.append(reduce(chunk.block, [o[lo:hi] for o in outs]))
        progress.update(
            sum(
                math.prod(_shape(w)) * values[k].itemsize
                for k, w in wins.items()
                if k in plan.streamed
            )
        )
    return partials


def _shape(window: Window) -> tuple[int, ...]:
    return tuple(b - a for a, b in window)


def run_gpu(  # noqa: PLR0917  (the pipeline's state in one place)
    cp: Any,
    kernel: Kernel,
    backend: Backend,
    wf: WindowedFunction,
    plan: Plan,
    values: Sequence[Any],
    extents: Extents,
    shape: tuple[int, ...],
    dtypes: Sequence[np.dtype[Any]],
    slots: int,
    progress: Progress,
    reduce: Reduce | None = None,
    outs: Sequence[np.ndarray[Any, Any]] | None = None,
) -> list[Any]:
    """Run ``plan`` on the GPU through ``slots`` streams; returns host results (``outs``
    where given: written into them), or with ``reduce`` each chunk's partial of its
    results on the device, in chunk order (no result is copied back). Device buffers come
    from a private pool, emptied before returning (later unified-mode calls see the
    memory free again)."""
    pool = cp.cuda.MemoryPool()
    try:
        with PINNED.lock, cp.cuda.using_allocator(pool.malloc):
            return _pipeline(
                cp,
                kernel,
                backend,
                wf,
                plan,
                values,
                extents,
                shape,
                dtypes,
                slots,
                progress,
                reduce,
                outs,
            )
    finally:
        pool.free_all_blocks()


def _pipeline(  # noqa: PLR0917  (run_gpu's arguments)
    cp: Any,
    kernel: Kernel,
    backend: Backend,
    wf: WindowedFunction,
    plan: Plan,
    values: Sequence[Any],
    extents: Extents,
    shape: tuple[int, ...],
    dtypes: Sequence[np.dtype[Any]],
    slots: int,
    progress: Progress,
    reduce: Reduce | None,
    outs: Sequence[np.ndarray[Any, Any]] | None,
) -> list[Any]:
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(slots)]
    resident = {k: cp.asarray(values[k]) for k in plan.resident}
    row = math.prod(shape[1:])
    rows = plan.rows
    in_elems = {k: max(math.prod(_shape(c.windows[k])) for c in plan.chunks) for k in plan.streamed}
    # One pinned arena cut into per-slot pieces, 256-byte aligned.
    layout: list[dict[Any, tuple[int, int, np.dtype[Any]]]] = []
    offset = 0
    for _ in range(slots):
        pieces: dict[Any, tuple[int, int, np.dtype[Any]]] = {}
        for k in plan.streamed:
            dt = np.dtype(values[k].dtype)
            pieces[("in", k)] = (offset, in_elems[k], dt)
            offset += -(-in_elems[k] * dt.itemsize // 256) * 256
        for r, dt in enumerate(dtypes):
            pieces[("out", r)] = (offset, rows * row, np.dtype(dt))
            offset += -(-rows * row * np.dtype(dt).itemsize // 256) * 256
        layout.append(pieces)
    arena = PINNED.get(cp, max(offset, 1))

    def staging_of(s: int, key: Any) -> np.ndarray[Any, Any]:
        at, count, dt = layout[s][key]
        return arena[at : at + count * dt.itemsize].view(dt)

    device = [
        {key: cp.empty(count, dtype=dt) for key, (_, count, dt) in layout[s].items()}
        for s in range(slots)
    ]
    results: list[np.ndarray[Any, Any]] = []
    if reduce is None:
        results = [np.empty(shape, dtype=dt) for dt in dtypes] if outs is None else list(outs)
    # Page-locked host memory (the caller's own: ``cupyx.empty_pinned``, a pinned torch
    # tensor's NumPy view) is copied to and from directly, not staged.
    direct_in = {k for k in plan.streamed if pinned(cp, values[k])}
    direct_out = {
        r
        for r, res in enumerate(results)
        if res.flags.c_contiguous and res.dtype == dtypes[r] and pinned(cp, res)
    }
    partials: list[Any] = []
    pending: list[tuple[Any, Chunk, int] | None] = [None] * slots
    threads = ThreadPoolExecutor(HOST_THREADS)

    def finish(s: int) -> list[Future[Any]]:
        """Wait for slot ``s``'s chunk on the device; its copies to the results, submitted
        (the caller waits for them before the slot's buffers are written again)."""
        item = pending[s]
        if item is None:
            return []
        event, chunk, moved = item
        event.synchronize()
        (lo, hi), *_ = chunk.block
        jobs: list[Future[Any]] = []
        for r, res in enumerate(results):
            if r in direct_out:  # (the device wrote it)
                continue
            src = staging_of(s, ("out", r))[: (hi - lo) * row].reshape(res[lo:hi].shape)
            jobs += copy_jobs(threads, res[lo:hi], src)
        pending[s] = None
        done.append((jobs, moved))
        return jobs

    def report() -> None:
        while done and all(job.done() for job in done[0][0]):
            progress.update(done.pop(0)[1])

    done: list[tuple[list[Future[Any]], int]] = []
    try:
        for n, chunk in enumerate(plan.chunks):
            s = n % slots
            # The slot's previous chunk copies out while this one is staged in: the copy
            # out writes fresh result pages (the kernel's page faults: CPU-bound) and the
            # staging reads and writes memory, so the two share the host's threads well.
            out_jobs = finish(s)
            wins = chunk_windows(wf, plan, chunk, extents)
            originals: list[Any] = list(values)
            moved = 0
            staging: list[tuple[Any, Any]] = []
            in_jobs: list[Future[Any]] = []
            for k in plan.streamed:
                wshape = _shape(wins[k])
                count = math.prod(wshape)
                window = cut(values[k], wins[k])
                if k in direct_in and window.flags.c_contiguous:
                    staged = window
                else:
                    staged = staging_of(s, ("in", k))[:count].reshape(wshape)
                    in_jobs += copy_jobs(threads, staged, window)
                dev = device[s][("in", k)][:count].reshape(wshape)
                staging.append((staged, dev))
                originals[k] = dev
                moved += staged.nbytes
            wait(in_jobs)
            stream = streams[s]
            for staged, dev in staging:
                cp.cuda.runtime.memcpyAsync(
                    dev.data.ptr, staged.ctypes.data, staged.nbytes, H2D, stream.ptr
                )
            for k, dev in resident.items():
                originals[k] = dev
            (lo, hi), *_ = chunk.block
            bshape = (hi - lo, *shape[1:])
            douts = [
                device[s][("out", r)][: (hi - lo) * row].reshape(bshape) for r in range(len(dtypes))
            ]
            captures = backend.prepare_captures(wf.values(originals, chunk.block, wins, extents))
            with stream:
                try:
                    kernel.launch(bshape, douts, captures)
                except ElementIndexError as err:  # (the whole result's element)
                    raise err.shifted(lo) from None
                if reduce is not None:  # (on the chunk's stream: after its kernel)
                    partials.append(reduce(chunk.block, douts))
            wait(out_jobs)  # (the slot's pinned results are written again below)
            for r, out in enumerate(douts if reduce is None else ()):
                host = results[r][lo:hi] if r in direct_out else staging_of(s, ("out", r))
                cp.cuda.runtime.memcpyAsync(
                    host.ctypes.data, out.data.ptr, out.nbytes, D2H, stream.ptr
                )
                moved += out.nbytes
            pending[s] = (stream.record(), chunk, moved)
            report()
        for n in range(len(plan.chunks), len(plan.chunks) + slots):
            wait(finish(n % slots))  # in chunk order
        report()
    finally:
        for st in streams:
            st.synchronize()
        threads.shutdown()
        device.clear()
        resident.clear()
    return results if reduce is None else partials
