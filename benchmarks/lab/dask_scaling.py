"""Weak scaling on Dask (issue 21): a bandwidth-bound element function and ``fold_all``
through ``offload.dask`` on 1, 2, ... workers, each worker with the same share of data.

GPU (default): ``dask_cuda.LocalCUDACluster``, one worker per GPU (``target="g"``, CuPy
chunks made on the workers, so nothing crosses the host link; ``--host``: NumPy chunks in
the workers' memory, each task copying its block in, CuPy results); ``--cpu``:
``distributed.LocalCluster`` of one-thread worker processes (``target="s"``, NumPy chunks),
which is how CI runs this script on its two cores.

For each worker count ``n`` the input is a float32 vector of ``n * --per-worker-mib`` MiB in
chunks of ``--chunk-mib`` MiB, persisted on the workers (made there by ``map_blocks``).
Timed, median of ``--reps`` after one warm-up (kernels compiled on every worker):

* ``map``: ``old.compute(x.shape, lambda i: x[i] * 2.0 + 1.0, target=...)`` persisted and
  waited for; GB/s counts the bytes read and written;
* ``fold_all``: ``old.compute(ol.fold_all(add, 0.0, ol.map(square, x)), target=...)``
  computed to the client; GB/s counts the bytes read;
* the same with Dask's own array operations on the same chunks (``x * 2.0 + 1.0`` and
  ``(x * x).sum()``: CuPy's kernels on the GPU, NumPy's on the CPU), the peer.

Efficiency at ``n`` workers is ``t(1) / t(n)`` (weak scaling: the ideal is 1). Checked in
the run: the map's values equal the peer's bit for bit, the fold's result is the same on
every repetition (deterministic) and within 1e-3 of the peer's.

    python -m benchmarks.lab.dask_scaling [--workers 1,2] [--per-worker-mib 8192]
                                          [--chunk-mib 1024] [--reps 5] [--cpu] [--host] [--tasks]
                                          [--json PATH]

``--tasks`` prints, for one warm run of each op, the tasks by kind with the workers'
compute and transfer time (where the time goes besides the kernels).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

MIB = 1 << 20


def add(a: Any, b: Any) -> Any:
    return a + b


def square(v: Any) -> Any:
    return v * v


def _make_block(gpu: bool, block_info: Any = None) -> Any:
    """One chunk of the input, made on the worker that holds it (values in [0, 2))."""
    lo, hi = block_info[None]["array-location"][0]
    if gpu:
        import cupy

        v = cupy.arange(lo, hi, dtype=cupy.float64)
        return (v % 65536 / 32768).astype(cupy.float32)
    w = np.arange(lo, hi, dtype=np.float64)
    return (w % 65536 / 32768).astype(np.float32)


def _affine_peer(b: Any) -> Any:
    return b * 2.0 + 1.0


def _to_device(b: Any) -> Any:
    import cupy

    return cupy.asarray(b)


@contextmanager
def _client(workers: int, gpu: bool) -> Iterator[Any]:
    import distributed

    if gpu:
        import dask_cuda

        cluster = dask_cuda.LocalCUDACluster(
            CUDA_VISIBLE_DEVICES=",".join(str(d) for d in range(workers)),
            n_workers=workers,
            threads_per_worker=1,
            dashboard_address=":0",
        )
    else:
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
    with cluster, distributed.Client(cluster) as client:
        yield client


def _timed(fn: Callable[[], Any], reps: int) -> tuple[float, Any]:
    fn()  # warm-up: every worker compiles (or loads) its kernels
    times, last = [], None
    for _ in range(reps):
        start = time.perf_counter()
        last = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), last


def _one_count(workers: int, args: argparse.Namespace) -> dict[str, Any]:
    import dask.array as da
    import distributed

    import offload as ol
    import offload.dask as old

    gpu = not args.cpu
    target = "g" if gpu else "s"
    chunk = args.chunk_mib * MIB // 4
    per_worker = args.per_worker_mib * MIB // 4 // chunk * chunk
    n = per_worker * workers
    if gpu:
        import cupy

        meta = cupy.empty(0, cupy.float32)
    else:
        meta = np.empty(0, np.float32)
    rows: dict[str, Any] = {"workers": workers, "elements": n, "chunks": n // chunk}
    on_device = gpu and not args.host
    with _client(workers, gpu) as client:
        x = da.map_blocks(
            _make_block,
            on_device,
            chunks=((chunk,) * (n // chunk),),
            dtype=np.float32,
            meta=meta if on_device else np.empty(0, np.float32),
        ).persist()
        distributed.wait(x)
        # The peer's input: on the GPU, Dask's own ops need CuPy chunks (copied in per task).
        xp = x.map_blocks(_to_device, dtype=np.float32, meta=meta) if gpu and args.host else x
        nbytes = n * 4

        def affine(i: Any) -> Any:
            return x[i] * 2.0 + 1.0

        def run_map() -> Any:
            y = old.compute(x.shape, affine, target=target).persist()
            distributed.wait(y)
            return y

        def run_peer_map() -> Any:
            # A fresh name each time: Dask would hand back the previous result of the
            # same graph (its keys are deterministic) instead of computing it again.
            name = f"peer-affine-{uuid.uuid4().hex}"
            y = xp.map_blocks(_affine_peer, dtype=np.float32, meta=meta, name=name).persist()
            distributed.wait(y)
            return y

        def run_fold() -> Any:
            node = ol.fold_all(add, 0.0, ol.map(square, x))
            return old.compute(node, target=target).compute()

        def run_peer_fold() -> Any:
            return (xp * xp).sum(split_every=8).compute()

        if args.tasks:
            for name, fn in (("map", run_map), ("peer map", run_peer_map), ("fold", run_fold)):
                _task_stream(client, name, fn)
        t_map, y = _timed(run_map, args.reps)
        t_peer_map, y_peer = _timed(run_peer_map, args.reps)
        same = int((y != y_peer).sum().compute()) == 0
        del y, y_peer
        folds: list[Any] = []

        def fold_kept() -> Any:
            folds.append(np.asarray(_host(run_fold())))
            return folds[-1]

        t_fold, total = _timed(fold_kept, args.reps)
        t_peer_fold, peer_total = _timed(run_peer_fold, args.reps)
        peer = float(_host(peer_total))
        rows.update(
            map_s=t_map,
            map_gbs=2 * nbytes / t_map / 1e9,
            peer_map_s=t_peer_map,
            peer_map_gbs=2 * nbytes / t_peer_map / 1e9,
            map_bits_equal_peer=same,
            fold_s=t_fold,
            fold_gbs=nbytes / t_fold / 1e9,
            peer_fold_s=t_peer_fold,
            peer_fold_gbs=nbytes / t_peer_fold / 1e9,
            fold_deterministic=all(f.tobytes() == folds[0].tobytes() for f in folds),
            fold_close_to_peer=abs(float(total) - peer) <= 1e-3 * abs(peer),
        )
        client.cancel(x)
    return rows


def _task_stream(client: Any, name: str, fn: Callable[[], Any]) -> None:
    """One warm run of ``fn``: its wall time and, per task kind, the count and the
    workers' summed compute and transfer seconds (``distributed.get_task_stream``)."""
    import distributed

    fn()
    with distributed.get_task_stream(client) as ts:
        start = time.perf_counter()
        fn()
        wall = time.perf_counter() - start
    kinds: dict[str, list[float]] = {}
    for t in ts.data:
        key = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
        kind = "-".join(p for p in str(key).split("-") if not _hexlike(p))
        row = kinds.setdefault(kind, [0, 0.0, 0.0])
        row[0] += 1
        for ss in t["startstops"]:
            row[1 if ss["action"] == "compute" else 2] += ss["stop"] - ss["start"]
    print(f"tasks of one {name} ({wall * 1e3:.1f} ms wall):")
    for kind, (count, comp, xfer) in sorted(kinds.items()):
        print(
            f"  {kind:40} {int(count):4} tasks {comp * 1e3:9.2f} ms compute"
            f" {xfer * 1e3:8.2f} ms other"
        )


