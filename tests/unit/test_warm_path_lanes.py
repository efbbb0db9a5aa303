"""The driver's warm lane (a memo found by code identity, a generated capture reader) and the
API's per-configuration backend never give a stale or wrongly specialised result.

The backend here runs kernels with the IR interpreter (no numba): what is tested is the
dispatch, and every call's values are compared with CPython's."""

from __future__ import annotations

import math
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload import driver, targets, warm_lane
from offload.config import config
from offload.diagnostics import OffloadError
from offload.ir.interp import compute as interpret

pytestmark = pytest.mark.unit

_unpatched_run = driver._run


class InterpKernel:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]):
        for out, got in zip(outs, interpret(self.fn, shape, captures), strict=True):
            out[...] = got


class InterpBackend:
    """The Backend protocol over the IR interpreter; counts compiles and launches."""

    def __init__(self, writable: bool = True) -> None:
        self.name = "interp"
        self.compiles = 0
        self.launches = 0
        self._writable = writable

    def compile(self, fn, options):
        self.compiles += 1
        kernel = InterpKernel(fn)
        real = kernel.launch

        def counted(shape, outs, captures):
            self.launches += 1
            real(shape, outs, captures)

        kernel.launch = counted  # type: ignore[method-assign]
        return kernel

    def allocate(self, shape, dtypes):
        return [np.empty(shape, dt) for dt in dtypes]

    def writable(self, out):
        return self._writable and isinstance(out, np.ndarray)

    def prepare_outputs(self, outs):
        pass

    def prepare_captures(self, captures):
        return list(captures)

    def pinned_captures(self, values):
        return {}

    def launcher(self, fn, kernel, values, general):
        return None

    def explain(self, fn, options, shape):
        return ""


@pytest.fixture
def be():
    return InterpBackend()


def warm_lane_of(fn) -> warm_lane.Memo | None:
    return driver._LANES.get(id(fn.__code__))


def test_rebound_closure_scalar_is_read_on_every_warm_call(be):
    k = 2
    arr = np.arange(5.0)

    def times_k(i):
        return arr[i] * k

    for value in (2, 3, -7):
        k = value
        np.testing.assert_array_equal(driver.run(be, times_k, (5,)), np.arange(5.0) * value)
    assert be.compiles == 1 and warm_lane_of(times_k) is not None


def test_closure_array_swapped_for_another_dtype_recompiles_and_changes_the_result(be):
    arr = np.arange(4, dtype=np.float32)

    def double(i):
        return arr[i] * 2

    assert driver.run(be, double, (4,)).dtype == np.float32
    arr = np.arange(4, dtype=np.int16) + 1
    got = driver.run(be, double, (4,))
    assert got.dtype == np.int16 and be.compiles == 2
    np.testing.assert_array_equal(got, (np.arange(4) + 1) * 2)
    arr = np.full(4, 0.5, dtype=np.float32)  # back to the first types: no third compile
    np.testing.assert_array_equal(driver.run(be, double, (4,)), np.full(4, 1.0, np.float32))
    assert be.compiles == 2


class Tagged(np.ndarray):
    """An array of another type with the same capture kind as a plain ``np.ndarray``
    (as a CuPy array and a frozen host array are both ``("array", dtype, rank)``)."""


def test_array_of_another_type_with_the_same_kind_gets_a_lane_of_its_own(be, monkeypatch):
    # Run 8 (H100): volume-rendering's ray lengths start as a frozen host array and become
    # CuPy results. Both have the capture kind ("array", "<i4", 1), and the reader cached for
    # that kind tested for the first array's type, so every later call took the full path.
    full: list[int] = []
    monkeypatch.setattr(driver, "_run", lambda *a: full.append(1) or _unpatched_run(*a))
    plain = np.arange(6.0)
    arr = plain

    def twice(i):
        return arr[i] * 2

    # The first call of a new type takes the full path, later ones not; a type seen before
    # finds its memo among the lane's earlier ones (Memo.others) without the full path.
    for a, calls in ((plain, 1), (plain.view(Tagged), 2), (plain, 2), (plain.view(Tagged), 2)):
        arr = a
        for _ in range(3):
            np.testing.assert_array_equal(driver.run(be, twice, (6,)), np.arange(6.0) * 2)
        assert len(full) == calls
    assert be.compiles == 1  # one kernel serves both types


