"""``compute_g`` of collectives under numba's CUDA simulator (small sizes: it is slow):
the GPU's (wide) reduction tree equals the interpreter running the same tree bit for bit,
cross_target equals compute_s, results do not depend on the input's offset, and stencils
and structural nodes equal the CPU's.

    NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim tests/acc
"""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload import driver
from offload.acc.base import Context
from offload.acc.graph import schedule
from offload.targets import GPU
from tests.acc.fold_reference import interpret, same_bits
from tests.acc.sim_lane import GPU_SIMULATOR_LANE

pytestmark = GPU_SIMULATOR_LANE


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def max_first_nan(a, b):
    return b if a == a and (b > a or b != b) else a  # max; the first NaN met wins


@pytest.fixture
def mode():
    saved = ol.config.determinism
    yield
    ol.config.determinism = saved


def test_fold_all_of_zip_with_on_the_gpu_is_the_wide_tree(mode):
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(150).astype(np.float32) for _ in range(2))
    node = ol.fold_all(add, 0.0, ol.zip_with(mul, x, y))
    got = ol.compute_g(node)
    assert same_bits(got, interpret(node, "cross_target"))
    ol.config.determinism = "cross_target"
    assert same_bits(ol.compute_g(node), ol.compute_s(node))


def test_non_commutative_and_nan_keeping_folds_on_the_gpu(mode):
    x = np.arange(2 * 90, dtype=np.float64).reshape(2, 90) % 7
    x[0, 5] = np.nan
    node = ol.fold1(max_first_nan, x)
    ol.config.determinism = "cross_target"
    got = ol.compute_g(node)
    assert np.isnan(got[0]) and got[1] == 6.0
    assert same_bits(got, ol.compute_s(node))


def test_fold_seg_and_map_after_fold_on_the_gpu():
    a = np.arange(10, dtype=np.int32)
    got = ol.compute_g(ol.map(lambda s: s * 2, ol.fold_seg(add, 0, a, np.array([3, 0, 7]))))
    assert got.tolist() == [6, 0, 84]


def test_gpu_fold_does_not_depend_on_the_input_offset():
    base = np.random.default_rng(4).standard_normal(100).astype(np.float32)
    seen = set()
    for offset in (0, 1, 5):
        buf = np.zeros(120, np.float32)
        buf[offset : offset + 100] = base
        seen.add(ol.compute_g(ol.fold_all(add, 0.0, buf[offset : offset + 100])).tobytes())
    assert len(seen) == 1


def test_stencil_and_structural_nodes_on_the_gpu():
    m = np.arange(20.0).reshape(4, 5)

    def lap(get):
        return get(-1, 0) + get(1, 0) + get(0, -1) + get(0, 1) - 4 * get(0, 0)

    for b in ("clamp", "mirror", "wrap", ol.constant(1.0)):
        assert same_bits(ol.compute_g(ol.stencil(lap, m, b)), ol.compute_s(ol.stencil(lap, m, b)))
    t = ol.transpose(ol.reverse(m))
    assert same_bits(ol.compute_g(t), np.ascontiguousarray(m[:, ::-1].T))


def test_tuple_and_multi_row_folds_on_the_gpu(mode):
    x = np.arange(3 * 100, dtype=np.float32).reshape(3, 100) / 7
    y = (np.arange(3 * 100, dtype=np.int64).reshape(3, 100) % 5) + 1
    node = ol.fold(lambda p, q: (p[0] + q[0], p[1] * q[1] % 1009), (0.0, 1), (x, y))
    ol.config.determinism = "cross_target"
    got = ol.compute_g(node)
    assert isinstance(got, tuple) and same_bits(got, ol.compute_s(node))
    assert same_bits(got, interpret(node, "cross_target"))


def test_segmented_fold_with_lanes_on_the_gpu_equals_the_interpreter():
    a = np.random.default_rng(5).standard_normal(120).astype(np.float32)
    node = ol.fold_seg(add, 0.0, a, np.array([40, 0, 80]))
    options = ol.config.compile_options()
    trace = []
    ctx = Context(GPU.resolve(options), options, "deterministic", trace, driver.run)
    schedule(ctx, node)
    assert [what for what, _ in trace] == ["fold_seg stage: 3 segment(s) x 4 lanes"]
    assert same_bits(ol.compute_g(node), interpret(node, "cross_target"))


def square(v):
    return v * v


def test_unified_call_computes_its_own_arrays_on_the_device_twin(monkeypatch):
    # unified mode: a collective's source is an array only the call's kernels read, made
    # in device memory (on the GPU: no managed block, no synchronise); the result is the
    # host's (NumPy)
    from offload.ptx.sim import SimBackend

    made: list[tuple[str, str]] = []
    real = SimBackend.allocate

    def spy(self, shape, dtypes):
        outs = real(self, shape, dtypes)
        made.append((self.mode, type(outs[0]).__name__))
        return outs

    monkeypatch.setattr(SimBackend, "allocate", spy)
    monkeypatch.setattr(ol.config, "memory", "unified")
    x = np.arange(300, dtype=np.float32)
    got = ol.compute_g(ol.map(square, ol.scanl1(add, ol.map(square, x))))
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, np.square(np.cumsum(x * x, dtype=np.float32)))
    assert ("device", "SimDeviceArray") in made  # (the scan's source)
    assert made[-1] == ("unified", "ndarray")  # (the result)
    # a collective other than the root (the scan under a map, a scan's total) too; the
    # root collective runs on the call's backend (its result is the call's)
    from offload.acc.scan import Scan

    modes: list[str] = []
    real_scan = Scan.materialise

    def scan_spy(self, ctx, sources):
        modes.append(ctx.backend.mode)
        return real_scan(self, ctx, sources)

    monkeypatch.setattr(Scan, "materialise", scan_spy)
    ol.compute_g(ol.map(square, ol.scanl1(add, x)))
    ol.compute_g(ol.scanl1(add, x))
    assert modes == ["device", "unified"]
    made.clear()
    body, total = (ol.compute_g(p) for p in ol.scanl_total(add, np.float32(1), x))
    assert type(body) is np.ndarray and type(total) is np.ndarray
    np.testing.assert_array_equal(
        body, np.cumsum(np.append(np.float32(1), x[:-1]), dtype=np.float32)
    )
    assert float(total) == float(np.float32(1) + x.sum(dtype=np.float32))
    made.clear()
    rows = ol.compute_g(ol.map(square, ol.fold(add, np.float32(0), x.reshape(3, 100))))
    assert type(rows) is np.ndarray
    np.testing.assert_array_equal(rows, np.square(x.reshape(3, 100).sum(axis=1, dtype=np.float32)))
