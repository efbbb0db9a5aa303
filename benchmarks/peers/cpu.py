"""NumPy peers: vectorised float32 array code, as a NumPy user would write each benchmark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.peers.base import Outputs, Peer
from benchmarks.suite import blackscholes as bs
from benchmarks.suite import conv2d, volrender

Arr = np.ndarray[Any, Any]


def _conv1d(inp: dict[str, Any]) -> Callable[[], Outputs]:
    re, im, w, p = inp["re"], inp["im"], inp["w"], inp["params"]

    def run() -> Outputs:
        for _ in range(p.iters):
            a = np.correlate(re, w, "valid")[: p.n]
            b = np.correlate(im, w, "valid")[: p.n]
        return (a - b, a + b)

    return run


def _conv2d(inp: dict[str, Any]) -> Callable[[], Outputs]:
    k, p = inp["k"], inp["params"]

    def run() -> Outputs:
        img = inp["img"]
        for _ in range(p.iters):
            pad = np.pad(img, 2, mode="edge")
            out = np.zeros_like(img)
            for a in range(5):
                for b in range(5):
                    out += k[a, b] * pad[a : a + p.rows, b : b + p.cols]
            img = out
        return (img,)

    return run


def _stencil7(inp: dict[str, Any]) -> Callable[[], Outputs]:
    w1, w2, iters = inp["w1"], inp["w2"], inp["params"].iters

    def run() -> Outputs:
        a = inp["a"].copy()
        b = np.zeros_like(a)
        for _ in range(iters):
            s = (a[2:, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1] + a[1:-1, 2:, 1:-1]
                 + a[1:-1, :-2, 1:-1] + a[1:-1, 1:-1, 2:] + a[1:-1, 1:-1, :-2])  # fmt: skip
            b[1:-1, 1:-1, 1:-1] = w1 * a[1:-1, 1:-1, 1:-1] + w2 * s
            a, b = b, a
        return (a,)

    return run


def _backprojection(inp: dict[str, Any]) -> Callable[[], Outputs]:
    d = 2 ** inp["params"].vol_bits
    m, raw = inp["m"], inp["raw"]
    i, j, k = np.meshgrid(*(np.arange(d, dtype=np.float32),) * 3, indexing="ij")

    def run() -> Outputs:
        for _ in range(inp["params"].iters):
            w = np.float32(1.0) / (m[3, 0] * i + m[3, 1] * j + m[3, 3] + m[3, 2] * k)
            rl = w * (m[1, 0] * i + m[1, 1] * j + m[1, 3] + m[1, 2] * k)
            rm = w * (m[0, 0] * i + m[0, 1] * j + m[0, 3] + m[0, 2] * k)
            row, n = rl.astype(np.int32), rm.astype(np.int32)
            wl, wm = rl - row, rm - n
            top = (1 - wm) * raw[row, n] + wm * raw[row, n + 1]
            bot = (1 - wm) * raw[row + 1, n] + wm * raw[row + 1, n + 1]
            out = w * w * ((1 - wl) * top + wl * bot)
        return (out,)

    return run


def _cndf32(x: Arr) -> Arr:
    pos = (x > 0).astype(np.float32)
    sig = 2 * pos - 1
    xp = sig * x
    tmp = np.float32(bs.INV_SQRT_2PI) * np.exp(np.float32(-0.5) * xp * xp)
    k = 1 / (1 + np.float32(0.2316419) * xp)
    c = [np.float32(v) for v in (0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429)]
    poly = k * (c[0] + k * (c[1] + k * (c[2] + k * (c[3] + k * c[4]))))
    return pos - sig * tmp * poly  # type: ignore[no-any-return]


def _blackscholes(inp: dict[str, Any]) -> Callable[[], Outputs]:
    s, k, r, v, t, put = (inp[n] for n in ("s", "k", "r", "v", "t", "put"))

    def run() -> Outputs:
        for _ in range(inp["params"].iters):
            den = v * np.sqrt(t)
            d1 = ((r + np.float32(0.5) * v * v) * t + np.log(s / k)) / den
            fv = k * np.exp(-r * t)
            out = s * _cndf32(d1) - fv * _cndf32(d1 - den) + put * (fv - s)
        return (out,)

    return run


def _mmult(inp: dict[str, Any]) -> Callable[[], Outputs]:
    return lambda: (inp["a"] @ inp["b"],)


def _nbody(
    scale: float, eps: float, with_mass: bool
) -> Callable[[dict[str, Any]], Callable[[], Outputs]]:
    def prepare(inp: dict[str, Any]) -> Callable[[], Outputs]:
        p = np.stack([inp["x"], inp["y"], inp["z"]], axis=1)
        m = inp["m"] if with_mass else np.ones(len(p), np.float32)

        def run() -> Outputs:
            acc = np.empty_like(p)
            for lo in range(0, len(p), 256):  # blocks of rows keep the N x 256 temporaries small
                d = p[None, :, :] - p[lo : lo + 256, None, :]
                inv = 1 / np.sqrt((d * d).sum(-1) + np.float32(eps))
                acc[lo : lo + 256] = np.float32(scale) * ((m * inv**3)[..., None] * d).sum(1)
            return (acc[:, 0], acc[:, 1], acc[:, 2])

        return run

    return prepare


def _treesearch(inp: dict[str, Any]) -> Callable[[], Outputs]:
    tree, q, depth = inp["tree"], inp["q"], inp["params"].depth

    def run() -> Outputs:
        for _ in range(inp["params"].iters):
            o = np.zeros(len(q), dtype=np.int32)
            for _ in range(depth):
                o = 2 * o + 1 + (q > tree[o])
        return (o - np.int32(2**depth - 1),)

    return run


def _volrender(inp: dict[str, Any]) -> Callable[[], Outputs]:
    p = inp["params"]
    vis, op = inp["visible"], inp["opacity"]
    idx = np.arange(p.n)

    def run() -> Outputs:
        lengths = inp["ray0"]
        for it in range(p.iters):
            res = np.zeros(p.n, np.float32)
            done = np.zeros(p.n, bool)
            for k in range(volrender.MAX_LEN):
                o = op[idx + k]
                hit = ~done & (k < lengths) & (vis[idx + k] != 0) & (o != 0)
                res[hit] = o[hit] + np.float32(1)
                done |= hit
            if it < p.iters - 1:
                lengths = (lengths + 1) % volrender.MAX_LEN
        return (res,)

    return run


def _dotp(inp: dict[str, Any]) -> Callable[[], Outputs]:
    return lambda: (np.array([np.dot(inp["x"], inp["y"])]),)


def _mandelbrot(inp: dict[str, Any]) -> Callable[[], Outputs]:
    from benchmarks.suite.mandelbrot import BENCHMARK

    return lambda: BENCHMARK.reference(inp)  # already vectorised float32 NumPy


def _smvm(inp: dict[str, Any]) -> Callable[[], Outputs]:
    rowptr, col, val, x = inp["rowptr"], inp["col"], inp["val"], inp["x"]
    starts = rowptr[:-1]

    def run() -> Outputs:
        prod = val * x[col]
        return (np.add.reduceat(prod, starts) if len(prod) else prod,)

    return run


def _histogram(inp: dict[str, Any]) -> Callable[[], Outputs]:
    x, bins = inp["x"], inp["params"].bins
    return lambda: (np.bincount(np.minimum((x * np.float32(bins)).astype(np.int64), bins - 1),
                                minlength=bins),)  # fmt: skip


def _prefix_sum(inp: dict[str, Any]) -> Callable[[], Outputs]:
    return lambda: (np.cumsum(inp["x"]),)


def _numpy(prep: Callable[[dict[str, Any]], Callable[[], Outputs]]) -> list[Peer]:
    return [Peer("numpy", on_gpu=False, prepare=prep)]


PEERS: dict[str, list[Peer]] = {
    "1d-convolution": _numpy(_conv1d),
    "2d-convolution": _numpy(_conv2d),
    "7pt-stencil": _numpy(_stencil7),
    "backprojection": _numpy(_backprojection),
    "blackscholes": _numpy(_blackscholes),
    "matrix-mult": _numpy(_mmult),
    "nbody": _numpy(_nbody(9.8, 0.005, with_mass=False)),
    "treesearch": _numpy(_treesearch),
    "volume-rendering": _numpy(_volrender),
    "dotp": _numpy(_dotp),
    "mandelbrot": _numpy(_mandelbrot),
    "nbody-accelerate": _numpy(_nbody(1.0, 1e-4, with_mass=True)),
    "smvm": _numpy(_smvm),
    "histogram": _numpy(_histogram),
    "prefix-sum": _numpy(_prefix_sum),
}
_ = conv2d  # the kernel K comes with the inputs
