"""Library peers on the GPU: CuPy array code / ``cupy.fuse``, cuBLAS, cupyx.scipy.ndimage, JAX."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.peers.base import Outputs, Peer
from benchmarks.suite import blackscholes as bs

C = (0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429)


def _bs_formula(xp: Any) -> Callable[..., Any]:
    def cndf(x: Any) -> Any:
        pos = (x > 0).astype(np.float32)
        sig = 2 * pos - 1
        xq = sig * x
        k = 1 / (1 + np.float32(0.2316419) * xq)
        poly = k * (C[0] + k * (C[1] + k * (C[2] + k * (C[3] + k * C[4]))))
        return pos - sig * (np.float32(bs.INV_SQRT_2PI) * xp.exp(np.float32(-0.5) * xq * xq)) * poly

    def price(s: Any, k: Any, r: Any, v: Any, t: Any, put: Any) -> Any:
        den = v * xp.sqrt(t)
        d1 = ((r + np.float32(0.5) * v * v) * t + xp.log(s / k)) / den
        fv = k * xp.exp(-r * t)
        return s * cndf(d1) - fv * cndf(d1 - den) + put * (fv - s)

    return price


def _bs_cupy(fused: bool) -> Callable[[dict[str, Any]], Callable[[], Outputs]]:
    def prepare(inp: dict[str, Any]) -> Callable[[], Outputs]:
        import cupy

        arrs = [cupy.asarray(inp[n]) for n in ("s", "k", "r", "v", "t", "put")]
        f = _bs_formula(cupy)
        if fused:
            f = cupy.fuse(f)

        def run() -> Outputs:
            for _ in range(inp["params"].iters):
                out = f(*arrs)
            return (out,)

        return run

    return prepare


def _jax_loop(
    fn: Callable[..., Any], args: list[Any], iters: int, feedback: bool = False
) -> Callable[[], Outputs]:
    import jax

    jf = jax.jit(fn)

    def run() -> Outputs:
        out = args[0]
        for _ in range(iters):
            out = jf(out, *args[1:]) if feedback else jf(*args)
        out = out if isinstance(out, tuple) else (out,)
        for o in out:
            o.block_until_ready()
        return out

    return run


def _jax_put(inp: dict[str, Any], *names: str) -> list[Any]:
    import jax

    return [jax.device_put(np.asarray(inp[n])) for n in names]


def _bs_jax(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import jax.numpy as jnp

    return _jax_loop(
        _bs_formula(jnp), _jax_put(inp, "s", "k", "r", "v", "t", "put"), inp["params"].iters
    )


def _conv2d_ndimage(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy
    from cupyx.scipy import ndimage  # type: ignore[import-not-found]

    img, k = cupy.asarray(inp["img"]), cupy.asarray(inp["k"])
    bufs = [cupy.empty_like(img), cupy.empty_like(img)]

    def run() -> Outputs:
        src = img
        for it in range(inp["params"].iters):
            ndimage.correlate(src, k, output=bufs[it % 2], mode="nearest")
            src = bufs[it % 2]
        return (src,)

    return run


def _conv2d_jax(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import jax.numpy as jnp

    h, w = inp["img"].shape

    def step(img: Any, k: Any) -> Any:
        p = jnp.pad(img, 2, mode="edge")
        return sum(k[a, b] * p[a : a + h, b : b + w] for a in range(5) for b in range(5))

    return _jax_loop(step, _jax_put(inp, "img", "k"), inp["params"].iters, feedback=True)


def _stencil_step(xp: Any, w1: Any, w2: Any) -> Callable[[Any], Any]:
    def step(a: Any) -> Any:
        s = (a[2:, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1] + a[1:-1, 2:, 1:-1]
             + a[1:-1, :-2, 1:-1] + a[1:-1, 1:-1, 2:] + a[1:-1, 1:-1, :-2])  # fmt: skip
        return xp.pad(w1 * a[1:-1, 1:-1, 1:-1] + w2 * s, 1)

    return step


def _stencil_cupy(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    a0 = cupy.asarray(inp["a"])
    step = _stencil_step(cupy, inp["w1"], inp["w2"])

    def run() -> Outputs:
        a = a0
        for _ in range(inp["params"].iters):
            a = step(a)
        return (a,)

    return run


def _stencil_jax(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import jax.numpy as jnp

    return _jax_loop(_stencil_step(jnp, inp["w1"], inp["w2"]), _jax_put(inp, "a"),
                     inp["params"].iters, feedback=True)  # fmt: skip


def _mmult_cublas(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    a, b = cupy.asarray(inp["a"]), cupy.asarray(inp["b"])
    return lambda: (cupy.matmul(a, b),)  # FP32 SGEMM: CuPy uses TF32 only if CUPY_TF32=1


def _mmult_jax(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import jax
    import jax.numpy as jnp

    return _jax_loop(lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST),
                     _jax_put(inp, "a", "b"), 1)  # fmt: skip


def _dotp_cupy(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    x, y = cupy.asarray(inp["x"]), cupy.asarray(inp["y"])
    return lambda: (cupy.dot(x, y).reshape(1),)


def _dotp_jax(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import jax.numpy as jnp

    return _jax_loop(lambda x, y: jnp.dot(x, y).reshape(1), _jax_put(inp, "x", "y"), 1)


def _smvm_cusparse(inp: dict[str, Any]) -> Callable[[], Outputs]:
    """``csr_matrix @ x`` in CuPy: cuSPARSE's SpMV (the issue's smvm peer)."""
    import cupy
    from cupyx.scipy import sparse  # type: ignore[import-not-found]

    n = inp["params"].rows
    a = sparse.csr_matrix(
        (cupy.asarray(inp["val"]), cupy.asarray(inp["col"]), cupy.asarray(inp["rowptr"])),
        shape=(n, n),
    )
    x = cupy.asarray(inp["x"])
    return lambda: (a @ x,)


def _sum_cub(inp: dict[str, Any]) -> Callable[[], Outputs]:
    """``cupy.sum`` with CuPy's CUB reduction accelerator on: CUB's ``DeviceReduce``."""
    import cupy
    from cupy import _core

    x = cupy.asarray(inp["x"])

    def run() -> Outputs:
        saved = _core.get_reduction_accelerators()
        _core.set_reduction_accelerators(["cub"])
        try:
            return (cupy.sum(x).reshape(1),)
        finally:
            _core.set_reduction_accelerators(saved)

    return run


def _sum_cupy(inp: dict[str, Any]) -> Callable[[], Outputs]:
    """``cupy.sum`` with no accelerator: CuPy's own reduction kernel."""
    import cupy
    from cupy import _core

    x = cupy.asarray(inp["x"])

    def run() -> Outputs:
        saved = _core.get_reduction_accelerators()
        _core.set_reduction_accelerators([])
        try:
            return (cupy.sum(x).reshape(1),)
        finally:
            _core.set_reduction_accelerators(saved)

    return run


