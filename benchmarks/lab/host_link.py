"""What the host side of a streamed run can reach (issue 21's 80% of the link): host memory
copies on several threads, first-touch writes, pinning pageable memory in place
(``cudaHostRegister``) and copies to and from the device out of such memory (GPU).

    python -m benchmarks.lab.host_link [--gib 4] [--piece-mib 256] [--json PATH]

Rows (GB/s of the bytes moved, best of 3 unless said):

* ``copy T``: pageable to pageable (both touched), ``T`` threads (NumPy releases the GIL);
* ``to-pinned T``: pageable into a pinned block, ``T`` threads;
* ``first-touch T``: a copy into fresh ``np.empty`` memory (the kernel zeroes each page);
* ``register``/``unregister``: ``cudaHostRegister`` of touched pageable memory, whole and
  in ``--piece-mib`` pieces on ``T`` threads; ``register fresh``: of untouched memory;
* ``h2d``/``d2h registered``: device copies out of and into registered memory, whole and
  in pieces on two streams.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from benchmarks.lab.stream_bench import _best

GIB = 1 << 30


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    step = -(-n // parts)
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def _par_copy(pool: ThreadPoolExecutor, dst: Any, src: Any, threads: int) -> None:
    ranges = _split(len(dst), threads)
    list(pool.map(lambda r: np.copyto(dst[r[0] : r[1]], src[r[0] : r[1]]), ranges))


def _huge(nbytes: int) -> Any:
    """``nbytes`` of fresh anonymous memory advised to transparent huge pages."""
    import mmap

    m = mmap.mmap(-1, nbytes)
    m.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(m, np.uint8, nbytes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--piece-mib", type=int, default=256)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import cupy as cp

    rt = cp.cuda.runtime
    nbytes = int(args.gib * GIB)
    rows: list[tuple[str, float]] = []

    def row(name: str, seconds: float, moved: int = nbytes) -> None:
        rows.append((name, moved / seconds / 1e9))
        print(f"{name:32s} {moved / seconds / 1e9:8.1f} GB/s  ({seconds * 1e3:.1f} ms)", flush=True)

    src = np.empty(nbytes, np.uint8)
    src[:] = 7
    dst = np.empty(nbytes, np.uint8)
    dst[:] = 1
    pool = ThreadPoolExecutor(32)
    for t in (1, 2, 4, 8, 16):
        row(f"copy {t}", _best(partial(_par_copy, pool, dst, src, t)))
    pinned_mem = cp.cuda.alloc_pinned_memory(nbytes)
    pinned = np.frombuffer(pinned_mem, np.uint8, nbytes)
    pinned[:] = 0
    for t in (1, 4, 8, 16):
        row(f"to-pinned {t}", _best(partial(_par_copy, pool, pinned, src, t)))
        row(f"from-pinned {t}", _best(partial(_par_copy, pool, dst, pinned, t)))
    for t in (1, 4, 8, 16):

        def fresh(t: int = t) -> None:
            out = np.empty(nbytes, np.uint8)
            _par_copy(pool, out, src, t)

        row(f"first-touch {t}", _best(fresh))

        def fresh_huge(t: int = t) -> None:
            out = _huge(nbytes)
            _par_copy(pool, out, src, t)

        row(f"first-touch huge {t}", _best(fresh_huge))
    dev = cp.empty(nbytes, np.uint8)
    cp.cuda.Device().synchronize()
    row("h2d pinned", _best(lambda: (dev.set(pinned), cp.cuda.Device().synchronize())))
    row("h2d pageable", _best(lambda: (dev.set(src), cp.cuda.Device().synchronize())))
    # Staging while the link is busy (what a pipeline does): copy src into a second pinned
    # block on T threads while the first block copies to the device.
    other_mem = cp.cuda.alloc_pinned_memory(nbytes)
    other = np.frombuffer(other_mem, np.uint8, nbytes)
    other[:] = 0
    side = cp.cuda.Stream(non_blocking=True)
    for t in (8, 16):

        def both(t: int = t, other: Any = other) -> None:
            rt.memcpyAsync(dev.data.ptr, pinned.ctypes.data, nbytes, 1, side.ptr)
            start = time.perf_counter()
            _par_copy(pool, other, src, t)
            alone = nbytes / (time.perf_counter() - start) / 1e9
            rows.append((f"to-pinned {t} beside h2d (copy alone)", alone))
            side.synchronize()

        row(f"to-pinned {t} beside h2d", _best(both))
        print(f"   copy alone: {rows[-2][1]:.1f} GB/s", flush=True)
    del other, other_mem

    piece = args.piece_mib << 20
    pieces = _split(nbytes, max(1, nbytes // piece))

    def register(a: Any, ranges: list[tuple[int, int]], t: int) -> None:
        base = a.ctypes.data
        if t > 1:
            list(pool.map(lambda r: rt.hostRegister(base + r[0], r[1] - r[0], 0), ranges))
        else:
            for lo, hi in ranges:
                rt.hostRegister(base + lo, hi - lo, 0)

    def unregister(a: Any, ranges: list[tuple[int, int]]) -> None:
        base = a.ctypes.data
        for lo, _ in ranges:
            rt.hostUnregister(base + lo)

    for label, ranges, t in (
        ("whole", [(0, nbytes)], 1),
        ("pieces 1", pieces, 1),
        ("pieces 8", pieces, 8),
        ("pieces 16", pieces, 16),
    ):
        start = time.perf_counter()
        register(src, ranges, t)
        row(f"register {label}", time.perf_counter() - start)
        if label == "whole":
            s0 = time.perf_counter()
            rt.memcpy(dev.data.ptr, src.ctypes.data, nbytes, 1)
            row("h2d registered", time.perf_counter() - s0)
            s0 = time.perf_counter()
            rt.memcpy(src.ctypes.data, dev.data.ptr, nbytes, 2)
            row("d2h registered", time.perf_counter() - s0)
        start = time.perf_counter()
        unregister(src, ranges)
        row(f"unregister {label}", time.perf_counter() - start)
    for t in (1, 16):
        out = np.empty(nbytes, np.uint8)
        start = time.perf_counter()
        register(out, pieces, t)
        row(f"register fresh pieces {t}", time.perf_counter() - start)
        s0 = time.perf_counter()
        for lo, hi in pieces:  # (one copy may not span two registrations)
            rt.memcpy(out.ctypes.data + lo, dev.data.ptr + lo, hi - lo, 2)
        row("d2h registered fresh", time.perf_counter() - s0)
        unregister(out, pieces)
        del out
    # Pieces pipelined: register piece k+1 on host threads while piece k copies (two streams).
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]

    def pipelined() -> None:
        base = src.ctypes.data
        futs = [pool.submit(rt.hostRegister, base + lo, hi - lo, 0) for lo, hi in pieces]
        for k, (lo, hi) in enumerate(pieces):
            futs[k].result()
            rt.memcpyAsync(dev.data.ptr + lo, base + lo, hi - lo, 1, streams[k % 2].ptr)
        for s in streams:
            s.synchronize()
        unregister(src, pieces)

    row("register+h2d pipelined (16 thr)", _best(pipelined))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(rows), fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
