"""The interpreter's float -> int rule (``semantics.float_to_int``) is NumPy 2's array
``astype`` on x86-64 for NaN, +-inf, +-1e300, -0.0 and values just outside each width;
before, CAST was the host's ``astype`` (platform-dependent) and the targets disagreed."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from offload.ir.ops import Opcode
from offload.ir.semantics import eval_op
from offload.ir.types import scalar_by_name
from tests.conformance.numerics_cases import INT_TYPES, SPECIAL, SPECIAL32

pytestmark = pytest.mark.unit


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64's rule")
@pytest.mark.parametrize("src", [SPECIAL, SPECIAL32], ids=["f64", "f32"])
@pytest.mark.parametrize("t", INT_TYPES, ids=[np.dtype(t).name for t in INT_TYPES])
def test_cast_spec_is_numpys_array_astype_on_x86_64(src, t):
    rt = scalar_by_name({"i": "i", "u": "u"}[np.dtype(t).kind] + str(np.dtype(t).itemsize * 8))
    edges = np.array([2.0**31, -(2.0**31) - 1, 2.0**32, 2.0**15, -(2.0**15) - 1], src.dtype)
    values = np.concatenate([src, edges])
    got = [eval_op(Opcode.CAST, {}, [v], rt) for v in values]
    with np.errstate(all="ignore"):
        want = values.astype(t)
    assert [int(g) for g in got] == want.tolist()
    assert all(g.dtype == want.dtype for g in got)
