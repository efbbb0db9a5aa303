"""Element-function ports of well-known kernels from public code, written as the original is.

Each port names the project and file it comes from. The element function is what a user
writes when the original's loop body becomes ``def f(i, j)`` reading captured arrays: the
original's constructs are kept (rows ``a[i]``, ``np.sum`` over views, local arrays,
``for x in row``, uint64 constants, ``np.clip``...), never rewritten around what offload
accepts today. ``reference`` is the original itself (its NumPy form, or its loops in plain
Python over NumPy scalars), so a port is checked against the code it came from.

A port is a factory ``make(n, rng) -> Case``: ``n`` scales the problem (small for the
simulator), ``rng`` fills the inputs. ``Port.rtol`` is 0 where the element function does
the original's arithmetic in the original's order (the results must be the same bits);
otherwise ``why`` says where the difference comes from.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Rng = np.random.Generator


@dataclass(frozen=True)
class Case:
    """One instance of a port: the index space, the element function and the expected
    result(s) computed by the original code."""

    shape: tuple[int, ...]
    fn: Callable[..., Any]
    want: Any
    """An array, or a tuple of arrays for a tuple-returning element function."""


@dataclass(frozen=True)
class Port:
    name: str
    origin: str
    """The project and file the kernel is ported from."""
    make: Callable[[int, Rng], Case]
    rtol: float = 0.0
    atol: float = 0.0
    why: str = ""
    """Why the result may differ from the original's (empty where it must be exact)."""


PORTS: dict[str, Port] = {}

_LIBM = "a transcendental call: the target's libm/libdevice may differ from NumPy's by an ulp"


def port(
    origin: str, *, rtol: float = 0.0, atol: float = 0.0, why: str = ""
) -> Callable[[Callable[[int, Rng], Case]], Callable[[int, Rng], Case]]:
    def register(make: Callable[[int, Rng], Case]) -> Callable[[int, Rng], Case]:
        assert (rtol == 0.0 and atol == 0.0) or why, make.__name__
        PORTS[make.__name__] = Port(make.__name__, origin, make, rtol, atol, why)
        return make

    return register


def loops(shape: tuple[int, ...], body: Callable[..., Any], dtype: Any) -> np.ndarray:
    """The original's loop nest in plain Python: ``out[idx] = body(*idx)``."""
    out = np.empty(shape, dtype)
    for idx in np.ndindex(*shape):
        out[idx] = body(*idx)
    return out


# ---------------------------------------------------------------------------------------
# numba's documentation and examples


@port(
    "numba docs: '5 minute guide to Numba' go_fast (also NPBench npbench/benchmarks/go_fast)",
    rtol=1e-15,
    why=_LIBM + " (np.tanh)",
)
def go_fast(n: int, rng: Rng) -> Case:
    a = rng.random((n, n))

    def f(i, j):
        trace = 0.0
        for k in range(a.shape[0]):
            trace += np.tanh(a[k, k])
        return a[i, j] + trace

    trace = 0.0
    for k in range(a.shape[0]):
        trace += np.tanh(a[k, k])
    return Case((n, n), f, a + trace)


@port("numba docs: CUDA kernels, 'matmul' (numba/cuda/tests/doc_examples/test_matmul.py)")
def matmul_cuda_docs(n: int, rng: Rng) -> Case:
    A = rng.random((n, n + 3))
    B = rng.random((n + 3, n))

    def f(i, j):
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        return tmp

    def ref(i, j):
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        return tmp

    return Case((n, n), f, loops((n, n), ref, np.float64))


@port("numba docs: numba.stencil, 'kernel1' (0.25 * the 4 neighbours; 0 on the border)")
def stencil_kernel1(n: int, rng: Rng) -> Case:
    a = rng.random((n, n))

    def f(i, j):
        if i == 0 or j == 0 or i == a.shape[0] - 1 or j == a.shape[1] - 1:
            return 0.0
        return 0.25 * (a[i, j + 1] + a[i + 1, j] + a[i, j - 1] + a[i - 1, j])

    want = np.zeros_like(a)
    want[1:-1, 1:-1] = 0.25 * (a[1:-1, 2:] + a[2:, 1:-1] + a[1:-1, :-2] + a[:-2, 1:-1])
    return Case((n, n), f, want)


@port("numba examples: examples/mandel/mandel_jit.py (mandel with complex z)")
def mandelbrot_complex(n: int, rng: Rng) -> Case:
    max_iters = 20
    min_x, max_x, min_y, max_y = -2.0, 1.0, -1.0, 1.0

    def mandel(x, y, max_iters):
        c = complex(x, y)
        z = 0.0j
        for i in range(max_iters):
            z = z * z + c
            if (z.real * z.real + z.imag * z.imag) >= 4:
                return i
        return 255

    def f(i, j):
        real = min_x + j * (max_x - min_x) / n
        imag = min_y + i * (max_y - min_y) / n
        return mandel(real, imag, max_iters)

    def ref(i, j):
        real = min_x + j * (max_x - min_x) / n
        imag = min_y + i * (max_y - min_y) / n
        return mandel(real, imag, max_iters)

    return Case((n, n), f, loops((n, n), ref, np.int64))


@port("Jake VanderPlas, 'Numba vs. Cython: Take 2' pairwise_python (pairwise distances)")
def pairwise_distance(n: int, rng: Rng) -> Case:
    X = rng.random((n, 3))

    def f(i, j):
        d = 0.0
        for k in range(X.shape[1]):
            tmp = X[i, k] - X[j, k]
            d += tmp * tmp
        return np.sqrt(d)

    def ref(i, j):
        d = 0.0
        for k in range(X.shape[1]):
            tmp = X[i, k] - X[j, k]
            d += tmp * tmp
        return np.sqrt(d)

    return Case((n, n), f, loops((n, n), ref, np.float64))


# ---------------------------------------------------------------------------------------
# NPBench (spcl/npbench, npbench/benchmarks/...)


