"""The simulator's stand-ins for the ``nsw`` intrinsics give the IR's values.

Under ``NUMBA_ENABLE_CUDASIM=1`` the 32-bit kernel's ``nsw_add_i32`` ... calls run as plain
Python (``offload.ptx.intrinsics.SIMULATOR_FUNCTIONS``): a convolution, an n-body sum and a
2-D strided read whose 32-bit kernels call them agree with the IR interpreter, the user's
``np.int32`` arithmetic still wraps, and the stand-ins wrap like the IR at int32's edges.
"""

from __future__ import annotations

import numpy as np
import pytest

from offload.ir.core import Function
from offload.ir.ops import Opcode
from offload.ir.semantics import eval_op
from offload.ir.types import I32
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.choice import KernelChoice
from offload.ptx.intrinsics import NSW_FUNCTIONS, SIMULATOR_FUNCTIONS
from offload.ptx.sim import SimBackend
from tests.corpus.loops import attraction, correlate
from tests.ptx.semantic import assert_matches_interpreter, to_host

pytestmark = pytest.mark.sim

rng = np.random.default_rng(3)
signal = rng.standard_normal(70).astype(np.float32)
taps = rng.standard_normal(9).astype(np.float32)
conv1d = correlate(signal, taps)
px = rng.standard_normal(40).astype(np.float32)
py = rng.standard_normal(40).astype(np.float32)
pz = rng.standard_normal(40).astype(np.float32)
nbody = attraction(px, py, pz)


grid = np.arange(90, dtype=np.float32).reshape(9, 10)[::-2, 1::2]  # negative row stride


def window(i, j):
    acc = np.float32(0.0)
    for a in range(2):
        acc += grid[i + a, j] - grid[i, j + 1]
    return acc


base = np.int32(2**30 - 1)  # inside the guard's scalar bound: the 32-bit kernel runs


def user_int32(i):
    return base * np.int32(2) + np.int32(i)  # wraps from i = 2 on


CASES = {
    "conv1d": (conv1d, (62,), [taps, signal]),
    "nbody": (nbody, (40,), [px, py, pz]),
    "window": (window, (4, 4), [grid]),
}


@pytest.fixture(scope="module")
def backend() -> SimBackend:
    return SimBackend()


def _optimised(fn, rank) -> Function:
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions(verify=True))


def _run(backend, fn: Function, shape, caps):
    kernel = backend.compile(fn, CompileOptions())
    (out,) = backend.allocate(shape, [t.dtype for t in fn.result_types])
    kernel.launch(shape, [out], backend.prepare_captures(caps))
    return kernel, (to_host(out),)


@pytest.mark.parametrize("name", sorted(CASES))
def test_32_bit_kernel_calling_the_stand_ins_matches_the_interpreter(backend, name):
    pyfn, shape, _ = CASES[name]
    fn = _optimised(pyfn, len(shape))
    caps = [{"taps": taps, "signal": signal, "px": px, "py": py, "pz": pz, "grid": grid}[c.name]
            for c in fn.captures]  # fmt: skip
    kernel, got = _run(backend, fn, shape, caps)
    ran = kernel.pick(shape, backend.prepare_captures(caps))
    assert ran.source.index_bits == 32 and "wide64" not in _made(kernel)  # no 64-bit kernel
    assert "nsw_add_i32(" in ran.source.source
    assert_matches_interpreter(got, fn, shape, caps)


def _made(kernel: KernelChoice) -> list[str]:
    """The index variants made so far (unit-stride 32-bit, general 32-bit, 64-bit)."""
    return [v.name for v in kernel.variants()]


def test_contiguous_captures_run_the_unit_stride_kernel_and_views_the_general_one(backend):
    fn = _optimised(window, 2)
    kernel, got = _run(backend, fn, (4, 4), [np.ascontiguousarray(grid)])
    assert kernel.leading().source.unit_last and _made(kernel) == ["unit32"]
    assert_matches_interpreter(got, fn, (4, 4), [np.ascontiguousarray(grid)])
    out = backend.allocate((4, 4), [np.dtype(np.float32)])
    caps = backend.prepare_captures([grid])  # last-axis stride 2
    kernel.launch((4, 4), out, caps)
    assert _made(kernel) == ["unit32", "narrow32"]
    assert not kernel.pick((4, 4), caps).source.unit_last
    assert_matches_interpreter((to_host(out[0]),), fn, (4, 4), [grid])


def test_users_int32_arithmetic_still_wraps_in_the_32_bit_kernel(backend):
    fn = _optimised(user_int32, 1)
    kernel, (got,) = _run(backend, fn, (4,), [base])
    assert "wide64" not in _made(kernel)
    with np.errstate(over="ignore"):
        want = np.array([base * np.int32(2) + np.int32(i) for i in range(4)], np.int32)
    np.testing.assert_array_equal(got, want)
    assert got[2] < 0


_EDGES = [-(2**31), -(2**31) + 1, -(2**30), -7, -1, 0, 1, 5, 2**30, 2**31 - 2, 2**31 - 1]


@pytest.mark.parametrize("inst", sorted(NSW_FUNCTIONS))
def test_stand_ins_give_the_irs_wrapped_int32_result(inst):
    fn = SIMULATOR_FUNCTIONS[NSW_FUNCTIONS[inst]]
    opcode = Opcode[inst.upper()]
    for a in _EDGES:
        for b in _EDGES:
            got = fn(np.int32(a), np.int32(b))
            want = eval_op(opcode, {}, [np.int32(a), np.int32(b)], I32)
            assert type(got) is np.int32 and got == want, (inst, a, b, got, want)
