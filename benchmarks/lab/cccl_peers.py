"""``cuda.compute`` (cuda-cccl) as a peer for the collectives (issue 16), GPU only.

Times CUB's device-wide algorithms through ``cuda.compute`` against ``cupy.sum`` (CUB
accelerator), ``cupy.cumsum`` and offload's ``fold_all``/``scanl1``/``fold_seg`` in the same
process, on float32 inputs, device-resident (CuPy arrays; offload in device memory mode):

    python -m benchmarks.lab.cccl_peers [--json PATH]

A missing or unusable ``cuda.compute`` is reported in one line and the rest still runs
(the GPU machine has no cuda-cccl: carry its wheel in ``.whl/``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np


def _time(cp: Any, fn: Callable[[], Any], repeat: int = 20) -> float:
    """Median µs per call by CUDA events (after two warm-up calls)."""
    fn()
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return float(np.median(times))


def _add(a: Any, b: Any) -> Any:
    return a + b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import cupy as cp

    import offload as ol

    ol.config.memory = "device"
    rows: list[dict[str, Any]] = []

    try:
        import cuda.compute as cc
        from cuda.compute import OpKind

        have_cc = True
    except Exception as e:  # reported; the rest still runs
        print(f"cuda.compute unavailable: {type(e).__name__}: {e}")
        have_cc = False

    rng = np.random.default_rng(0)
    for n in (1 << 16, 1 << 24, 1 << 28):
        x = cp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
        out = cp.empty(1, np.float32)
        h_init = np.zeros(1, np.float32)
        row: dict[str, Any] = {"op": "sum", "n": n}
        row["offload fold_all"] = _time(cp, lambda x=x: ol.compute_g(ol.fold_all(_add, 0.0, x)))
        row["cupy.sum (CUB)"] = _time(cp, lambda x=x: cp.sum(x))
        if have_cc:
            try:
                row["cuda.compute reduce_into"] = _time(
                    cp,
                    lambda x=x, n=n: cc.reduce_into(
                        d_in=x, d_out=out, num_items=n, op=OpKind.PLUS, h_init=h_init
                    ),
                )
                got = float(out.get()[0])
                row["check"] = f"{got:.6g} vs {float(cp.sum(x.astype(cp.float64))):.6g}"
            except Exception as e:
                row["cuda.compute reduce_into"] = f"{type(e).__name__}: {str(e)[:120]}"
        rows.append(row)
        del x

    for n in (1 << 20, 50_000_000):
        x = cp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
        y = cp.empty_like(x)
        row = {"op": "inclusive scan", "n": n}
        row["offload scanl1"] = _time(cp, lambda x=x: ol.compute_g(ol.scanl1(_add, x)))
        row["cupy.cumsum"] = _time(cp, lambda x=x: cp.cumsum(x))
        if have_cc:
            try:
                h_init = np.zeros(1, np.float32)
                row["cuda.compute inclusive_scan"] = _time(
                    cp,
                    lambda x=x, y=y, n=n: cc.inclusive_scan(
                        d_in=x, d_out=y, op=OpKind.PLUS, init_value=h_init, num_items=n
                    ),
                )
            except Exception as e:
                row["cuda.compute inclusive_scan"] = f"{type(e).__name__}: {str(e)[:120]}"
        rows.append(row)
        del x, y

    for nseg, seglen in ((1 << 20, 8), (1 << 14, 4096)):
        n = nseg * seglen
        x = cp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
        lengths = np.full(nseg, seglen, np.int64)
        offsets = cp.asarray(np.arange(nseg + 1, dtype=np.int64) * seglen)
        out = cp.empty(nseg, np.float32)
        row = {"op": f"segmented sum ({seglen} per segment)", "n": n}
        row["offload fold_seg"] = _time(
            cp, lambda x=x: ol.compute_g(ol.fold_seg(_add, 0.0, x, lengths))
        )
        kept = ol.fold_seg(_add, 0.0, x, lengths)  # (its segment starts copied once)
        row["offload fold_seg (node kept)"] = _time(cp, lambda kept=kept: ol.compute_g(kept))
        if have_cc:
            try:
                h_init = np.zeros(1, np.float32)
                row["cuda.compute segmented_reduce"] = _time(
                    cp,
                    lambda x=x, o=offsets, out=out, k=nseg: cc.segmented_reduce(
                        d_in=x,
                        d_out=out,
                        num_segments=k,
                        start_offsets_in=o[:-1],
                        end_offsets_in=o[1:],
                        op=OpKind.PLUS,
                        h_init=h_init,
                    ),
                )
            except Exception as e:
                row["cuda.compute segmented_reduce"] = f"{type(e).__name__}: {str(e)[:120]}"
        rows.append(row)
        del x

    print("== cuda.compute peers (µs per call, median of 20, CUDA events)")
    for row in rows:
        cells = ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in row.items()
            if k not in ("op", "n")
        )
        print(f"| {row['op']} | {row['n']} | {cells} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