@port("NPBench npbench/benchmarks/polybench/jacobi_1d (B[1:-1] = 0.33333 * (A[:-2] + ...))")
def jacobi_1d(n: int, rng: Rng) -> Case:
    A = rng.random(n * n)
    m = A.shape[0]

    def f(i):
        if i == 0 or i == m - 1:
            return A[i]
        return 0.33333 * (A[i - 1] + A[i] + A[i + 1])

    want = A.copy()
    want[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
    return Case((m,), f, want)


@port("NPBench npbench/benchmarks/polybench/jacobi_2d (0.2 * the 5-point sum)")
def jacobi_2d(n: int, rng: Rng) -> Case:
    A = rng.random((n, n))

    def f(i, j):
        if i == 0 or j == 0 or i == n - 1 or j == n - 1:
            return A[i, j]
        return 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])

    want = A.copy()
    want[1:-1, 1:-1] = 0.2 * (
        A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
    )
    return Case((n, n), f, want)


@port("NPBench npbench/benchmarks/polybench/heat_3d (one half step, 0.125 * second differences)")
def heat_3d(n: int, rng: Rng) -> Case:
    m = max(n // 2, 3)
    A = rng.random((m, m, m))

    def f(i, j, k):
        if i == 0 or j == 0 or k == 0 or i == m - 1 or j == m - 1 or k == m - 1:
            return A[i, j, k]
        return (
            0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
            + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
            + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
            + A[i, j, k]
        )

    want = A.copy()
    want[1:-1, 1:-1, 1:-1] = (
        0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
        + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
        + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, 0:-2])
        + A[1:-1, 1:-1, 1:-1]
    )
    return Case((m, m, m), f, want)


@port(
    "NPBench npbench/benchmarks/polybench/gemm (C = alpha * A @ B + beta * C)",
    rtol=1e-14,
    why="A @ B sums in BLAS's order",
)
def gemm_numpy(n: int, rng: Rng) -> Case:
    A, B, C = rng.random((n, n + 1)), rng.random((n + 1, n)), rng.random((n, n))
    alpha, beta = 1.5, 1.2

    def f(i, j):
        return alpha * A[i, :] @ B[:, j] + beta * C[i, j]

    return Case((n, n), f, alpha * A @ B + beta * C)


@port("PolyBench/C 4.2 linear-algebra/blas/gemm/gemm.c (C[i][j] += alpha * A[i][k] * B[k][j])")
def gemm_polybench_c(n: int, rng: Rng) -> Case:
    A, B, C = rng.random((n, n + 1)), rng.random((n + 1, n)), rng.random((n, n))
    alpha, beta = 1.5, 1.2
    nk = A.shape[1]

    def f(i, j):
        c = C[i][j] * beta
        for k in range(nk):
            c += alpha * A[i][k] * B[k][j]
        return c

    def ref(i, j):
        c = C[i][j] * beta
        for k in range(nk):
            c += alpha * A[i][k] * B[k][j]
        return c

    return Case((n, n), f, loops((n, n), ref, np.float64))


@port(
    "NPBench npbench/benchmarks/arc_distance (sin/cos/arctan2 great-circle distance)",
    rtol=1e-13,
    why=_LIBM + " (sin, cos, sqrt, arctan2)",
)
def arc_distance(n: int, rng: Rng) -> Case:
    m = n * n
    theta_1, phi_1, theta_2, phi_2 = (rng.random(m) for _ in range(4))

    def f(i):
        temp = (
            np.sin((theta_2[i] - theta_1[i]) / 2) ** 2
            + np.cos(theta_1[i]) * np.cos(theta_2[i]) * np.sin((phi_2[i] - phi_1[i]) / 2) ** 2
        )
        return 2 * (np.arctan2(np.sqrt(temp), np.sqrt(1 - temp)))

    temp = (
        np.sin((theta_2 - theta_1) / 2) ** 2
        + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2
    )
    return Case((m,), f, 2 * (np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))))


@port(
    "NPBench npbench/benchmarks/deep_learning/softmax (max, exp, sum over the last axis)",
    rtol=1e-6,
    why=_LIBM + " (np.exp), and NumPy sums the row pairwise: float32, a few ulp",
)
def softmax_row(n: int, rng: Rng) -> Case:
    x = rng.random((n, n + 5)).astype(np.float32)

    def f(i, j):
        tmp_max = np.max(x[i, :])
        tmp_sum = np.sum(np.exp(x[i, :] - tmp_max))
        return np.exp(x[i, j] - tmp_max) / tmp_sum

    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    return Case(x.shape, f, tmp_out / np.sum(tmp_out, axis=-1, keepdims=True))


@port("NPBench npbench/benchmarks/deep_learning/mlp (relu: np.maximum(x, 0))")
def relu(n: int, rng: Rng) -> Case:
    x = rng.standard_normal((n, n)).astype(np.float32)

    def f(i, j):
        return np.maximum(x[i, j], 0)

    return Case((n, n), f, np.maximum(x, 0))


@port(
    "NPBench npbench/benchmarks/nbody (getAcc: G * dx * inv_r3, softened, summed over j)",
    rtol=1e-12,
    why="x**(-1.5): the target's pow may differ from NumPy's by an ulp",
)
def nbody_acc(n: int, rng: Rng) -> Case:
    pos = rng.random((n, 3))
    mass = rng.random(n) + 0.5
    G, softening = 1.0, 0.1

    def f(i, d):
        a = 0.0
        for j in range(pos.shape[0]):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2) ** (-1.5)
            a += G * (pos[j, d] - pos[i, d]) * inv_r3 * mass[j]
        return a

    def ref(i, d):
        a = 0.0
        for j in range(pos.shape[0]):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2) ** (-1.5)
            a += G * (pos[j, d] - pos[i, d]) * inv_r3 * mass[j]
        return a

    return Case((n, 3), f, loops((n, 3), ref, np.float64))


@port("NPBench npbench/benchmarks/spmv (CSR: sum of data[k] * x[indices[k]] over a row)")
def spmv_csr(n: int, rng: Rng) -> Case:
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.3)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int64)
    indices = np.nonzero(dense)[1].astype(np.int64)
    data = dense[dense != 0]
    x = rng.random(n)

    def f(i):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        return s

    def ref(i):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        return s

    return Case((n,), f, loops((n,), ref, np.float64))


