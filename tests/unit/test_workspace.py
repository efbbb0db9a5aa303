"""The scratch sets kept between a skeleton's launches (``offload.acc.skeletons.workspace``):
one per host thread and stream and shape, reused, zeroed counters, dropped after a failed
launch, and at most ``KEEP`` of them."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from offload.acc.skeletons import workspace

pytestmark = pytest.mark.unit

F32 = [np.dtype(np.float32)]


def test_a_set_is_reused_on_one_thread_and_made_anew_on_another() -> None:
    key, ws, count = workspace.scratch("gpu-sim", 3, 40, F32)
    assert ws[0].shape == (3, 40) and ws[0].dtype == np.float32
    assert count.shape == (3,) and count.dtype == np.int32 and not count.any()
    again = workspace.scratch("gpu-sim", 3, 40, F32)
    assert again[0] == key and again[1][0] is ws[0] and again[2] is count
    other: list[object] = []
    t = threading.Thread(target=lambda: other.append(workspace.scratch("gpu-sim", 3, 40, F32)))
    t.start()
    t.join()
    (made,) = other
    assert made[2] is not count  # type: ignore[index]
    assert workspace.scratch("gpu-sim", 4, 40, F32)[2] is not count  # (another shape)


def test_a_discarded_set_is_made_anew_and_the_cache_is_bounded() -> None:
    key, _, count = workspace.scratch("gpu-sim", 2, 8, F32)
    count[0] = 5  # (a failed launch left it counting)
    workspace.discard(key)
    _, _, fresh = workspace.scratch("gpu-sim", 2, 8, F32)
    assert fresh is not count and not fresh.any()
    for width in range(workspace.KEEP + 5):
        workspace.scratch("gpu-sim", 1, 100 + width, F32)
    assert len(workspace._SETS) <= workspace.KEEP


def test_kept_makes_a_set_once_per_spec_and_keeps_specs_apart() -> None:
    made: list[int] = []

    def make() -> list[int]:
        made.append(1)
        return [len(made)]

    key, first = workspace.kept("gpu-sim", ("onepass", 7, ("<f4",)), make)
    again_key, again = workspace.kept("gpu-sim", ("onepass", 7, ("<f4",)), make)
    assert again is first and again_key == key and made == [1]
    _, other = workspace.kept("gpu-sim", ("onepass", 8, ("<f4",)), make)
    assert other is not first and made == [1, 1]
    # (a scratch set of the same sizes is another spec)
    assert workspace.scratch("gpu-sim", 7, 1, F32)[1] is not first


def test_plain_shape_is_the_array_shape_or_none() -> None:
    from offload.frontend.captures import plain_shape

    a = np.zeros((3, 4))
    assert plain_shape(a) == (3, 4) and plain_shape(a[:, 1]) == (3,)

    class Sub(np.ndarray):  # type: ignore[type-arg]
        pass

    assert plain_shape(a.view(Sub)) is None  # (a subclass: its own rules)
    assert plain_shape([1, 2]) is None and plain_shape(3.0) is None