def test_captured_scalar_changing_from_int_to_float_misses_the_lane(be):
    k = 2

    def plus_k(i):
        return i + k

    assert driver.run(be, plus_k, (3,)).dtype == np.int64
    k = 0.5
    got = driver.run(be, plus_k, (3,))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.arange(3) + 0.5)


def test_array_reshaped_in_place_to_another_rank_is_refused_on_the_warm_call(be):
    arr = np.arange(6.0)

    def first(i):
        return arr[i]

    driver.run(be, first, (6,))
    arr.shape = (2, 3)  # arr[i] is now a row: a view, which an element cannot be
    with pytest.raises(OffloadError, match="cannot return a view of captured 'arr'"):
        driver.run(be, first, (6,))


def test_int_captured_beyond_int64_on_a_warm_call_is_an_error_not_a_wrapped_value(be):
    k = 1

    def plus_k(i):
        return i + k

    driver.run(be, plus_k, (2,))
    k = 2**63
    with pytest.raises(OffloadError):
        driver.run(be, plus_k, (2,))


def test_emptied_closure_cell_fails_as_on_a_cold_call(be):
    k = 1.0

    def plus_k(i):
        return i + k  # noqa: F821  (k is deleted below: the cell is empty)

    driver.run(be, plus_k, (2,))
    del k
    # As a cold call reports it: the name, located at its use (issue 19).
    with pytest.raises(OffloadError, match="name 'k' is not defined"):
        driver.run(be, plus_k, (2,))


m = math
c = 1.0


def helper(x):
    return x + 1


def uses_module(i):
    return m.floor(i / 2.0)


def uses_helper(i):
    return helper(i)


def plus_c(i):
    return i + c


def test_rebound_module_is_not_served_from_the_lane(be, monkeypatch):
    np.testing.assert_array_equal(driver.run(be, uses_module, (4,)), [0, 0, 1, 1])
    other = types.ModuleType("other_math")
    other.floor = math.ceil  # type: ignore[attr-defined]
    monkeypatch.setitem(globals(), "m", other)
    np.testing.assert_array_equal(driver.run(be, uses_module, (4,)), [0, 1, 1, 2])


def test_rebound_helper_function_is_not_served_from_the_lane(be, monkeypatch):
    np.testing.assert_array_equal(driver.run(be, uses_helper, (3,)), np.arange(3) + 1)
    monkeypatch.setitem(globals(), "helper", lambda x: x * 10)
    np.testing.assert_array_equal(driver.run(be, uses_helper, (3,)), np.arange(3) * 10)


def test_rebound_global_scalar_is_read_on_every_warm_call(be, monkeypatch):
    for value in (1.0, 2.5, -3.0):
        monkeypatch.setitem(globals(), "c", value)
        np.testing.assert_array_equal(driver.run(be, plus_c, (3,)), np.arange(3) + value)
    assert be.compiles == 1


def test_same_code_with_other_globals_reads_its_own_globals(be):
    other = types.FunctionType(plus_c.__code__, {**globals(), "c": 100.0})
    np.testing.assert_array_equal(driver.run(be, plus_c, (3,)), np.arange(3) + 1.0)
    np.testing.assert_array_equal(driver.run(be, other, (3,)), np.arange(3) + 100.0)
    np.testing.assert_array_equal(driver.run(be, plus_c, (3,)), np.arange(3) + 1.0)
    np.testing.assert_array_equal(driver.run(be, other, (3,)), np.arange(3) + 100.0)


def test_lambdas_recreated_per_call_read_their_own_closures(be):
    got = [driver.run(be, lambda i: i * n, (3,)) for n in range(4)]
    for n, g in enumerate(got):
        np.testing.assert_array_equal(g, np.arange(3) * n)
    assert be.compiles == 1


def test_warm_call_with_another_rank_is_a_located_error(be):
    arr = np.arange(6.0)

    def first(i):
        return arr[i]

    driver.run(be, first, (6,))
    with pytest.raises(OffloadError, match="takes 1 index argument"):
        driver.run(be, first, (2, 3))


def test_dtype_argument_changes_miss_the_lane(be):
    def half(i):
        return i / 2

    assert driver.run(be, half, (3,), dtype=np.float32).dtype == np.float32
    assert driver.run(be, half, (3,), dtype=np.float32).dtype == np.float32
    assert driver.run(be, half, (3,)).dtype == np.float64
    assert driver.run(be, half, (3,), dtype="float32").dtype == np.float32
    wanted = [np.float32]
    assert driver.run(be, half, (3,), dtype=wanted).dtype == np.float32
    wanted[0] = np.int32  # the same list object, other contents
    assert driver.run(be, half, (3,), dtype=wanted).dtype == np.int32