def _hexlike(part: str) -> bool:
    return len(part) >= 8 and all(c in "0123456789abcdef" for c in part)


def _host(v: Any) -> Any:
    return v.get() if hasattr(v, "get") else v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    ap.add_argument("--per-worker-mib", type=int, default=8192)
    ap.add_argument("--chunk-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="LocalCluster, target 's', NumPy chunks")
    ap.add_argument(
        "--host", action="store_true", help="GPU: NumPy chunks in the workers' host memory"
    )
    ap.add_argument("--tasks", action="store_true", help="print each op's task stream")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]
    results = [_one_count(w, args) for w in counts]
    base = results[0]
    print(
        f"{'workers':>7} {'GiB':>6} {'map s':>8} {'GB/s':>7} {'eff':>5} {'peer GB/s':>9}"
        f" {'fold s':>8} {'GB/s':>7} {'eff':>5} {'peer GB/s':>9}  checks"
    )
    for r in results:
        w = r["workers"] / base["workers"]
        map_eff = base["map_s"] / r["map_s"] if w else 0.0
        fold_eff = base["fold_s"] / r["fold_s"] if w else 0.0
        r.update(map_efficiency=map_eff, fold_efficiency=fold_eff)
        checks = all(
            r[k] for k in ("map_bits_equal_peer", "fold_deterministic", "fold_close_to_peer")
        )
        print(
            f"{r['workers']:>7} {r['elements'] * 4 / 2**30:>6.1f} {r['map_s']:>8.4f}"
            f" {r['map_gbs']:>7.1f} {map_eff:>5.2f} {r['peer_map_gbs']:>9.1f}"
            f" {r['fold_s']:>8.4f} {r['fold_gbs']:>7.1f} {fold_eff:>5.2f}"
            f" {r['peer_fold_gbs']:>9.1f}  {'ok' if checks else 'FAILED ' + str(r)}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    ok = all(
        r["map_bits_equal_peer"] and r["fold_deterministic"] and r["fold_close_to_peer"]
        for r in results
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
