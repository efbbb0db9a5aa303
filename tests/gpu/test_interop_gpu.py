"""Device arrays of torch, JAX and CuPy as captures and ``out=`` on ``compute_g``, and
results handed to torch through DLPack without a copy (issue 18 item 7; the gpu lane)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.gpu

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX takes 75% otherwise
N = 1000
WANT = np.arange(N, dtype=np.float32) * 2 + 1


@pytest.fixture(params=["unified", "device"])
def memory(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = ol.config.memory
    ol.config.memory = request.param
    try:
        yield request.param
    finally:
        ol.config.memory = saved


def _host(x: object) -> np.ndarray:
    if hasattr(x, "get"):
        return np.asarray(x.get())
    if hasattr(x, "cpu"):
        return x.cpu().numpy()  # type: ignore[no-any-return]
    return np.asarray(x)


def test_a_torch_cuda_tensor_is_a_capture_and_an_out(memory: str) -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    out = torch.empty(N, dtype=torch.float32, device="cuda")

    def f(i):
        return x[i] * 2.0 + 1.0

    np.testing.assert_array_equal(_host(ol.compute_g(N, f)), WANT)
    assert ol.compute_g(N, f, out=out) is out
    torch.cuda.synchronize()
    np.testing.assert_array_equal(_host(out), WANT)


def test_a_jax_device_array_is_a_capture(memory: str) -> None:
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(N, dtype=jnp.float32)

    def f(i):
        return x[i] * 2.0 + 1.0

    np.testing.assert_array_equal(_host(ol.compute_g(N, f)), WANT)


def test_a_cupy_array_is_a_capture_and_an_out(memory: str) -> None:
    cp = pytest.importorskip("cupy")
    x = cp.arange(N, dtype=cp.float32)
    out = cp.empty(N, dtype=cp.float32)

    def f(i):
        return x[i] * 2.0 + 1.0

    assert ol.compute_g(N, f, out=out) is out
    np.testing.assert_array_equal(out.get(), WANT)


def test_a_result_goes_to_torch_through_dlpack_without_a_copy(memory: str) -> None:
    torch = pytest.importorskip("torch")
    a = np.arange(N, dtype=np.float32)

    def f(i):
        return a[i] * 2.0 + 1.0

    got = ol.compute_g(N, f)
    t = torch.from_dlpack(got)
    if memory == "device":
        assert t.is_cuda and t.data_ptr() == got.data.ptr
    else:  # a NumPy array in managed memory: torch sees host memory, the same bytes
        assert t.data_ptr() == got.ctypes.data
    np.testing.assert_array_equal(_host(t), WANT)
