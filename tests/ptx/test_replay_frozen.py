"""A replayed element-kernel step (``driver.Launch``) in device mode launches frozen
(``GPUKernel.freeze``, ``offload.runtime.frozen``): checked against the fake CuPy of
``test_launch_fastpath``, which decodes every launch's parameters. A later step's launch
hands the driver what the general launch would: the new arrays' addresses, the same
extents, strides and scalars, a fresh result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload import driver
from offload.steps import Launch
from tests.ptx.test_launch_fastpath import _backend, _counting_prepare, _last

pytestmark = pytest.mark.ptx

ys = np.zeros(1)
beta = 2.0


def shifted(i):
    return beta * ys[i] + 1.0


class Steps:
    """A recorder keeping the steps of one call."""

    def __init__(self) -> None:
        self.steps: list[tuple[Any, Any]] = []

    def step(self, fn: Any, inputs: Any, result: Any) -> None:
        self.steps.append((fn, list(inputs)))

    def refuse(self, why: str) -> None:
        raise AssertionError(why)


@pytest.fixture
def use_ys(monkeypatch: Any) -> Any:
    """Rebind the global ``shifted`` reads (restored after the test)."""

    def use(value: Any) -> Any:
        monkeypatch.setitem(globals(), "ys", value)
        return value

    return use


def _recorded(be: Any, state: Any) -> tuple[Any, dict[str, Any], Any, list[Any]]:
    """One recorded call of ``shifted``: (its result, its launch's decoded parameters,
    the step, the step's inputs)."""
    rec = Steps()
    first = driver.run(be, shifted, (6,), record=rec)
    general = dict(_last(state))
    ((launch, inputs),) = rec.steps
    assert isinstance(launch, Launch)
    return first, general, launch, inputs


def test_a_replayed_step_launches_frozen_with_the_general_launchs_parameters(
    fake_cupy, tmp_path, use_ys
):
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    here = use_ys(cp.asarray(np.arange(6.0)))
    first, general, launch, inputs = _recorded(be, state)
    at = next(k for k, v in enumerate(inputs) if v is here)
    other = cp.asarray(np.arange(6.0) + 10.0)
    out = launch(*[other if k == at else v for k, v in enumerate(inputs)])
    assert launch._fast and launch._fast[0] is not None  # (frozen on its first replay)
    got = _last(state)
    assert got["ys"] == other.data.ptr and got["out0"] == out.data.ptr
    assert out.data.ptr != first.data.ptr and out.shape == (6,)
    same = {k: v for k, v in general.items() if k not in ("ys", "out0")}
    assert {k: got[k] for k in same} == same  # extents, strides, scalars, function
    again = launch(*inputs)
    assert _last(state)["ys"] == here.data.ptr and _last(state)["out0"] == again.data.ptr


def test_a_writeable_host_array_keeps_the_general_launch(fake_cupy, tmp_path, use_ys):
    _, state = fake_cupy
    use_ys(np.arange(6.0))  # (copied on every call: no address to freeze)
    _, _, launch, inputs = _recorded(_backend("device", state, tmp_path), state)
    launch(*inputs)
    assert launch._fast == [None]


def test_unified_mode_replays_frozen_into_a_managed_result_and_waits(fake_cupy, tmp_path, use_ys):
    """Unified mode freezes the step too: the result is a fresh managed NumPy array the
    kernel writes at its own address, and the call synchronises before returning it."""
    from offload.runtime.memory import managed_buffer

    cp, state = fake_cupy
    use_ys(cp.asarray(np.arange(6.0)))
    first, general, launch, inputs = _recorded(_backend("unified", state, tmp_path), state)
    launch(*inputs)
    assert launch._fast and launch._fast[0] is not None
    syncs = state["syncs"]
    out = launch(*inputs)
    assert state["syncs"] == syncs + 1  # (the host may read it at once)
    owner = managed_buffer(out)
    assert type(out) is np.ndarray and owner is not None and out.shape == (6,)
    assert _last(state)["out0"] == owner.ptr != managed_buffer(first).ptr
    same = {k: v for k, v in general.items() if k != "out0"}
    assert {k: _last(state)[k] for k in same} == same


def test_a_frozen_host_array_is_read_from_its_copy_until_it_is_thawed(fake_cupy, tmp_path):
    import offload as ol

    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    global ys
    saved = ys
    try:
        ys = ol.use(np.arange(100_000.0))  # (too large to specialise a kernel on)
        rec = Steps()
        driver.run(be, shifted, (6,), record=rec)
        ((launch, inputs),) = rec.steps
        copy_ptr = _last(state)["ys"]
        prepared = _counting_prepare(be)
        out = launch(*inputs)  # (frozen here: the one prepare_captures of its image)
        launch(*inputs)
        assert launch._fast[0] is not None and _last(state)["ys"] == copy_ptr
        assert prepared == [1] and _last(state)["out0"] != out.data.ptr
        ys.setflags(write=True)  # thawed: its copy may be stale, so the general launch
        launch(*inputs)  # copies it again
        assert prepared == [2]
    finally:
        ys = saved


def test_a_fresh_backend_finds_a_device_arrays_address(fake_cupy, tmp_path):
    """The fold tail's frozen launch asks for its inputs' addresses before anything
    else of the backend used CuPy (a sum of a CuPy array is that one launch)."""
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    x = cp.asarray(np.arange(4.0))
    assert be.device_pointer(x) == x.data.ptr
    assert be.device_pointer(np.arange(4.0)) is None  # (a writeable host array: copied)
