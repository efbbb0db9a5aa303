"""compute_p's skeleton kernels run on one thread or all, as their launches measure
(``offload.cpu.threads.ThreadChoice``), and the bits do not depend on which (issue 18
item 6: compute_p must not lose to compute_s on small work or a loaded machine)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pytest

import offload as ol
from offload.acc.skeletons import build
from offload.cpu.threads import SMALL_WORK, ThreadChoice

pytestmark = pytest.mark.cpu


def add(a: Any, b: Any) -> Any:
    return a + b


def _parallel_modules() -> list[build.Module]:
    return [m for key, m in build._CACHE.items() if key[0] == "cpu-par"]


def test_small_skeleton_launches_run_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = numba.set_num_threads

    def spy(n: int) -> None:
        seen.append(n)
        real(n)

    monkeypatch.setattr(numba, "set_num_threads", spy)
    x = np.arange(SMALL_WORK // 4, dtype=np.float64)
    got = ol.compute_p(ol.scanl1(add, x))
    np.testing.assert_array_equal(got, np.cumsum(x))
    assert seen and seen[0::2] == [1] * len(seen[0::2])  # each launch: 1, then restored
    assert any(m.choices for m in _parallel_modules())


def test_skeleton_bits_do_not_depend_on_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from offload.acc import scan_job

    monkeypatch.setattr(scan_job, "CPU_SEQUENTIAL_BELOW", 0)  # the scan's chunk tree, not one chunk
    rng = np.random.default_rng(5)
    x = rng.standard_normal(3 * SMALL_WORK + 17)
    nodes = (ol.fold_all(add, 0.0, x), ol.scanl1(add, x), ol.fold_seg(add, 0.0, x, SEGMENTS))
    got = {}
    for threads in ("one", "all"):
        pick = (lambda self, n: 1) if threads == "one" else (lambda self, n: self.max_threads)
        monkeypatch.setattr(ThreadChoice, "pick", pick)
        got[threads] = [np.asarray(ol.compute_p(node)).tobytes() for node in nodes]
    assert got["one"] == got["all"]


SEGMENTS = np.array([5, 0, 3 * SMALL_WORK, 12], np.int64)
