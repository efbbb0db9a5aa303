"""What one launch can do for a small sum (issue 16: a ``fold_all`` of 2^16 float32 within
CUB + 3 µs): hand-written numba.cuda kernels of one launch each, to time under a profiler
beside ``cupy.sum`` (CUB's two kernels) and offload's own fold tail (GPU only):

    ncu --kernel-name regex:"small_|Reduce|fold_tail" --metrics gpu__time_duration.sum \
        --csv python -m benchmarks.lab.small_fold [--sizes 16,18] [--calls 10]

``--summary FILE`` prints the median duration of each kernel (``tail_probe --summary``).
Every variant is a deterministic tree fixed by the sizes: each thread folds ``k`` values
(strided by the grid's threads, all loads in flight) from registers, the block folds its
threads' values pairwise in shared memory (``small_tree``) or by warp shuffles then over
the warps (``small_shfl``), writes its partial, and the block that counts last (a fence,
an atomic) folds the partials the same way. ``--check`` runs each once and compares with
``math.fsum`` (any target, the simulator included).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

# isort: off
from offload.ptx.numba_compat import ensure_compatible

ensure_compatible()  # (first: numba-cuda's typing tables on numpy 2.5)
from numba import cuda, float32, int32  # noqa: E402

# isort: on

THREADS = 256
WARPS = THREADS // 32  # (a constant: numba types a shared array's size only from one)


def kernels() -> dict[str, Any]:
    def block_tree(sm: Any, tid: int) -> None:
        s = THREADS // 2
        while s > 0:
            if tid < s:
                sm[tid] = sm[tid] + sm[tid + s]
            cuda.syncthreads()
            s >>= 1

    tree = cuda.jit(device=True)(block_tree)

    def thread_values(x: Any, n: int, k: int, step: int) -> Any:
        """The thread's values ``k, k + step, ...`` folded in order, four loads at once."""
        acc = float32(0)
        while k + 3 * step < n:
            e0 = x[k]
            e1 = x[k + step]
            e2 = x[k + 2 * step]
            e3 = x[k + 3 * step]
            acc = acc + e0
            acc = acc + e1
            acc = acc + e2
            acc = acc + e3
            k += 4 * step
        while k < n:
            acc = acc + x[k]
            k += step
        return acc

    fold_thread = cuda.jit(device=True)(thread_values)

    def shfl_block(v: Any, sm: Any, tid: int) -> Any:
        """The block's values folded by warp shuffles, then over the warps in order: the
        total in thread 0 (``sm``: a shared slot a warp)."""
        d = 16
        while d > 0:
            v = v + cuda.shfl_down_sync(0xFFFFFFFF, v, d)
            d >>= 1
        if tid & 31 == 0:
            sm[tid >> 5] = v
        cuda.syncthreads()
        b = sm[0]
        if tid == 0:
            for w in range(1, THREADS // 32):
                b = b + sm[w]
        return b

    shfl = cuda.jit(device=True)(shfl_block)

    @cuda.jit
    def small_tree(x: Any, n: int, part: Any, count: Any, out: Any) -> None:
        sm = cuda.shared.array(THREADS, float32)
        last = cuda.shared.array(1, int32)
        tid = cuda.threadIdx.x
        nb = cuda.gridDim.x
        step = nb * THREADS
        k = cuda.blockIdx.x * THREADS + tid
        acc = fold_thread(x, n, k, step)
        sm[tid] = acc
        cuda.syncthreads()
        tree(sm, tid)
        if tid == 0:
            part[cuda.blockIdx.x] = sm[0]
            cuda.threadfence()
            last[0] = int32(cuda.atomic.add(count, 0, 1) == nb - 1)
        cuda.syncthreads()
        if last[0] == 1:
            cuda.threadfence()
            v = float32(0)
            j = tid
            while j < nb:
                v = v + part[j]
                j += THREADS
            sm[tid] = v
            cuda.syncthreads()
            tree(sm, tid)
            if tid == 0:
                out[0] = sm[0]
                count[0] = 0

    @cuda.jit
    def small_shfl(x: Any, n: int, part: Any, count: Any, out: Any) -> None:
        sm = cuda.shared.array(WARPS, float32)
        last = cuda.shared.array(1, int32)
        tid = cuda.threadIdx.x
        nb = cuda.gridDim.x
        step = nb * THREADS
        k = cuda.blockIdx.x * THREADS + tid
        b = shfl(fold_thread(x, n, k, step), sm, tid)
        if tid == 0:
            part[cuda.blockIdx.x] = b
            cuda.threadfence()
            last[0] = int32(cuda.atomic.add(count, 0, 1) == nb - 1)
        cuda.syncthreads()
        if last[0] == 1:
            cuda.threadfence()
            v = float32(0)
            j = tid
            while j < nb:
                v = v + part[j]
                j += THREADS
            b = shfl(v, sm, tid)
            if tid == 0:
                out[0] = b
                count[0] = 0

    return {"small_tree": small_tree, "small_shfl": small_shfl}


def _blocks(n: int, per_thread: int) -> int:
    return max(1, min(1024, -(-n // (THREADS * per_thread))))


def run(xp: Any, x: Any, name: str, kernel: Any, per_thread: int, calls: int) -> float:
    nb = _blocks(x.size, per_thread)
    part = xp.zeros(nb, np.float32)
    count = xp.zeros(1, np.int32)
    out = xp.zeros(1, np.float32)
    for _ in range(calls):
        kernel[nb, THREADS](x, x.size, part, count, out)
    got = out[0] if xp is np else out.get()[0]
    return float(got)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16,18,20")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--per-thread", default="4,8,16")
    ap.add_argument("--summary", default=None)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-offload", action="store_true")
    args = ap.parse_args(argv)
    if args.summary:
        from benchmarks.lab.tail_probe import _summary

        _summary(args.summary)
        return 0
    ks = kernels()
    for e in (int(s) for s in args.sizes.split(",")):
        host = np.random.default_rng(e).uniform(-1, 1, 1 << e).astype(np.float32)
        want = math.fsum(host.astype(np.float64))
        if args.check:
            x: Any = host
            xp: Any = np
        else:
            import cupy as cp

            x, xp = cp.asarray(host), cp
        for name, kernel in ks.items():
            if args.check and name == "small_shfl":  # (the simulator has no shuffles)
                continue
            for pt in (int(s) for s in args.per_thread.split(",")):
                got = run(xp, x, name, kernel, pt, 1 if args.check else args.calls)
                print(
                    f"2^{e} {name} {pt}/thread blocks {_blocks(x.size, pt)}: {got:.9g} "
                    f"(fsum {want:.9g}, err {abs(got - want):.3g})"
                )
        if xp is not np:
            import cupy as cp

            for _ in range(args.calls):
                cp.sum(x)
            if not args.no_offload:
                import offload as ol
                from benchmarks.lab.tail_probe import add

                ol.config.memory = "device"
                node = ol.fold_all(add, 0.0, x)
                for _ in range(args.calls + 1):
                    ol.compute_g(node)
            cp.cuda.Device().synchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
