"""GPU time of ``ol.stencil`` kernels (device mode, a kept node on the replay lane) for
several stencils, boundaries and sizes, with ``cupyx.scipy.ndimage.correlate`` (the same
weights and boundary) as the peer. Run from two trees (``_base/`` and the project) to see
what the interior/border split of ``Stencil.lower_element`` changes.

python -m benchmarks.lab.stencil_split [--repeat 20] [--json FILE]
python -m benchmarks.lab.stencil_split --cpu [--repeat 7]   (compute_s, compute_p; no GPU)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

import offload as ol

MODES = {"clamp": "nearest", "mirror": "mirror", "wrap": "wrap", "constant": "constant"}


def lap5(get: Any) -> Any:
    return get(-1, 0) + get(1, 0) + get(0, -1) + get(0, 1) - 4.0 * get(0, 0)


def box9(get: Any) -> Any:
    s = get(-1, -1) + get(-1, 0) + get(-1, 1) + get(0, -1) + get(0, 0)
    return s + get(0, 1) + get(1, -1) + get(1, 0) + get(1, 1)


def taps9(get: Any) -> Any:
    return (
        get(-4) + get(-3) + get(-2) + get(-1) + get(0) + get(1) + get(2) + get(3) + get(4)
    ) * 0.125


def seven(get: Any) -> Any:
    s = get(-1, 0, 0) + get(1, 0, 0) + get(0, -1, 0) + get(0, 1, 0)
    return s + get(0, 0, -1) + get(0, 0, 1) - 6.0 * get(0, 0, 0)


def _weights(name: str) -> np.ndarray[Any, Any]:
    if name == "lap5":
        return np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
    if name == "box9":
        return np.ones((3, 3), np.float32)
    if name == "taps9":
        return np.full(9, 0.125, np.float32)
    w = np.zeros((3, 3, 3), np.float32)
    w[1, 1, 1] = -6
    for d in ((0, 1, 1), (2, 1, 1), (1, 0, 1), (1, 2, 1), (1, 1, 0), (1, 1, 2)):
        w[d] = 1
    return w


CASES = [
    ("lap5", lap5, (1024, 1024)),
    ("lap5", lap5, (4096, 4096)),
    ("box9", box9, (4096, 4096)),
    ("taps9", taps9, (1 << 24,)),
    ("seven", seven, (256, 256, 256)),
]


def _time(cp: Any, fn: Any, repeat: int) -> float:
    for _ in range(3):
        fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeat):
        fn()
    stop.record()
    stop.synchronize()
    return float(cp.cuda.get_elapsed_time(start, stop)) * 1e3 / repeat


def _cpu(repeat: int) -> None:
    """``--cpu``: the best of ``repeat`` calls of ``compute_s`` and ``compute_p`` (ms) on
    the 2-D and 1-D cases, clamp and wrap."""
    import time

    for name, fn, shape in CASES[:2] + CASES[3:4]:
        a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        for boundary in ("clamp", "wrap"):
            node = ol.stencil(fn, a, boundary)
            for label, compute in (("compute_s", ol.compute_s), ("compute_p", ol.compute_p)):
                compute(node)
                best = float("inf")
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    compute(node)
                    best = min(best, time.perf_counter() - t0)
                what = f"{name:6} {'x'.join(map(str, shape)):>12} {boundary:8}"
                print(f"{what} {label} {best * 1e3:9.2f} ms", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cpu", action="store_true", help="compute_s and compute_p instead")
    args = ap.parse_args()
    if args.cpu:
        _cpu(args.repeat)
        return
    import cupy as cp

    try:
        from cupyx.scipy import ndimage  # type: ignore[import-not-found]
    except ImportError:  # (no peer column)
        ndimage = None

    ol.config.memory = "device"
    rows = []
    for name, fn, shape in CASES:
        a = cp.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        w = cp.asarray(_weights(name))
        for boundary, mode in MODES.items():
            b = ol.constant(np.float32(0)) if boundary == "constant" else boundary
            node = ol.stencil(fn, a, b)
            ours = _time(cp, lambda node=node: ol.compute_g(node), args.repeat)
            peer = float("nan")
            if ndimage is not None:
                peer = _time(
                    cp, lambda w=w, mode=mode: ndimage.correlate(a, w, mode=mode), args.repeat
                )
            shape_s = "x".join(map(str, shape))
            row = {"stencil": name, "shape": shape_s, "boundary": boundary}
            rows.append({**row, "offload_us": ours, "cupyx_us": peer})
            what = f"{name:6} {shape_s:>12} {boundary:8}"
            print(f"{what} offload {ours:9.1f} us  cupyx.ndimage {peer:9.1f} us", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
