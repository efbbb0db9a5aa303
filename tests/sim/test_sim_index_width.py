"""compute_g's two kernels under the simulator: the 32-bit one for launches inside its
guard, the 64-bit one (made on first need) for the rest, each with CPython's values."""

from __future__ import annotations

import numpy as np
import pytest

from offload.lowering import check_and_lower
from offload.options import CompileOptions
from offload.ptx.sim import SimBackend

pytestmark = pytest.mark.sim

offset = np.int64(7)
img = np.arange(20, dtype=np.float32).reshape(4, 5)


def shifted(i, j):
    # Python ints are int64: (i + offset) * 3 overflows int32 once offset is large.
    return (i * 5 + j + offset) * 3 // 2


def clamp(i, j):
    h, w = img.shape
    acc = np.float32(0.0)
    for a in range(3):
        yy = min(max(i + a - 1, 0), h - 1)
        for b in range(3):
            acc += img[yy, min(max(j + b - 1, 0), w - 1)]
    return acc


def _run(backend, fn, shape, values):
    ir = check_and_lower(fn, len(shape)).ir
    kernel = backend.compile(ir, CompileOptions(verify=True))
    (out,) = backend.allocate(shape, [np.dtype(t.dtype) for t in ir.result_types])
    kernel.launch(shape, [out], backend.prepare_captures([values[c.name] for c in ir.captures]))
    return kernel, out


def _want(fn, shape, values):
    g = fn.__globals__
    saved = {k: g[k] for k in values}
    g.update(values)
    try:
        return np.array([[fn(i, j) for j in range(shape[1])] for i in range(shape[0])])
    finally:
        g.update(saved)


@pytest.fixture(scope="module")
def backend():
    return SimBackend()


def test_small_capture_runs_the_32_bit_kernel_with_the_same_values(backend):
    values = {"offset": np.int64(7)}
    kernel, out = _run(backend, shifted, (3, 4), values)
    assert kernel.leading().source.index_bits == 32 and "wide64" not in _made(kernel)
    np.testing.assert_array_equal(out, _want(shifted, (3, 4), values))


def test_capture_beyond_the_assumption_runs_the_64_bit_kernel(backend):
    values = {"offset": np.int64(2**40 + 3)}
    kernel, out = _run(backend, shifted, (3, 4), values)
    assert "wide64" in _made(kernel)
    assert kernel.pick((3, 4), backend.prepare_captures([values["offset"]])).source.index_bits == 64
    np.testing.assert_array_equal(out, _want(shifted, (3, 4), values))


def test_clamped_stencil_in_32_bits_matches_cpython(backend):
    kernel, out = _run(backend, clamp, (4, 5), {"img": img})
    assert "wide64" not in _made(kernel)
    np.testing.assert_array_equal(out, _want(clamp, (4, 5), {"img": img}))


def test_strided_view_is_read_through_int32_strides(backend):
    view = np.arange(60, dtype=np.float32).reshape(6, 10)[::-2, 1::2]  # negative row stride
    kernel, out = _run(backend, clamp, (3, 5), {"img": view})
    np.testing.assert_array_equal(out, _want(clamp, (3, 5), {"img": view}))


def _made(kernel) -> list[str]:
    """The index variants made so far."""
    return [v.name for v in kernel.variants()]