def test_out_argument_of_another_dtype_or_shape_is_not_served_by_the_lane(be):
    def third(i):
        return i / 3

    out = np.zeros(3, np.float32)
    assert driver.run(be, third, (3,), out=out) is out
    np.testing.assert_allclose(out, np.arange(3) / 3, rtol=1e-6)
    out64 = np.zeros(3, np.float64)
    driver.run(be, third, (3,), out=out64)
    np.testing.assert_array_equal(out64, np.arange(3) / 3)
    with pytest.raises(ValueError, match="shape"):
        driver.run(be, third, (3,), out=np.zeros(4, np.float64))
    with pytest.raises(TypeError, match="out="):
        driver.run(be, third, (3,), out=[0.0, 0.0, 0.0])
    fresh = driver.run(be, third, (3,))  # back to allocating: not written into out64
    assert fresh is not out64 and fresh.dtype == np.float64


def test_out_overlapping_a_captured_array_is_staged_on_warm_calls_too(be, monkeypatch):
    allocations: list[tuple[int, ...]] = []
    real = be.allocate
    monkeypatch.setattr(
        be, "allocate", lambda shape, dts: allocations.append(shape) or real(shape, dts)
    )
    a, b = np.arange(5.0), np.zeros(5)
    src = a

    def plus_one(i):
        return src[i] + 1.0

    for _ in range(3):  # ping-pong: out never overlaps what is read, nothing is allocated
        assert driver.run(be, plus_one, (5,), out=b) is b
        src, b = b, src
    assert allocations == [] and warm_lane_of(plus_one) is not None
    for k in range(3):  # out is what is read: computed into a fresh array, then copied
        before = src.copy()
        assert driver.run(be, plus_one, (5,), out=src) is src
        np.testing.assert_array_equal(src, before + 1.0)
        assert len(allocations) == k + 1


def test_out_the_backend_cannot_write_is_staged_on_warm_calls_too():
    be = InterpBackend(writable=False)

    def twice(i):
        return i * 2.0

    for _ in range(3):
        out = np.zeros(4)
        assert driver.run(be, twice, (4,), out=out) is out
        np.testing.assert_array_equal(out, np.arange(4) * 2.0)


def test_changed_options_miss_the_lane(be):
    def plain(i):
        return i + 1

    driver.run(be, plain, (3,))
    saved = config.bounds_check
    try:
        config.bounds_check = True
        driver.run(be, plain, (3,))
        memo = warm_lane_of(plain)
        assert memo is not None and memo.options.bounds_check
    finally:
        config.bounds_check = saved
    assert be.compiles == 2


def test_two_backends_alternating_each_get_their_own_kernels():
    a, b = InterpBackend(), InterpBackend()

    def inc(i):
        return i + 1

    for _ in range(3):
        np.testing.assert_array_equal(driver.run(a, inc, (3,)), np.arange(3) + 1)
        np.testing.assert_array_equal(driver.run(b, inc, (3,)), np.arange(3) + 1)
    assert (a.compiles, a.launches, b.compiles, b.launches) == (1, 3, 1, 3)


def test_zero_size_shape_launches_nothing_on_warm_calls(be):
    def one(i):
        return 1.0

    for _ in range(2):
        assert driver.run(be, one, (0,)).shape == (0,)
    assert be.launches == 0


@pytest.fixture
def api_on_interp(monkeypatch):
    """compute_g routed to an interpreter backend: the API's backend factory replaced and a
    config field assigned, which must make the API resolve its backend again."""
    be = InterpBackend()
    monkeypatch.setattr(targets, "backend_named", lambda name: be)
    saved = config.memory
    config.memory = "device" if saved == "unified" else "unified"
    yield be
    config.memory = saved


def test_api_resolves_its_backend_again_when_the_config_changes(api_on_interp):
    x = np.arange(4, dtype=np.float32)
    for value in (2.0, -1.0, 0.5):
        alpha = np.float32(value)
        got = ol.compute_g(4, lambda i: alpha * x[i] + 1)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, alpha * x + 1)
    assert api_on_interp.compiles == 1 and api_on_interp.launches == 3