@port(
    "NPBench npbench/benchmarks/deep_learning/conv2d_bias (np.sum over a window * weights)",
    rtol=1e-13,
    why="NumPy sums the window pairwise",
)
def conv2d_window(n: int, rng: Rng) -> Case:
    K = 3
    inp = rng.random((n + K - 1, n + K - 1))
    weights = rng.random((K, K))

    def f(i, j):
        return np.sum(inp[i : i + K, j : j + K] * weights)

    want = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            want[i, j] = np.sum(inp[i : i + K, j : j + K] * weights)
    return Case((n, n), f, want)


# ---------------------------------------------------------------------------------------
# Rodinia (rodinia_3.1/openmp/...)


@port("Rodinia openmp/hotspot/hotspot_openmp.cpp single_iteration (interior cells)")
def hotspot(n: int, rng: Rng) -> Case:
    temp = (rng.random((n, n)) * 20 + 320).astype(np.float32)
    power = rng.random((n, n)).astype(np.float32)
    Cap, Rx, Ry, Rz, amb = (np.float32(v) for v in (0.5, 2.0, 2.0, 4.0, 80.0))
    step = np.float32(0.001)

    def f(r, c):
        if r == 0 or c == 0 or r == n - 1 or c == n - 1:
            return temp[r, c]
        delta = (step / Cap) * (
            power[r, c]
            + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * temp[r, c]) / Ry
            + (temp[r, c + 1] + temp[r, c - 1] - 2.0 * temp[r, c]) / Rx
            + (amb - temp[r, c]) / Rz
        )
        return temp[r, c] + delta

    def ref(r, c):
        if r == 0 or c == 0 or r == n - 1 or c == n - 1:
            return temp[r, c]
        delta = (step / Cap) * (
            power[r, c]
            + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * temp[r, c]) / Ry
            + (temp[r, c + 1] + temp[r, c - 1] - 2.0 * temp[r, c]) / Rx
            + (amb - temp[r, c]) / Rz
        )
        return temp[r, c] + delta

    return Case((n, n), f, loops((n, n), ref, np.float32))


def euclid_dist_2(pt1, pt2, numdims):
    """Rodinia kmeans_clustering.c euclid_dist_2, over two rows."""
    ans = 0.0
    for i in range(numdims):
        ans += (pt1[i] - pt2[i]) * (pt1[i] - pt2[i])
    return ans


@port("Rodinia openmp/kmeans/kmeans_serial/kmeans_clustering.c find_nearest_point")
def kmeans_nearest(n: int, rng: Rng) -> Case:
    feature = rng.random((n * 2, 4)).astype(np.float32)
    clusters = rng.random((5, 4)).astype(np.float32)
    nfeatures, nclusters = feature.shape[1], clusters.shape[0]

    def f(i):
        index = 0
        min_dist = np.inf
        for k in range(nclusters):
            dist = euclid_dist_2(feature[i], clusters[k], nfeatures)
            if dist < min_dist:
                min_dist = dist
                index = k
        return index

    def ref(i):
        index = 0
        min_dist = np.inf
        for k in range(nclusters):
            dist = euclid_dist_2(feature[i], clusters[k], nfeatures)
            if dist < min_dist:
                min_dist = dist
                index = k
        return index

    return Case((n * 2,), f, loops((n * 2,), ref, np.int64))


@port("Rodinia openmp/nn/nn_openmp.c (distance of each record to the target lat/lng)")
def nearest_neighbour(n: int, rng: Rng) -> Case:
    lat = (rng.random(n * n) * 180 - 90).astype(np.float32)
    lng = (rng.random(n * n) * 360 - 180).astype(np.float32)
    tlat, tlng = np.float32(30.0), np.float32(90.0)

    def f(i):
        return np.sqrt((lat[i] - tlat) * (lat[i] - tlat) + (lng[i] - tlng) * (lng[i] - tlng))

    return Case((n * n,), f, np.sqrt((lat - tlat) * (lat - tlat) + (lng - tlng) * (lng - tlng)))


@port("Rodinia openmp/pathfinder/pathfinder.cpp (dst[n] = wall[t+1][n] + min of 3 in src)")
def pathfinder_step(n: int, rng: Rng) -> Case:
    cols = n * 2
    wall = rng.integers(0, 10, (3, cols)).astype(np.int64)
    src = rng.integers(0, 30, cols).astype(np.int64)
    t = 0

    def f(c):
        m = src[c]
        if c > 0:
            m = min(m, src[c - 1])
        if c < cols - 1:
            m = min(m, src[c + 1])
        return wall[t + 1][c] + m

    def ref(c):
        m = src[c]
        if c > 0:
            m = min(m, src[c - 1])
        if c < cols - 1:
            m = min(m, src[c + 1])
        return wall[t + 1][c] + m

    return Case((cols,), f, loops((cols,), ref, np.int64))


def squash(x):
    """Rodinia backprop.c squash: the logistic function."""
    return 1.0 / (1.0 + math.exp(-x))


@port(
    "Rodinia openmp/backprop/backprop.c bpnn_layerforward (sum conn[k][j] * l1[k], squash)",
    rtol=1e-15,
    why=_LIBM + " (exp)",
)
def backprop_layerforward(n: int, rng: Rng) -> Case:
    n1 = n + 2
    l1 = rng.random(n1 + 1)
    conn = rng.random((n1 + 1, n)) - 0.5

    def f(j):
        s = 0.0
        for k in range(n1 + 1):
            s += conn[k][j] * l1[k]
        return squash(s)

    def ref(j):
        s = 0.0
        for k in range(n1 + 1):
            s += conn[k][j] * l1[k]
        return squash(s)

    return Case((n,), f, loops((n,), ref, np.float64))


# ---------------------------------------------------------------------------------------
# NVIDIA CUDA samples (cuda-samples/Samples/...)


@port("CUDA samples 0_Introduction/vectorAdd/vectorAdd.cu (C[i] = A[i] + B[i])")
def vector_add(n: int, rng: Rng) -> Case:
    A = rng.random(n * n).astype(np.float32)
    B = rng.random(n * n).astype(np.float32)

    def f(i):
        return A[i] + B[i]

    return Case((n * n,), f, A + B)


@port("numba docs / CUDA C guide saxpy (y[i] = a * x[i] + y[i])")
def saxpy(n: int, rng: Rng) -> Case:
    x = rng.random(n * n).astype(np.float32)
    y = rng.random(n * n).astype(np.float32)
    a = np.float32(2.5)

    def f(i):
        return a * x[i] + y[i]

    return Case((n * n,), f, a * x + y)


