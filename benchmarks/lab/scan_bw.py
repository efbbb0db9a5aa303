"""Inclusive scan (``scanl1`` (+), float32 or int32, device mode) against ``cupy.cumsum``
and CUB (``cuda.compute.inclusive_scan``) by CUDA events, GPU only (issue 16):

    python -m benchmarks.lab.scan_bw [--label NAME] [--sizes 1048576,4194304,50000000]
        [--dtype float32|int32] [--mode deterministic|fast]

(every scan but a cross_target float one takes the one-pass scan; ``--tree`` the chunk tree.)

Prints one table row per size: median µs per call of each (offload's ``kept``: the same
node computed again, the replay lane's warm call), offload's ratio to CUB, and
the effective bandwidth of offload's scan counted as CUB's minimum traffic (read once,
write once).
``--kernels`` times each skeleton launch of one warm call at the last size.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from benchmarks.lab.cccl_peers import _add, _time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="offload")
    ap.add_argument("--sizes", default="1048576,4194304,50000000")
    ap.add_argument("--kernels", action="store_true", help="time each launch at the last size")
    ap.add_argument("--dtype", default="float32", choices=("float32", "int32"))
    ap.add_argument("--mode", default="deterministic", choices=("deterministic", "fast"))
    ap.add_argument(
        "--tree", action="store_true", help="the chunk tree even where one pass applies"
    )
    ap.add_argument("--look-back", type=int, default=None, help="tiles a look-back step reads")
    ap.add_argument("--per-sm", type=int, default=None, help="one-pass blocks an SM must hold")
    args = ap.parse_args()
    from offload.acc import scan_job as SJ
    from offload.acc.skeletons import scan_onepass_src

    if args.tree:
        SJ.ScanJob.onepass_threads = lambda self: None  # type: ignore[method-assign]
    if args.look_back:
        scan_onepass_src.LOOK_BACK = args.look_back
    if args.per_sm:
        SJ.ONEPASS_PER_SM = args.per_sm
    import cupy as cp

    import offload as ol

    ol.config.memory = "device"
    ol.config.determinism = args.mode
    dt = np.dtype(args.dtype)

    def values(n: int) -> Any:
        if dt.kind == "i":
            return cp.asarray(rng.integers(-1000, 1000, n).astype(dt))
        return cp.asarray(rng.uniform(-1, 1, n).astype(dt))

    try:
        import cuda.compute as cc
        from cuda.compute import OpKind
    except Exception as e:  # reported, the rest still runs
        print(f"cuda.compute unavailable: {type(e).__name__}: {e}")
        cc = None
    rng = np.random.default_rng(0)
    cols = ("label", "n", "offload", "kept", "cumsum", "CUB", "x CUB", "GB/s")
    widths = (14, 10, 9, 9, 9, 9, 6, 6)
    print(" ".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True)))
    for n in (int(s) for s in args.sizes.split(",")):
        x = values(n)
        y = cp.empty_like(x)
        ours = _time(cp, lambda x=x: ol.compute_g(ol.scanl1(_add, x)))
        node = ol.scanl1(_add, x)
        kept = _time(cp, lambda node=node: ol.compute_g(node))
        cum = _time(cp, lambda x=x: cp.cumsum(x, dtype=x.dtype))
        cub: Any = float("nan")
        if cc is not None:
            h_init = np.zeros(1, dt)
            cub = _time(
                cp,
                lambda x=x, y=y, n=n: cc.inclusive_scan(
                    d_in=x, d_out=y, op=OpKind.PLUS, init_value=h_init, num_items=n
                ),
            )
        got = ol.compute_g(ol.scanl1(_add, x))
        if dt.kind == "i":  # (exact: int32 wraps the same grouped any way)
            err = float(cp.count_nonzero(got != cp.cumsum(x, dtype=dt)))
        else:
            ref = cp.cumsum(x.astype(cp.float64))
            err = float(cp.max(cp.abs(got - ref)) / max(1.0, float(cp.max(cp.abs(ref)))))
        gbs = 2 * 4 * n / (ours * 1e-6) / 1e9
        print(
            f"{args.label:>14} {n:>10} {ours:>9.1f} {kept:>9.1f} {cum:>9.1f} {cub:>9.1f} "
            f"{ours / cub:>6.2f} {gbs:>6.0f}  ({args.dtype} {args.mode}"
            + (" tree" if args.tree else f" look-back {scan_onepass_src.LOOK_BACK}")
            + "; "
            + (f"{err:g} wrong)" if dt.kind == "i" else f"rel err vs float64 {err:.1e})")
        )
        del x, y, got, node
    if args.kernels:
        _per_kernel(cp, ol, values(int(args.sizes.split(",")[-1])))


def _per_kernel(cp: Any, ol: Any, x: Any) -> None:
    """One warm ``scanl1`` of ``x`` with each skeleton launch between CUDA events."""
    from offload.acc.skeletons import build

    n = x.size
    # (``dtype=`` takes the scheduled path: a replayed step's frozen launch would bypass
    # ``Module.launch``, which this times)
    ol.compute_g(ol.scanl1(_add, x), dtype=x.dtype)
    marks: list[tuple[str, Any, Any]] = []
    launch = build.Module.launch

    def timed(self: Any, kernel: str, *a: Any, **k: Any) -> None:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch(self, kernel, *a, **k)
        stop.record()
        marks.append((kernel, start, stop))

    build.Module.launch = timed  # type: ignore[method-assign]
    try:
        ol.compute_g(ol.scanl1(_add, x), dtype=x.dtype)
    finally:
        build.Module.launch = launch  # type: ignore[method-assign]
    cp.cuda.Device().synchronize()
    for kernel, start, stop in marks:
        print(f"  n={n} {kernel:>12} {cp.cuda.get_elapsed_time(start, stop) * 1e3:8.1f} us")


if __name__ == "__main__":
    main()
