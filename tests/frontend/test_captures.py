"""Captured values are kernel parameters re-read at every call, never baked-in constants."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.frontend.captures import CapturePath
from offload.frontend.lower import capture_type_key, fetch_captures, lower
from offload.ir.interp import compute
from offload.ir.ops import Opcode

pytestmark = pytest.mark.unit

SCALE = 2
ARR = np.arange(6, dtype=np.float64)


def scaled(i: int) -> Any:
    return ARR[i] * SCALE


def test_captured_global_scalar_is_a_parameter_not_a_constant() -> None:
    lowered = lower(scaled, 1)
    assert [c.name for c in lowered.ir.captures] == ["ARR", "SCALE"]
    consts = [op.attrs["value"] for op in lowered.ir.ops() if op.opcode is Opcode.CONST]
    assert 2 not in consts


def test_changed_global_is_seen_by_the_same_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    lowered = lower(scaled, 1)
    first = compute(lowered.ir, (6,), fetch_captures(scaled, lowered))[0]
    monkeypatch.setitem(scaled.__globals__, "SCALE", 5)
    second = compute(lowered.ir, (6,), fetch_captures(scaled, lowered))[0]
    np.testing.assert_array_equal(first, ARR * 2)
    np.testing.assert_array_equal(second, ARR * 5)


def _make_closure(k: float, table: np.ndarray) -> Any:
    def f(i: int) -> Any:
        return table[i] + k

    return f


def test_closure_cells_are_fetched_by_path() -> None:
    fn = _make_closure(0.5, np.ones(3))
    lowered = lower(fn, 1)
    assert all(p.steps[0][0] == "closure" for p in lowered.captures)
    values = fetch_captures(fn, lowered)
    assert isinstance(values[0], np.ndarray)
    assert values[1] == 0.5


def test_capture_type_key_distinguishes_python_and_numpy_scalars() -> None:
    key = capture_type_key([1, 1.0, True, np.float32(1), np.zeros((2, 3), np.int32)])
    assert key == (
        ("pyint",),
        ("pyfloat",),
        ("pybool",),
        ("np", "<f4"),
        ("array", "<i4", 2),
    )


def test_a_global_read_in_two_places_is_captured_once() -> None:
    lowered = lower(lambda i: ARR[i] + ARR[0] * SCALE + SCALE, 1)
    assert [c.name for c in lowered.ir.captures] == ["ARR", "SCALE"]


class _Config:
    weights = np.linspace(0.0, 1.0, 4)


CFG = _Config()


def test_attribute_of_a_global_object_is_captured_with_an_attr_step() -> None:
    lowered = lower(lambda i: CFG.weights[i], 1)
    assert lowered.captures == (CapturePath((("global", "CFG"), ("attr", "weights"))),)
    assert lowered.ir.captures[0].name == "CFG.weights"


def _helper(i: int) -> Any:
    return ARR[i] * 3


def test_helper_globals_are_reached_through_the_helper() -> None:
    fn = lambda i: _helper(i)  # noqa: E731, PLW0108  (the helper must be called, not be the root)
    lowered = lower(fn, 1)
    assert lowered.captures == (CapturePath((("global", "_helper"), ("global", "ARR"))),)
    got = compute(lowered.ir, (6,), fetch_captures(fn, lowered))[0]
    np.testing.assert_array_equal(got, ARR * 3)