@port("CUDA samples 6_Performance/transpose/transpose.cu (odata[x][y] = idata[y][x])")
def transpose(n: int, rng: Rng) -> Case:
    idata = rng.random((n, n + 3)).astype(np.float32)

    def f(x, y):
        return idata[y, x]

    return Case((n + 3, n), f, idata.T.copy())


def cnd(d):
    """CUDA samples BlackScholes_gold.cpp CND: the polynomial approximation of N(d)."""
    A1, A2, A3 = 0.31938153, -0.356563782, 1.781477937
    A4, A5 = -1.821255978, 1.330274429
    RSQRT2PI = 0.39894228040143267793994605993438
    K = 1.0 / (1.0 + 0.2316419 * abs(d))
    cnd = RSQRT2PI * math.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    if d > 0:
        cnd = 1.0 - cnd
    return cnd


@port(
    "CUDA samples 5_Domain_Specific/BlackScholes/BlackScholes_gold.cpp (call and put)",
    rtol=1e-13,
    atol=1e-13,
    why=_LIBM + " (exp, log, sqrt)",
)
def black_scholes(n: int, rng: Rng) -> Case:
    S = rng.uniform(5.0, 30.0, n * n)
    X = rng.uniform(1.0, 100.0, n * n)
    T = rng.uniform(0.25, 10.0, n * n)
    R, V = 0.02, 0.30

    def f(i):
        sqrtT = math.sqrt(T[i])
        d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT)
        d2 = d1 - V * sqrtT
        CNDD1 = cnd(d1)
        CNDD2 = cnd(d2)
        expRT = math.exp(-R * T[i])
        call = S[i] * CNDD1 - X[i] * expRT * CNDD2
        put = X[i] * expRT * (1.0 - CNDD2) - S[i] * (1.0 - CNDD1)
        return call, put

    def ref(i):
        sqrtT = math.sqrt(T[i])
        d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT)
        d2 = d1 - V * sqrtT
        expRT = math.exp(-R * T[i])
        return (
            S[i] * cnd(d1) - X[i] * expRT * cnd(d2),
            X[i] * expRT * (1.0 - cnd(d2)) - S[i] * (1.0 - cnd(d1)),
        )

    m = n * n
    calls = np.array([ref(i)[0] for i in range(m)])
    puts = np.array([ref(i)[1] for i in range(m)])
    return Case((m,), f, (calls, puts))


@port(
    "CUDA samples 5_Domain_Specific/binomialOptions/binomialOptions_gold.cpp (Call[] array)",
    rtol=1e-13,
    why=_LIBM + " (exp, sqrt)",
)
def binomial_options(n: int, rng: Rng) -> Case:
    S = rng.uniform(5.0, 30.0, n)
    X = rng.uniform(1.0, 100.0, n)
    T = rng.uniform(0.25, 10.0, n)
    R, V = 0.06, 0.10
    NUM_STEPS = 16

    def f(o):
        Call = np.zeros(NUM_STEPS + 1)
        dt = T[o] / NUM_STEPS
        vDt = V * math.sqrt(dt)
        rDt = R * dt
        If = math.exp(rDt)
        Df = math.exp(-rDt)
        u = math.exp(vDt)
        d = math.exp(-vDt)
        pu = (If - d) / (u - d)
        pd = 1.0 - pu
        puByDf = pu * Df
        pdByDf = pd * Df
        for i in range(NUM_STEPS + 1):
            Call[i] = max(S[o] * math.exp(vDt * (2.0 * i - NUM_STEPS)) - X[o], 0.0)
        for i in range(NUM_STEPS, 0, -1):
            for j in range(i):
                Call[j] = puByDf * Call[j + 1] + pdByDf * Call[j]
        return Call[0]

    def ref(o):
        Call = [0.0] * (NUM_STEPS + 1)
        dt = T[o] / NUM_STEPS
        vDt = V * math.sqrt(dt)
        rDt = R * dt
        If, Df = math.exp(rDt), math.exp(-rDt)
        u, d = math.exp(vDt), math.exp(-vDt)
        pu = (If - d) / (u - d)
        puByDf, pdByDf = pu * Df, (1.0 - pu) * Df
        for i in range(NUM_STEPS + 1):
            Call[i] = max(S[o] * math.exp(vDt * (2.0 * i - NUM_STEPS)) - X[o], 0.0)
        for i in range(NUM_STEPS, 0, -1):
            for j in range(i):
                Call[j] = puByDf * Call[j + 1] + pdByDf * Call[j]
        return Call[0]

    return Case((n,), f, loops((n,), ref, np.float64))


@port(
    "CUDA samples 2_Concepts_and_Techniques/convolutionSeparable/convolutionSeparable_gold.cpp"
    " (row pass, clamped to zero outside)"
)
def convolution_row(n: int, rng: Rng) -> Case:
    KERNEL_RADIUS = 2
    kernel = rng.random(2 * KERNEL_RADIUS + 1).astype(np.float32)
    src = rng.random((n, n * 2)).astype(np.float32)
    w = src.shape[1]

    def f(y, x):
        total = np.float32(0.0)
        for k in range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
            d = x + k
            if d >= 0 and d < w:
                total += src[y, d] * kernel[KERNEL_RADIUS - k]
        return total

    def ref(y, x):
        total = np.float32(0.0)
        for k in range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
            d = x + k
            if d >= 0 and d < w:
                total += src[y, d] * kernel[KERNEL_RADIUS - k]
        return total

    return Case(src.shape, f, loops(src.shape, ref, np.float32))


@port(
    "CUDA samples 2_Concepts_and_Techniques/boxFilter/boxFilter_cpu.cpp (mean of a clamped "
    "window, rows)"
)
def box_filter_row(n: int, rng: Rng) -> Case:
    r = 2
    src = rng.random((n, n * 2)).astype(np.float32)
    w = src.shape[1]
    scale = np.float32(1.0 / (2 * r + 1))

    def f(y, x):
        t = np.float32(0.0)
        for k in range(-r, r + 1):
            t += src[y, min(max(x + k, 0), w - 1)]
        return t * scale

    def ref(y, x):
        t = np.float32(0.0)
        for k in range(-r, r + 1):
            t += src[y, min(max(x + k, 0), w - 1)]
        return t * scale

    return Case(src.shape, f, loops(src.shape, ref, np.float32))