def test_api_errors_are_still_clean_offload_errors(api_on_interp):
    def rec(i):
        return rec(i - 1)

    with pytest.raises(OffloadError) as info:
        ol.compute_g(3, rec)
    assert info.value.__traceback__ is not None
    frames = {f.name for f in info.traceback}
    assert "run" not in frames and "_call" not in frames


def test_tuple_out_ping_pong_is_served_by_the_lane_with_cpythons_values(be, monkeypatch):
    full = []
    monkeypatch.setattr(driver, "_run", lambda *a: full.append(1) or _unpatched_run(*a))
    state = np.arange(5.0)

    def step(i):  # the next state and a by-product, written into two arrays
        return state[(i + 1) % 5] + 1.0, state[i] * 2.0

    bufs = [(np.zeros(5), np.zeros(5)), (np.zeros(5), np.zeros(5))]
    for it in range(4):
        want = [state[(i + 1) % 5] + 1.0 for i in range(5)], [state[i] * 2.0 for i in range(5)]
        out = bufs[it % 2]
        assert driver.run(be, step, (5,), out=out) is out
        np.testing.assert_array_equal(out[0], want[0])
        np.testing.assert_array_equal(out[1], want[1])
        state = out[0]  # the next call reads what this one wrote, into the other pair
    assert len(full) == 1 and warm_lane_of(step) is not None  # only the first call


def test_tuple_out_overlapping_a_capture_or_of_another_kind_leaves_the_lane(be):
    src = np.arange(4.0)

    def pair(i):
        return src[(i + 1) % 4], src[i] + 0.5

    out = (np.zeros(4), np.zeros(4))
    driver.run(be, pair, (4,), out=out)
    driver.run(be, pair, (4,), out=out)
    before = src.copy()
    staged = (src, np.zeros(4))  # the first result is what is read: staged, then copied
    assert driver.run(be, pair, (4,), out=staged) is staged
    np.testing.assert_array_equal(staged[0], np.roll(before, -1))
    np.testing.assert_array_equal(staged[1], before + 0.5)
    with pytest.raises(ValueError, match="shape"):
        driver.run(be, pair, (4,), out=(np.zeros(4), np.zeros(5)))
    with pytest.raises(TypeError, match="out="):
        driver.run(be, pair, (4,), out=(np.zeros(4), [0.0] * 4))


def test_a_ping_pong_alternating_capture_types_stays_on_the_warm_lane(be, monkeypatch):
    # Run 12 (H100): 2d-convolution at 200x300 in device mode captured a frozen host array
    # on its first iteration and device results on the others; with one memo per code
    # object every run took the full path twice (and regenerated a reader), 4x slower
    # than unified mode. With the lane's earlier memos, only the first run does.
    full: list[int] = []
    monkeypatch.setattr(driver, "_run", lambda *a: full.append(1) or _unpatched_run(*a))
    first = np.arange(6.0)
    src = first

    def step(i):
        return src[i] + 1.0

    for _ in range(3):
        src = first
        for _ in range(4):
            src = driver.run(be, step, (6,)).view(Tagged)
    assert len(full) == 2
    np.testing.assert_array_equal(src, np.arange(6.0) + 4)


def test_the_lane_keeps_a_bounded_number_of_memos(be):
    k = 1

    def add(i):
        return i + k

    for k in (1, 2.0, True, np.int8(3), np.float32(1.5), 7):  # six capture types in turn
        driver.run(be, add, (3,))
    lane = driver._LANES[id(add.__code__)]
    assert 1 + len(lane.others) == warm_lane.LANE_MEMOS


def test_a_first_call_without_out_then_calls_with_out_stay_on_the_warm_lane(be, monkeypatch):
    # The suite's (R) pattern: a run allocates its result, then writes it again with out=.
    # Both call styles share one reader; each keeps its own memo (Memo.style).
    full: list[int] = []
    monkeypatch.setattr(driver, "_run", lambda *a: full.append(1) or _unpatched_run(*a))
    x = np.arange(5.0)

    def double(i):
        return x[i] * 2

    for _ in range(3):
        got = driver.run(be, double, (5,))
        driver.run(be, double, (5,), out=got)
        driver.run(be, double, (5,), out=got)
    assert len(full) == 2
    np.testing.assert_array_equal(got, x * 2)
