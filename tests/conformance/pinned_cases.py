"""compute_g specialised on small frozen arrays (``GPUBackend.pinned_captures``), shared by
the sim lane (tests/sim) and the gpu lane (tests/gpu): CPython's values, the contents in
the kernel's constant bank only where every read is uniform, and never a stale value when
the array is thawed, changed, re-frozen or replaced. Each ``check_*`` takes the backend's
name (``gpu-sim`` or ``gpu``), whose dispatch-table entries it inspects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload import driver
from offload.ir.ops import Opcode

img = np.arange(30, dtype=np.float32).reshape(5, 6) - 7.0
w = ol.use(np.array([[1.0, -2.0, 1.0], [0.5, 4.0, 0.5], [1.0, -2.0, 1.0]], dtype=np.float32))
lut = ol.use(np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64))
mask = ol.use(np.array([True, False, True], dtype=np.bool_))


def conv(i, j):
    h, wd = img.shape
    acc = np.float32(0.0)
    for a in range(w.shape[0]):
        yy = min(max(i + a - 1, 0), h - 1)
        for b in range(3):
            acc += w[a, b] * img[yy, min(max(j + b - 1, 0), wd - 1)]
    return acc


def lookup(i, j):
    return lut[(i * 6 + j) % 8] * 2 + lut[3]


def masked(i, j):
    s = 0.0
    for b in range(3):
        if mask[b]:
            s += img[i, (j + b) % 6]
    return s


def _cpython(fn: Any, shape: tuple[int, int]) -> np.ndarray:
    return np.array([[fn(i, j) for j in range(shape[1])] for i in range(shape[0])])


def _compiled(fn: Any, name: str) -> list[Any]:
    return [
        c
        for (backend, key), entry in driver._TABLE.items()
        if backend.name == name and key[0] is fn.__code__
        for c in entry.compiled.values()
    ]


def _sources(fn: Any, name: str) -> str:
    out = []
    for c in _compiled(fn, name):
        out.append(c.kernel.leading().source.source)
    return "\n".join(out)


@pytest.fixture
def fresh() -> Iterator[None]:
    driver.clear_dispatch_table()
    yield
    driver.clear_dispatch_table()


def check_frozen_weights_give_cpython_values_from_the_constant_bank(name: str) -> None:
    got = np.asarray(ol.compute_g((5, 6), conv))
    np.testing.assert_array_equal(got, _cpython(conv, (5, 6)).astype(np.float32))
    (compiled,) = _compiled(conv, name)
    assert [c.name for c in compiled.ir.captures if c.value is not None] == ["w"]
    assert "cuda.const.array_like" in _sources(conv, name)
    # the warm lane serves the next call (same array, same contents)
    memo = driver._LANES[id(conv.__code__)]
    again = np.asarray(ol.compute_g((5, 6), conv))
    np.testing.assert_array_equal(again, got)
    assert len(_compiled(conv, name)) == 1
    assert driver._LANES[id(conv.__code__)] is memo  # no full-path call made a new memo


def check_thawed_changed_and_refrozen_weights_are_never_stale(name: str) -> None:
    global w
    saved = w
    try:
        w = ol.use(saved.copy())
        first = np.asarray(ol.compute_g((5, 6), conv))
        np.testing.assert_array_equal(first, _cpython(conv, (5, 6)).astype(np.float32))
        w.flags.writeable = True
        w[0, 0] = 7.0
        ol.use(w)  # changed and frozen again with no call between: a new record
        np.testing.assert_array_equal(
            np.asarray(ol.compute_g((5, 6), conv)), _cpython(conv, (5, 6)).astype(np.float32)
        )
        w.flags.writeable = True  # thawed: a plain host array now
        w[1, 1] = -8.0
        np.testing.assert_array_equal(
            np.asarray(ol.compute_g((5, 6), conv)), _cpython(conv, (5, 6)).astype(np.float32)
        )
        w = ol.use(np.full((3, 3), 0.25, dtype=np.float32))  # another array, rebound
        np.testing.assert_array_equal(
            np.asarray(ol.compute_g((5, 6), conv)), _cpython(conv, (5, 6)).astype(np.float32)
        )
    finally:
        w = saved


def _expect_pinned(fn: Any, name: str) -> None:
    """compute_g's values for ``fn`` are CPython's, from a kernel specialised on ``w``."""
    got = np.asarray(ol.compute_g((5, 6), fn))
    np.testing.assert_array_equal(got, _cpython(fn, (5, 6)).astype(np.float32))
    memo = driver._LANES[id(fn.__code__)]
    assert [c.name for c in memo.compiled.ir.captures if c.value is not None] == ["w"]


def check_changes_behind_the_freeze_record_are_never_stale(name: str) -> None:
    # The freeze record cannot see these: each call compares the pinned contents.
    global w
    saved = w
    try:
        base = np.ones((3, 3), dtype=np.float32)
        w = ol.use(base[:])  # a frozen view of a writeable array
        _expect_pinned(conv, name)
        base[0, 0] = 100.0
        _expect_pinned(conv, name)
        w = ol.use(np.arange(9, dtype=np.float32).reshape(3, 3))  # base: the arange
        _expect_pinned(conv, name)
        w.base[4] = 40.0
        _expect_pinned(conv, name)
        w = ol.use(saved.copy())
        _expect_pinned(conv, name)
        w.flags.writeable = True  # thawed, changed and frozen by hand, not by ol.use
        w[0, 0] = 50.0
        w.flags.writeable = False
        _expect_pinned(conv, name)
        w.flags.writeable = True
        w[2, 2] = -5.0
        w.flags.writeable = False
        ol.use(w)  # and ol.use on an array that is read-only already
        _expect_pinned(conv, name)
    finally:
        w = saved


def check_strided_and_reversed_weights(name: str) -> None:
    # the constant bank holds C-order contents; the pointer path reads with real strides
    global w
    saved = w
    try:
        grid = np.arange(36, dtype=np.float32).reshape(6, 6) - 10.0
        w = ol.use(grid.copy()[::2, 1::2])  # every other row and column: strided
        _expect_pinned(conv, name)
        w = ol.use(grid.copy()[3::-1, :3][:3])  # rows reversed: a negative stride
        _expect_pinned(conv, name)
    finally:
        w = saved


def check_dtype_and_out_with_pinned_weights(name: str) -> None:
    want = _cpython(conv, (5, 6))
    got = np.asarray(ol.compute_g((5, 6), conv, dtype=np.float64))
    np.testing.assert_array_equal(got, want.astype(np.float32).astype(np.float64))
    out = ol.compute_g((5, 6), conv)  # a device array of the mode, then reused as out=
    assert ol.compute_g((5, 6), conv, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), want.astype(np.float32))
    assert any(c.value is not None for x in _compiled(conv, name) for c in x.ir.captures)


def check_contents_that_keep_changing_stop_specialising(name: str) -> None:
    global w
    saved = w
    try:
        for k in range(driver.MAX_PINNED_KERNELS + 3):
            w = ol.use(np.full((3, 3), float(k), dtype=np.float32))
            got = np.asarray(ol.compute_g((5, 6), conv))
            np.testing.assert_array_equal(got, _cpython(conv, (5, 6)).astype(np.float32))
        compiled = _compiled(conv, name)
        assert len(compiled) == driver.MAX_PINNED_KERNELS + 1
        assert sum(all(c.value is None for c in x.ir.captures) for x in compiled) == 1
    finally:
        w = saved


def check_a_table_read_at_thread_dependent_indices_stays_in_global_memory(name: str) -> None:
    got = np.asarray(ol.compute_g((5, 6), lookup))
    np.testing.assert_array_equal(got, _cpython(lookup, (5, 6)))
    (compiled,) = _compiled(lookup, name)
    assert compiled.ir.captures[0].value is not None
    loads = [op for op in compiled.ir.ops() if op.opcode is Opcode.LOAD]
    assert len(loads) == 1  # lut[3] folded in the IR ...
    assert "cuda.const.array_like" not in _sources(lookup, name)  # ... the rest read as before


def check_a_frozen_bool_mask_in_the_constant_bank(name: str) -> None:
    got = np.asarray(ol.compute_g((5, 6), masked))
    np.testing.assert_array_equal(got, _cpython(masked, (5, 6)))
    assert "cuda.const.array_like" in _sources(masked, name)


def check_large_or_unfrozen_arrays_are_not_specialised(name: str) -> None:
    global w
    saved = w
    try:
        w = saved.copy()  # writeable: not frozen
        np.testing.assert_array_equal(
            np.asarray(ol.compute_g((5, 6), conv)), _cpython(conv, (5, 6)).astype(np.float32)
        )
        w = ol.use(np.ones((3, 100), dtype=np.float32))  # frozen, but 1200 bytes
        np.testing.assert_array_equal(
            np.asarray(ol.compute_g((5, 6), conv)), _cpython(conv, (5, 6)).astype(np.float32)
        )
        assert all(c.value is None for x in _compiled(conv, name) for c in x.ir.captures)
    finally:
        w = saved


CHECKS = sorted(name.removeprefix("check_") for name in dir() if name.startswith("check_"))