@port("CUDA samples 5_Domain_Specific/Mandelbrot/Mandelbrot_gold.cpp (real arithmetic loop)")
def mandelbrot_real(n: int, rng: Rng) -> Case:
    crunch = 32
    xOff, yOff, scale = -0.5, 0.0, 3.0 / n

    def f(iy, ix):
        xC = xOff + (ix - n / 2) * scale
        yC = yOff + (iy - n / 2) * scale
        x, y = xC, yC
        count = 0
        while count < crunch:
            xx, yy = x * x, y * y
            if xx + yy > 4.0:
                break
            y = 2.0 * x * y + yC
            x = xx - yy + xC
            count += 1
        return count

    def ref(iy, ix):
        xC = xOff + (ix - n / 2) * scale
        yC = yOff + (iy - n / 2) * scale
        x, y = xC, yC
        count = 0
        while count < crunch:
            xx, yy = x * x, y * y
            if xx + yy > 4.0:
                break
            y = 2.0 * x * y + yC
            x = xx - yy + xC
            count += 1
        return count

    return Case((n, n), f, loops((n, n), ref, np.int64))


# ---------------------------------------------------------------------------------------
# Taichi examples (taichi-dev/taichi, python/taichi/examples/...)


def complex_sqr(z0, z1):
    """Taichi fractal.py complex_sqr, on a (re, im) pair."""
    return z0 * z0 - z1 * z1, z1 * z0 * 2


@port("Taichi python/taichi/examples/simulation/fractal.py (julia set, iterations < 50)")
def julia_taichi(n: int, rng: Rng) -> Case:
    c0, c1 = -0.8, 0.2

    def f(i, j):
        z0 = (i / n - 1) * 2
        z1 = (j / n - 0.5) * 2
        iterations = 0
        while z0 * z0 + z1 * z1 < 400 and iterations < 50:
            z0, z1 = complex_sqr(z0, z1)
            z0 += c0
            z1 += c1
            iterations += 1
        return 1 - iterations * 0.02

    def ref(i, j):
        z0 = (i / n - 1) * 2
        z1 = (j / n - 0.5) * 2
        iterations = 0
        while z0 * z0 + z1 * z1 < 400 and iterations < 50:
            z0, z1 = complex_sqr(z0, z1)
            z0 += c0
            z1 += c1
            iterations += 1
        return 1 - iterations * 0.02

    return Case((2 * n, n), f, loops((2 * n, n), ref, np.float64))


@port("Taichi python/taichi/examples/simulation/game_of_life.py (count 8 neighbours, rules)")
def game_of_life(n: int, rng: Rng) -> Case:
    alive = (rng.random((n, n)) < 0.3).astype(np.int32)

    def f(i, j):
        count = 0
        for di in range(-1, 2):
            for dj in range(-1, 2):
                if di != 0 or dj != 0:
                    count += alive[(i + di) % n, (j + dj) % n]
        if alive[i, j] == 1:
            return 1 if count == 2 or count == 3 else 0
        return 1 if count == 3 else 0

    count = sum(
        np.roll(np.roll(alive, -di, 0), -dj, 1)
        for di in (-1, 0, 1)
        for dj in (-1, 0, 1)
        if di or dj
    )
    want = np.where(alive == 1, (count == 2) | (count == 3), count == 3).astype(np.int64)
    return Case((n, n), f, want)


@port(
    "Taichi python/taichi/examples/rendering/sdf_renderer.py / raytracing.github.io "
    "'Ray Tracing in One Weekend' hit_sphere (np.array vec3, np.dot)",
    rtol=1e-14,
    why="np.dot of 3-vectors may sum in BLAS's order, not left to right",
)
def ray_sphere(n: int, rng: Rng) -> Case:
    center = np.array([0.0, 0.0, -1.0])
    radius = 0.5

    def f(i, j):
        origin = np.array([0.0, 0.0, 0.0])
        direction = np.array([j / n * 2.0 - 1.0, i / n * 2.0 - 1.0, -1.0])
        oc = origin - center
        a = np.dot(direction, direction)
        b = 2.0 * np.dot(oc, direction)
        c = np.dot(oc, oc) - radius * radius
        discriminant = b * b - 4 * a * c
        if discriminant < 0:
            return -1.0
        return (-b - np.sqrt(discriminant)) / (2.0 * a)

    def ref(i, j):
        origin = np.array([0.0, 0.0, 0.0])
        direction = np.array([j / n * 2.0 - 1.0, i / n * 2.0 - 1.0, -1.0])
        oc = origin - center
        a = np.dot(direction, direction)
        b = 2.0 * np.dot(oc, direction)
        c = np.dot(oc, oc) - radius * radius
        discriminant = b * b - 4 * a * c
        if discriminant < 0:
            return -1.0
        return (-b - np.sqrt(discriminant)) / (2.0 * a)

    return Case((n, n), f, loops((n, n), ref, np.float64))


# ---------------------------------------------------------------------------------------
# scikit-image and OpenCV


@port("scikit-image skimage/filters/edges.py sobel (sqrt((h**2 + v**2) / 2), 3x3 weights)")
def sobel(n: int, rng: Rng) -> Case:
    img = rng.random((n + 2, n + 2))
    HSOBEL = np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]]) / 4.0
    VSOBEL = HSOBEL.T.copy()

    def f(i, j):
        h = 0.0
        v = 0.0
        for di in range(3):
            for dj in range(3):
                h += HSOBEL[di, dj] * img[i + di, j + dj]
                v += VSOBEL[di, dj] * img[i + di, j + dj]
        return np.sqrt((h * h + v * v) / 2)

    def ref(i, j):
        h = 0.0
        v = 0.0
        for di in range(3):
            for dj in range(3):
                h += HSOBEL[di, dj] * img[i + di, j + dj]
                v += VSOBEL[di, dj] * img[i + di, j + dj]
        return np.sqrt((h * h + v * v) / 2)

    return Case((n, n), f, loops((n, n), ref, np.float64))


