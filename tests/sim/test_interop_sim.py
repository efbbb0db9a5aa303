"""Host arrays by ``__array_interface__`` or DLPack as captures and ``out=`` of compute_g
under the simulator, as on the CPU targets (tests/api/test_interop.py's stand-ins)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from tests.api.test_interop import ArrayInterface, DLPackTensor

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("wrap", [ArrayInterface, DLPackTensor])
def test_a_host_array_by_its_interface_is_a_capture_and_an_out(wrap):
    base = np.arange(12.0).reshape(3, 4)
    x = wrap(base)

    def f(i, j):
        return x[i, j] * 2.0

    np.testing.assert_array_equal(ol.compute_g((3, 4), f), base * 2)
    memory = np.zeros((3, 4))
    out = wrap(memory)
    assert ol.compute_g((3, 4), f, out=out) is out
    np.testing.assert_array_equal(memory, base * 2)
