"""The 32-bit kernel's launch guard and the kernel pair it picks from (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from offload.lowering import check_and_lower
from offload.ptx.guard import OFFSET_LIMIT, make_guard
from offload.ptx.passes.narrow import NARROW_LIMIT

pytestmark = pytest.mark.unit

L = NARROW_LIMIT
img = np.zeros((2, 3), np.float32)
n = 5
flag = True


def uses_all(i, j):
    return img[i % 2, j % 3] + (n + i if flag else j)


@pytest.fixture(scope="module")
def fits():
    return make_guard(check_and_lower(uses_all, 2).ir)


def _caps(ir_names, arr=((2, 3), (3, 1)), n_value=5, flag_value=True):
    values = {"img": (0, *arr, None), "n": n_value, "flag": flag_value}
    return [values[name] for name in ir_names]


@pytest.fixture(scope="module")
def names():
    return [c.name for c in check_and_lower(uses_all, 2).ir.captures]


@pytest.fixture(scope="module")
def unit_fits():
    return make_guard(check_and_lower(uses_all, 2).ir, unit_last=True)


@pytest.mark.parametrize(
    ("strides", "ok"), [((3, 1), True), ((1, 2), False), ((6, 2), False), ((-3, 1), True)]
)
def test_the_unit_stride_guard_admits_only_a_last_axis_stride_of_one(
    unit_fits, fits, names, strides, ok
):
    caps = _caps(names, arr=((2, 3), strides))
    assert fits((4, 4), caps)
    assert unit_fits((4, 4), caps) is ok


def test_the_unit_stride_guard_keeps_the_32_bit_limits(unit_fits, names):
    assert not unit_fits((L, 1), _caps(names))
    assert not unit_fits((4, 4), _caps(names, arr=((3, 1), (2**30, 1))))


def test_an_ordinary_launch_fits(fits, names):
    assert fits((3200, 4000), _caps(names))


@pytest.mark.parametrize("shape", [(L, 1), (1, L), (2**16, 2**15)], ids=["rows", "cols", "product"])
def test_an_index_space_at_the_limits_does_not_fit(fits, names, shape):
    assert not fits(shape, _caps(names))


def test_index_space_just_inside_the_limits_fits(fits, names):
    assert fits((L - 1, 1), _caps(names)) and fits((2**16, 2**15 - 1), _caps(names))


def test_a_captured_array_whose_far_element_is_2_31_away_does_not_fit(fits, names):
    # 3 rows with a stride of 2**30 elements: the last row starts 2**31 elements in.
    assert not fits((4, 4), _caps(names, arr=((3, 1), (2**30, 1))))
    assert fits((4, 4), _caps(names, arr=((3, 1), (2**30 - 1, 1))))


def test_negative_strides_count_by_their_magnitude(fits, names):
    assert not fits((4, 4), _caps(names, arr=((3, 1), (-(2**30), 1))))


def test_a_captured_extent_at_the_limit_does_not_fit(fits, names):
    assert not fits((4, 4), _caps(names, arr=((L, 1), (1, 1))))


def test_empty_captured_arrays_fit(fits, names):
    assert fits((4, 4), _caps(names, arr=((0, 3), (3, 1))))


@pytest.mark.parametrize(
    ("value", "ok"), [(-L, True), (L - 1, True), (L, False), (-L - 1, False), (2**40, False)]
)
def test_captured_integer_scalars_must_lie_in_the_assumed_range(fits, names, value, ok):
    assert fits((4, 4), _caps(names, n_value=value)) is ok


def test_offsets_are_checked_against_2_31():
    assert OFFSET_LIMIT == 2**31 and 2 * NARROW_LIMIT <= OFFSET_LIMIT