@port("OpenCV modules/imgproc/src/smooth.dispatch.cpp GaussianBlur 5x5, BORDER_REPLICATE")
def gaussian_blur(n: int, rng: Rng) -> Case:
    img = rng.random((n, n)).astype(np.float32)
    g = np.array([1, 4, 6, 4, 1], np.float32) / np.float32(16)
    kernel = np.outer(g, g).astype(np.float32)
    h, w = img.shape

    def f(y, x):
        acc = np.float32(0.0)
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                yy = min(max(y + dy, 0), h - 1)
                xx = min(max(x + dx, 0), w - 1)
                acc += kernel[dy + 2, dx + 2] * img[yy, xx]
        return acc

    def ref(y, x):
        acc = np.float32(0.0)
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                yy = min(max(y + dy, 0), h - 1)
                xx = min(max(x + dx, 0), w - 1)
                acc += kernel[dy + 2, dx + 2] * img[yy, xx]
        return acc

    return Case((h, w), f, loops((h, w), ref, np.float32))


@port(
    "scikit-image skimage/restoration/_denoise_cy.pyx _denoise_bilateral (range x space "
    "weights, window radius 2)",
    rtol=1e-13,
    why=_LIBM + " (exp)",
)
def bilateral(n: int, rng: Rng) -> Case:
    img = rng.random((n, n))
    sigma_color, sigma_spatial = 0.1, 1.5
    h, w = img.shape

    def f(r, c):
        center = img[r, c]
        total_weight = 0.0
        total = 0.0
        for wr in range(-2, 3):
            for wc in range(-2, 3):
                rr = min(max(r + wr, 0), h - 1)
                cc = min(max(c + wc, 0), w - 1)
                value = img[rr, cc]
                dist = abs(value - center)
                range_w = math.exp(-(dist * dist) / (2 * sigma_color * sigma_color))
                space_w = math.exp(-(wr * wr + wc * wc) / (2 * sigma_spatial * sigma_spatial))
                weight = range_w * space_w
                total += value * weight
                total_weight += weight
        return total / total_weight

    def ref(r, c):
        center = img[r, c]
        total_weight = 0.0
        total = 0.0
        for wr in range(-2, 3):
            for wc in range(-2, 3):
                rr = min(max(r + wr, 0), h - 1)
                cc = min(max(c + wc, 0), w - 1)
                value = img[rr, cc]
                dist = abs(value - center)
                range_w = math.exp(-(dist * dist) / (2 * sigma_color * sigma_color))
                space_w = math.exp(-(wr * wr + wc * wc) / (2 * sigma_spatial * sigma_spatial))
                weight = range_w * space_w
                total += value * weight
                total_weight += weight
        return total / total_weight

    return Case((h, w), f, loops((h, w), ref, np.float64))


@port(
    "scikit-image skimage/color/colorconv.py rgb2gray (rgb @ [0.2125, 0.7154, 0.0721])",
    rtol=1e-15,
    why="a float @ adds in order; NumPy's matmul calls BLAS (docs/limits.md)",
)
def rgb2gray(n: int, rng: Rng) -> Case:
    rgb = rng.random((n, n, 3))
    coeffs = np.array([0.2125, 0.7154, 0.0721], dtype=rgb.dtype)

    def f(i, j):
        return rgb[i, j, :] @ coeffs

    return Case((n, n), f, rgb @ coeffs)


@port(
    "scikit-image skimage/exposure/exposure.py adjust_gamma (((image / scale) ** gamma) "
    "* scale * gain)",
    rtol=1e-15,
    why="x**gamma: the target's pow may differ by an ulp",
)
def adjust_gamma(n: int, rng: Rng) -> Case:
    image = rng.random((n, n))
    gamma, gain, scale = 2.2, 1.0, 1.0

    def f(i, j):
        return ((image[i, j] / scale) ** gamma) * scale * gain

    return Case((n, n), f, ((image / scale) ** gamma) * scale * gain)


@port("scikit-image skimage/exposure/exposure.py rescale_intensity (np.clip to out_range)")
def rescale_intensity(n: int, rng: Rng) -> Case:
    image = rng.random((n, n)) * 1.4 - 0.2
    imin, imax, omin, omax = 0.0, 1.0, 0.0, 255.0

    def f(i, j):
        x = np.clip(image[i, j], imin, imax)
        x = (x - imin) / (imax - imin)
        return x * (omax - omin) + omin

    x = np.clip(image, imin, imax)
    return Case((n, n), f, ((x - imin) / (imax - imin)) * (omax - omin) + omin)


@port("OpenCV modules/imgproc/src/thresh.cpp THRESH_BINARY (dst = maxval if src > thresh)")
def threshold_binary(n: int, rng: Rng) -> Case:
    src = rng.integers(0, 256, (n, n)).astype(np.uint8)
    thresh, maxval = 127, 255

    def f(i, j):
        return maxval if src[i, j] > thresh else 0

    return Case((n, n), f, np.where(src > thresh, maxval, 0))


@port(
    "OpenCV modules/core/src/arithm.cpp addWeighted on uint8 (saturate_cast of a rounded "
    "float: np.clip(np.rint(...), 0, 255))"
)
def add_weighted_u8(n: int, rng: Rng) -> Case:
    src1 = rng.integers(0, 256, (n, n)).astype(np.uint8)
    src2 = rng.integers(0, 256, (n, n)).astype(np.uint8)
    alpha, beta, gamma = 0.7, 0.6, 10.0

    def f(i, j):
        return np.uint8(np.clip(np.rint(src1[i, j] * alpha + src2[i, j] * beta + gamma), 0, 255))

    want = np.clip(np.rint(src1 * alpha + src2 * beta + gamma), 0, 255).astype(np.uint8)
    return Case((n, n), f, want)