def _sum_jax(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import jax.numpy as jnp

    return _jax_loop(lambda x: jnp.sum(x).reshape(1), _jax_put(inp, "x"), 1)


def _histogram_cupy(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    x, bins = cupy.asarray(inp["x"]), inp["params"].bins
    scale = cupy.float32(bins)
    return lambda: (cupy.bincount(cupy.minimum((x * scale).astype(cupy.int64), bins - 1),
                                  minlength=bins),)  # fmt: skip


def _prefix_sum_cupy(inp: dict[str, Any]) -> Callable[[], Outputs]:
    import cupy

    x = cupy.asarray(inp["x"])
    return lambda: (cupy.cumsum(x),)


PEERS: dict[str, list[Peer]] = {
    "blackscholes": [
        Peer("cupy", True, _bs_cupy(fused=False), ("cupy",)),
        Peer("cupy.fuse", True, _bs_cupy(fused=True), ("cupy",)),
        Peer("jax", True, _bs_jax, ("jax",)),
    ],
    "2d-convolution": [
        Peer("ndimage", True, _conv2d_ndimage, ("cupy", "cupyx.scipy.ndimage")),
        Peer("jax", True, _conv2d_jax, ("jax",)),
    ],
    "7pt-stencil": [
        Peer("cupy", True, _stencil_cupy, ("cupy",)),
        Peer("jax", True, _stencil_jax, ("jax",)),
    ],
    "matrix-mult": [
        Peer("cublas", True, _mmult_cublas, ("cupy",)),
        Peer("jax", True, _mmult_jax, ("jax",)),
    ],
    "dotp": [Peer("cublas", True, _dotp_cupy, ("cupy",)), Peer("jax", True, _dotp_jax, ("jax",))],
    "smvm": [Peer("cusparse", True, _smvm_cusparse, ("cupy", "cupyx.scipy.sparse"))],
    "sum": [
        Peer("cub", True, _sum_cub, ("cupy",)),
        Peer("cupy", True, _sum_cupy, ("cupy",)),
        Peer("jax", True, _sum_jax, ("jax",)),
    ],
    "histogram": [Peer("cupy.bincount", True, _histogram_cupy, ("cupy",))],
    "prefix-sum": [Peer("cupy.cumsum", True, _prefix_sum_cupy, ("cupy",))],
}
