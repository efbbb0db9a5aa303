"""offload.dask.compute: lazy Dask arrays of element functions over captured Dask arrays, on
the threaded scheduler and on a LocalCluster of two processes, equal to compute_s bit for
bit on arrays with uneven chunks (offset reads get their halos from the neighbours)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
old = pytest.importorskip("offload.dask")

pytestmark = pytest.mark.cpu

RNG = np.random.default_rng(11)
XN = RNG.random((10, 7))
X = da.from_array(XN, chunks=((3, 5, 2), (4, 3)))
VN = RNG.random(13).astype(np.float32)
V = da.from_array(VN, chunks=((4, 1, 8),))
W = np.array([0.25, 0.5, 0.25])  # a NumPy capture beside the Dask ones


def grad(i, j):
    s = X[i, j] * 2.0
    if i > 0:
        s += X[i - 1, j]
    if j + 1 < X.shape[1]:
        s -= X[i, j + 1]
    return s


def grad_np(i, j):
    s = XN[i, j] * 2.0
    if i > 0:
        s += XN[i - 1, j]
    if j + 1 < XN.shape[1]:
        s -= XN[i, j + 1]
    return s


def smooth(i):
    n = V.shape[0]
    return W[0] * V[max(i - 1, 0)] + W[1] * V[i] + W[2] * V[min(i + 1, n - 1)], i * 2


def smooth_np(i):
    n = VN.shape[0]
    return W[0] * VN[max(i - 1, 0)] + W[1] * VN[i] + W[2] * VN[min(i + 1, n - 1)], i * 2


@pytest.mark.parametrize("target", ["s", "p"])
def test_a_2d_function_with_offset_reads_equals_compute_s_on_threads(target):
    y = old.compute((10, 7), grad, target=target)
    assert y.chunks == X.chunks  # the captured array's chunks by default
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    assert got.tobytes() == ol.compute_s((10, 7), grad_np).tobytes()


def test_uneven_chunks_other_than_the_inputs_and_two_results():
    a, b = old.compute(13, smooth, chunks=((5, 2, 6),))
    assert a.chunks == ((5, 2, 6),) and a.dtype == np.float64 and b.dtype == np.int64
    with dask.config.set(scheduler="threads"):
        got_a, got_b = dask.compute(a, b)
    want_a, want_b = ol.compute_s(13, smooth_np)
    assert got_a.tobytes() == want_a.tobytes() and got_b.tobytes() == want_b.tobytes()


def test_meta_is_given_so_no_kernel_runs_at_graph_build(monkeypatch):
    launched = []
    monkeypatch.setattr(old, "_compute_block", lambda *a: launched.append(a))
    y = old.compute((10, 7), grad)
    y2 = (y + 1.0)[::2]
    assert launched == [] and isinstance(y2._meta, np.ndarray)


def test_a_delayed_tree_over_numpy_leaves():
    tree = ol.map(lambda v: v * 3.0, ol.from_function((10, 7), grad_np))
    y = old.compute(tree, chunks=(4, 3))
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    assert got.tobytes() == ol.compute_s(tree).tobytes()


def test_a_delayed_tree_with_dask_leaves_and_a_dask_capture():
    shifted = ol.from_function(13, lambda i: V[max(i - 1, 0)])
    tree = ol.zip_with(lambda a, b: a * 2.0 - b, V, shifted)
    y = old.compute(tree, chunks=4)
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    want = ol.compute_s(
        ol.zip_with(lambda a, b: a * 2.0 - b, VN, ol.from_function(13, lambda i: VN[max(i - 1, 0)]))
    )
    assert got.tobytes() == want.tobytes()


def test_every_block_runs_the_one_kernel_compiled_in_this_process():
    old._KERNELS.clear()
    y = old.compute((10, 7), grad, target="s", chunks=(2, 3))
    assert y.numblocks == (5, 3)
    with dask.config.set(scheduler="threads"):
        y.compute()
    assert len(old._KERNELS) == 1


def _left(i):
    return V[i - 1] if i > 0 else V[i]  # a helper reading a module-level Dask array


def via_helper(i):
    return _left(i) * 3.0 + V[i]


def test_a_helper_reading_a_module_level_dask_array():
    y = old.compute(13, via_helper, chunks=((6, 7),))
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    want = np.array([(VN[i - 1] if i > 0 else VN[i]) * 3.0 + VN[i] for i in range(13)])
    assert got.tobytes() == want.astype(got.dtype).tobytes()


P = da.from_array(RNG.integers(0, 13, 13), chunks=5)


def gathered(i):
    return V[P[i]]


def test_a_gather_from_a_large_dask_array_is_a_located_error():
    with pytest.raises(old.UnboundedRead) as err:
        old.compute(13, gathered, max_whole=16)
    text = str(err.value)
    assert "test_dask_compute.py" in text and "V[P[i]]" in text and "'V'" in text


def test_a_gather_from_a_small_dask_array_reads_it_whole():
    y = old.compute(13, gathered)
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    assert got.tobytes() == VN[P.compute()].tobytes()


def test_fold_all_combines_in_a_fixed_tree():
    fold = old.SequentialFold(lambda a, b: a + b, 0.0)
    total = old.fold_all(X, fold, split_every=2)
    with dask.config.set(scheduler="threads"):
        first = total.compute()
        second = total.compute()
    assert first == second and abs(first - XN.sum()) < 1e-9


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_local_cluster_of_two_processes_gives_the_same_bits(cluster_client):
    y = old.compute((10, 7), grad, target="p")
    a, _ = old.compute(13, smooth, chunks=((5, 2, 6),))
    got_y, got_a = cluster_client.compute([y, a], sync=True)
    assert got_y.tobytes() == ol.compute_s((10, 7), grad_np).tobytes()
    assert got_a.tobytes() == ol.compute_s(13, smooth_np)[0].tobytes()
    workers = cluster_client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2