@port(
    "OpenCV modules/imgproc/src/median_blur.simd.hpp medianBlur 3x3 (Devillard's opt_med9 "
    "sorting network over p[9])"
)
def median3x3(n: int, rng: Rng) -> Case:
    img = rng.random((n + 2, n + 2)).astype(np.float32)

    def f(i, j):
        p = np.zeros(9, np.float32)
        for k in range(9):
            p[k] = img[i + k // 3, j + k % 3]
        for a, b in (
            (1, 2),
            (4, 5),
            (7, 8),
            (0, 1),
            (3, 4),
            (6, 7),
            (1, 2),
            (4, 5),
            (7, 8),
            (0, 3),
            (5, 8),
            (4, 7),
            (3, 6),
            (1, 4),
            (2, 5),
            (4, 7),
            (4, 2),
            (6, 4),
            (4, 2),
        ):
            lo, hi = min(p[a], p[b]), max(p[a], p[b])
            p[a], p[b] = lo, hi
        return p[4]

    want = np.median(
        np.stack([img[di : di + n, dj : dj + n] for di in range(3) for dj in range(3)]), axis=0
    ).astype(np.float32)
    return Case((n, n), f, want)


# ---------------------------------------------------------------------------------------
# Rows, reductions and distances as users write them in NumPy


@port(
    "Triton python/tutorials/05-layer-norm.py _layer_norm_fwd (mean, var over a row)",
    rtol=1e-5,
    atol=1e-6,
    why="float32 means: NumPy sums pairwise; ** 2 is pow (libdevice's on the GPU differs by"
    " up to 2 ulp from the C library's) where NumPy's array ** 2 squares; outputs near 0"
    " come from cancelling + b[j] (~1), so an absolute tolerance of a few ulp of 1",
)
def layer_norm_row(n: int, rng: Rng) -> Case:
    x = rng.random((n, n + 3)).astype(np.float32)
    w = rng.random(n + 3).astype(np.float32)
    b = rng.random(n + 3).astype(np.float32)
    eps = 1e-5

    def f(i, j):
        mean = np.mean(x[i])
        var = np.mean((x[i] - mean) ** 2)
        rstd = 1 / np.sqrt(var + eps)
        return (x[i, j] - mean) * rstd * w[j] + b[j]

    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return Case(x.shape, f, (x - mean) * (1 / np.sqrt(var + eps)) * w + b)


@port(
    "SciPy scipy/spatial/distance.py cosine (1 - dot(u, v) / (norm(u) * norm(v)))",
    rtol=1e-13,
    why="np.dot and norm sum in their own order",
)
def cosine_similarity(n: int, rng: Rng) -> Case:
    U = rng.random((n, 8))
    V = rng.random((n + 1, 8))

    def f(i, j):
        return 1.0 - np.dot(U[i], V[j]) / (np.linalg.norm(U[i]) * np.linalg.norm(V[j]))

    want = 1.0 - (U @ V.T) / np.outer(np.linalg.norm(U, axis=1), np.linalg.norm(V, axis=1))
    return Case((n, n + 1), f, want)


@port(
    "scikit-learn sklearn/metrics/pairwise.py haversine_distances (2 arcsin sqrt(...))",
    rtol=1e-13,
    why=_LIBM + " (sin, cos, arcsin)",
)
def haversine(n: int, rng: Rng) -> Case:
    X = rng.random((n, 2)) * [np.pi, 2 * np.pi] - [np.pi / 2, np.pi]
    Y = rng.random((n + 2, 2)) * [np.pi, 2 * np.pi] - [np.pi / 2, np.pi]

    def f(i, j):
        lat1, lon1 = X[i, 0], X[i, 1]
        lat2, lon2 = Y[j, 0], Y[j, 1]
        a = (
            np.sin((lat2 - lat1) / 2) ** 2
            + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
        )
        return 2 * np.arcsin(np.sqrt(a))

    lat1, lon1 = X[:, 0:1], X[:, 1:2]
    lat2, lon2 = Y[:, 0], Y[:, 1]
    a = (
        np.sin((lat2 - lat1) / 2) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    )
    return Case((n, n + 2), f, 2 * np.arcsin(np.sqrt(a)))


@port(
    "scikit-learn sklearn/cluster/_kmeans.py (squared distance to each centre: "
    "np.sum((x - c) ** 2), argmin)"
)
def kmeans_argmin_rows(n: int, rng: Rng) -> Case:
    X = rng.random((n * 2, 4))
    centers = rng.random((5, 4))

    def f(i):
        best = 0
        best_d = np.inf
        for k in range(centers.shape[0]):
            d = np.sum((X[i, :] - centers[k, :]) ** 2)
            if d < best_d:
                best_d = d
                best = k
        return best

    d = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    return Case((n * 2,), f, np.argmin(d, axis=1).astype(np.int64))


@port("NumPy user guide / numba docs 'for x in row' row sum (sum of a[i] by iteration)")
def row_sum_iterate(n: int, rng: Rng) -> Case:
    a = rng.random((n, n + 1))

    def f(i):
        s = 0.0
        for x in a[i]:
            s += x
        return s

    def ref(i):
        s = 0.0
        for x in a[i]:
            s += x
        return s

    return Case((n,), f, loops((n,), ref, np.float64))


@port("Python docs / NumPy: dot product by zip (sum(x * y for x, y in zip(u, v)))")
def dot_zip(n: int, rng: Rng) -> Case:
    U = rng.random((n, 6))
    V = rng.random((n, 6))

    def f(i):
        s = 0.0
        for x, y in zip(U[i], V[i]):
            s += x * y
        return s

    def ref(i):
        s = 0.0
        for x, y in zip(U[i], V[i]):
            s += x * y
        return s

    return Case((n,), f, loops((n,), ref, np.float64))


@port("Rosetta Code 'Hailstone sequence' (Collatz steps, while loop)")
def collatz_steps(n: int, rng: Rng) -> Case:
    start = rng.integers(1, 1000, n * n).astype(np.int64)

    def f(i):
        x = start[i]
        steps = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            steps += 1
        return steps

    def ref(i):
        x = start[i]
        steps = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            steps += 1
        return steps

    return Case((n * n,), f, loops((n * n,), ref, np.int64))


# ---------------------------------------------------------------------------------------
# Hashes (uint32 and uint64 as NumPy 2 has them)


@port("Sebastiano Vigna, prng.di.unimi.it splitmix64.c (next(): the finaliser of x + i * gamma)")
def splitmix64(n: int, rng: Rng) -> Case:
    seeds = rng.integers(0, 2**63, n * n, dtype=np.uint64)

    def f(i):
        z = seeds[i] + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    with np.errstate(over="ignore"):
        z = seeds + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        want = z ^ (z >> np.uint64(31))
    return Case((n * n,), f, want)


@port("aappleby/smhasher src/MurmurHash3.cpp fmix64")
def murmur3_fmix64(n: int, rng: Rng) -> Case:
    keys = rng.integers(0, 2**63, n * n, dtype=np.uint64)

    def f(i):
        k = keys[i]
        k ^= k >> 33
        k *= 0xFF51AFD7ED558CCD
        k ^= k >> 33
        k *= 0xC4CEB9FE1A85EC53
        k ^= k >> 33
        return k

    with np.errstate(over="ignore"):
        k = keys.copy()
        k ^= k >> 33
        k *= 0xFF51AFD7ED558CCD
        k ^= k >> 33
        k *= 0xC4CEB9FE1A85EC53
        k ^= k >> 33
    return Case((n * n,), f, k)


@port("Cyan4973/xxHash xxhash.h XXH64_avalanche (PRIME64_2, PRIME64_3 as captured constants)")
def xxhash64_avalanche(n: int, rng: Rng) -> Case:
    hashes = rng.integers(0, 2**63, n * n, dtype=np.uint64)
    PRIME64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
    PRIME64_3 = np.uint64(0x165667B19E3779F9)

    def f(i):
        h64 = hashes[i]
        h64 ^= h64 >> np.uint64(33)
        h64 *= PRIME64_2
        h64 ^= h64 >> np.uint64(29)
        h64 *= PRIME64_3
        h64 ^= h64 >> np.uint64(32)
        return h64

    with np.errstate(over="ignore"):
        h64 = hashes.copy()
        h64 ^= h64 >> np.uint64(33)
        h64 *= PRIME64_2
        h64 ^= h64 >> np.uint64(29)
        h64 *= PRIME64_3
        h64 ^= h64 >> np.uint64(32)
    return Case((n * n,), f, h64)


@port(
    "Fowler/Noll/Vo reference isthe.com/chongo/tech/comp/fnv (FNV-1a 64 over the 8 bytes "
    "of an int64)"
)
def fnv1a_64(n: int, rng: Rng) -> Case:
    keys = rng.integers(0, 2**62, n * n).astype(np.int64)

    def f(i):
        h = np.uint64(0xCBF29CE484222325)
        x = keys[i]
        for _ in range(8):
            h ^= np.uint64(x & 0xFF)
            h *= np.uint64(0x100000001B3)
            x >>= 8
        return h

    def ref(i):
        h = np.uint64(0xCBF29CE484222325)
        x = keys[i]
        for _ in range(8):
            h ^= np.uint64(x & 0xFF)
            h *= np.uint64(0x100000001B3)
            x >>= 8
        return h

    with np.errstate(over="ignore"):
        want = loops((n * n,), ref, np.uint64)
    return Case((n * n,), f, want)


@port(
    "Fowler/Noll/Vo reference isthe.com/chongo/tech/comp/fnv (FNV-1a 32 over the 4 bytes "
    "of an int32)"
)
def fnv1a_32(n: int, rng: Rng) -> Case:
    keys = rng.integers(0, 2**31, n * n).astype(np.int64)

    def f(i):
        h = np.uint32(2166136261)
        x = keys[i]
        for _ in range(4):
            h ^= np.uint32(x & 0xFF)
            h *= np.uint32(16777619)
            x >>= 8
        return h

    def ref(i):
        h = np.uint32(2166136261)
        x = keys[i]
        for _ in range(4):
            h ^= np.uint32(x & 0xFF)
            h *= np.uint32(16777619)
            x >>= 8
        return h

    with np.errstate(over="ignore"):
        want = loops((n * n,), ref, np.uint32)
    return Case((n * n,), f, want)


@port("Jarzynski & Olano, 'Hash Functions for GPU Rendering' (JCGT 2020) pcg_hash, uint32")
def pcg_hash(n: int, rng: Rng) -> Case:
    v = rng.integers(0, 2**32, n * n, dtype=np.uint32)

    def f(i):
        state = v[i] * np.uint32(747796405) + np.uint32(2891336453)
        word = ((state >> ((state >> np.uint32(28)) + np.uint32(4))) ^ state) * np.uint32(277803737)
        return (word >> np.uint32(22)) ^ word

    with np.errstate(over="ignore"):
        state = v * np.uint32(747796405) + np.uint32(2891336453)
        word = ((state >> ((state >> np.uint32(28)) + np.uint32(4))) ^ state) * np.uint32(277803737)
        want = (word >> np.uint32(22)) ^ word
    return Case((n * n,), f, want)


@port("George Marsaglia, 'Xorshift RNGs' (JSS 2003) xorshift32: 13, 17, 5 on uint32")
def xorshift32(n: int, rng: Rng) -> Case:
    state = rng.integers(1, 2**32, n * n, dtype=np.uint32)

    def f(i):
        x = state[i]
        x ^= x << np.uint32(13)
        x ^= x >> np.uint32(17)
        x ^= x << np.uint32(5)
        return x

    x = state.copy()
    x ^= x << np.uint32(13)
    x ^= x >> np.uint32(17)
    x ^= x << np.uint32(5)
    return Case((n * n,), f, x)


@port("Thomas Wang, 'Integer Hash Function' (2007) hash32shift on int32 as uint32")
def wang_hash32(n: int, rng: Rng) -> Case:
    keys = rng.integers(0, 2**32, n * n, dtype=np.uint32)

    def f(i):
        key = keys[i]
        key = (key ^ np.uint32(61)) ^ (key >> np.uint32(16))
        key = key + (key << np.uint32(3))
        key = key ^ (key >> np.uint32(4))
        key = key * np.uint32(0x27D4EB2D)
        key = key ^ (key >> np.uint32(15))
        return key  # noqa: RET504  (the original's form)

    with np.errstate(over="ignore"):
        key = keys.copy()
        key = (key ^ np.uint32(61)) ^ (key >> np.uint32(16))
        key = key + (key << np.uint32(3))
        key = key ^ (key >> np.uint32(4))
        key = key * np.uint32(0x27D4EB2D)
        key = key ^ (key >> np.uint32(15))
    return Case((n * n,), f, key)
