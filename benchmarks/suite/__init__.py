"""The benchmarks, each written once as element functions (see common.Benchmark)."""

from __future__ import annotations

from benchmarks.suite import (
    backprojection,
    blackscholes,
    conv1d,
    conv2d,
    dotp,
    histogram,
    mandelbrot,
    mmult,
    nbody,
    nbody_acc,
    prefix_sum,
    reduce_sum,
    smvm,
    stencil7,
    treesearch,
    volrender,
)
from benchmarks.suite.common import Benchmark

ALL: dict[str, Benchmark] = {
    m.BENCHMARK.name: m.BENCHMARK
    for m in (
        conv1d,
        conv2d,
        stencil7,
        backprojection,
        blackscholes,
        mmult,
        nbody,
        treesearch,
        volrender,
        dotp,
        mandelbrot,
        nbody_acc,
        smvm,
        histogram,
        prefix_sum,
        reduce_sum,
    )
}
# The element-function forms of the Accelerate-form benchmarks (a second configuration).
ALL[dotp.ELEMENT.name] = dotp.ELEMENT
ALL[smvm.ELEMENT.name] = smvm.ELEMENT
"""Name -> benchmark, in the paper's order, then the Accelerate points."""

HASKELL_GAP = (
    "1d-convolution",
    "2d-convolution",
    "7pt-stencil",
    "backprojection",
    "blackscholes",
    "matrix-mult",
    "nbody",
    "treesearch",
    "volume-rendering",
)
ACCELERATE = (
    "dotp",
    "dotp-element",
    "mandelbrot",
    "nbody-accelerate",
    "smvm",
    "smvm-element",
    "histogram",
    "prefix-sum",
    "sum",
)
