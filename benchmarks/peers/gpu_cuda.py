"""CUDA C peers through ``cupy.RawKernel``: upload in ``prepare``, launch in the timed region."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.peers.base import Outputs, Peer
from benchmarks.peers.cuda_src import SOURCES

Prepare = Callable[[dict[str, Any]], Callable[[], Outputs]]


def _kernel(name: str, entry: str) -> Any:
    import cupy

    return cupy.RawKernel(SOURCES[name], entry, options=("-std=c++17",))


def _dev(inp: dict[str, Any], *names: str) -> list[Any]:
    import cupy

    return [cupy.asarray(inp[n]) for n in names]


def _blocks(n: int, b: int) -> int:
    return (n + b - 1) // b


def _conv1d(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("1d-convolution", "conv1d")
    re, im, w = _dev(inp, "re", "im", "w")
    p = inp["params"]
    ore, oim = cupy.empty(p.n, np.float32), cupy.empty(p.n, np.float32)

    def run() -> Outputs:
        for _ in range(p.iters):
            k((_blocks(p.n, 256),), (256,), (re, im, w, np.int32(p.n), np.int32(p.taps), ore, oim))
        return (ore, oim)

    return run


def _pingpong2(
    kernel: Any,
    first: Any,
    grid: tuple[int, ...],
    block: tuple[int, ...],
    extra: tuple[Any, ...],
    iters: int,
) -> Callable[[], Outputs]:
    import cupy

    bufs = [cupy.empty_like(first), cupy.empty_like(first)]

    def run() -> Outputs:
        src = first
        for it in range(iters):
            kernel(grid, block, (src, bufs[it % 2], *extra))
            src = bufs[it % 2]
        return (src,)

    return run


def _conv2d(inp: dict[str, Any]) -> Callable[[], Outputs]:
    (img,) = _dev(inp, "img")
    p = inp["params"]
    grid = (_blocks(p.cols, 32), _blocks(p.rows, 8))
    return _pingpong2(_kernel("2d-convolution", "conv2d"), img, grid, (32, 8),
                      (np.int32(p.rows), np.int32(p.cols)), p.iters)  # fmt: skip


def _stencil7(inp: dict[str, Any]) -> Callable[[], Outputs]:
    (a,) = _dev(inp, "a")
    nz, ny, nx = a.shape
    grid = (_blocks(nx, 32), _blocks(ny, 8))
    extra = (np.int32(nz), np.int32(ny), np.int32(nx), inp["w1"], inp["w2"])
    return _pingpong2(
        _kernel("7pt-stencil", "stencil7"), a, grid, (32, 8), extra, inp["params"].iters
    )


def _backprojection(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("backprojection", "backproject")
    raw, m = _dev(inp, "raw", "m")
    d = 2 ** inp["params"].vol_bits
    out = cupy.empty((d, d, d), np.float32)

    def run() -> Outputs:
        for _ in range(inp["params"].iters):
            k((_blocks(d, 128), d, d), (128,), (raw, m, out, np.int32(d), np.int32(raw.shape[1])))
        return (out,)

    return run


def _blackscholes(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("blackscholes", "blackscholes")
    arrs = _dev(inp, "s", "k", "r", "v", "t", "put")
    n = inp["params"].n
    out = cupy.empty(n, np.float32)

    def run() -> Outputs:
        for _ in range(inp["params"].iters):
            k((min(_blocks(n, 256), 132 * 32),), (256,), (*arrs, out, np.int32(n)))
        return (out,)

    return run


def _mmult(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("matrix-mult", "sgemm")
    a, b = _dev(inp, "a", "b")
    n = a.shape[0]
    c = cupy.empty_like(a)
    return lambda: (k((_blocks(n, 32), _blocks(n, 32)), (32, 8), (a, b, c, np.int32(n))), c)[1:]


def _nbody(eps: float, g: float) -> Prepare:
    def prepare(inp: dict[str, Any]) -> Callable[[], Outputs]:
        import cupy

        k = _kernel("nbody-accelerate" if "m" in inp else "nbody", "nbody")
        x, y, z = _dev(inp, "x", "y", "z")
        m = cupy.asarray(inp["m"]) if "m" in inp else x
        n = len(x)
        outs = [cupy.empty(n, np.float32) for _ in range(3)]
        args = (x, y, z, m, *outs, np.int32(n), np.float32(eps), np.float32(g))
        return lambda: (k((_blocks(n, 256),), (256,), args), *outs)[1:]

    return prepare


def _treesearch(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("treesearch", "treesearch")
    tree, q = _dev(inp, "tree", "q")
    p = inp["params"]
    out = cupy.empty(p.queries, np.int32)

    def run() -> Outputs:
        for _ in range(p.iters):
            k((min(_blocks(p.queries, 256), 132 * 32),), (256,),
              (tree, q, out, np.int32(p.queries), np.int32(p.depth)))  # fmt: skip
        return (out,)

    return run


def _volrender(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("volume-rendering", "volrender")
    ray0, vis, op = _dev(inp, "ray0", "visible", "opacity")
    p = inp["params"]
    bufs = [cupy.empty_like(ray0), cupy.empty_like(ray0)]
    res = cupy.empty(p.n, np.float32)

    def run() -> Outputs:
        src = ray0
        for it in range(p.iters):
            adv = np.int32(it < p.iters - 1)
            k((_blocks(p.n, 256),), (256,), (src, bufs[it % 2], vis, op, res, np.int32(p.n), adv))
            src = bufs[it % 2]
        return (res,)

    return run


def _dotp(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("dotp", "dotp")
    x, y = _dev(inp, "x", "y")
    s = cupy.zeros(1, np.float32)
    n = len(x)

    def run() -> Outputs:
        s.fill(0)
        k((min(_blocks(n, 256), 132 * 8),), (256,), (x, y, s, np.int32(n)))
        return (s,)

    return run


def _mandelbrot(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("mandelbrot", "mandelbrot")
    p = inp["params"]
    out = cupy.empty((p.height, p.width), np.int32)
    args = (out, np.int32(p.width), np.int32(p.height), inp["x0"], inp["dx"], inp["y0"],
            inp["dy"], np.int32(p.limit))  # fmt: skip
    grid = (_blocks(p.width, 32), _blocks(p.height, 8))
    return lambda: (k(grid, (32, 8), args), out)[1:]


def _smvm(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    k = _kernel("smvm", "smvm")
    rowptr, col, val, x = _dev(inp, "rowptr", "col", "val", "x")
    rows = inp["params"].rows
    y = cupy.empty(rows, np.float32)
    return lambda: (
        k((_blocks(rows * 32, 256),), (256,), (rowptr, col, val, x, y, np.int32(rows))),
        y,
    )[1:]


def _cuda(prep: Prepare) -> list[Peer]:
    return [Peer("cuda", on_gpu=True, prepare=prep, needs=("cupy",))]


PEERS: dict[str, list[Peer]] = {
    "1d-convolution": _cuda(_conv1d),
    "2d-convolution": _cuda(_conv2d),
    "7pt-stencil": _cuda(_stencil7),
    "backprojection": _cuda(_backprojection),
    "blackscholes": _cuda(_blackscholes),
    "matrix-mult": _cuda(_mmult),
    "nbody": _cuda(_nbody(0.005, 9.8)),
    "treesearch": _cuda(_treesearch),
    "volume-rendering": _cuda(_volrender),
    "dotp": _cuda(_dotp),
    "mandelbrot": _cuda(_mandelbrot),
    "nbody-accelerate": _cuda(_nbody(1e-4, 1.0)),
    "smvm": _cuda(_smvm),
}
