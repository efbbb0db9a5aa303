"""compute_p's thread count (issue 18 item 6): one thread for small work, the faster of one
and all by measurement, one while the machine is loaded; the caller's numba thread count is
left as it was."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import offload as ol
from offload.cpu.threads import MAX_PERIOD, SMALL_WORK, ThreadChoice

pytestmark = pytest.mark.cpu


def _choice(loaded: bool = False) -> ThreadChoice:
    choice = ThreadChoice(4)
    choice.loaded = lambda: loaded  # type: ignore[method-assign]
    return choice


def _drive(choice: ThreadChoice, elements: int, seconds: dict[int, float], calls: int) -> list[int]:
    picked = []
    for _ in range(calls):
        threads = choice.pick(elements)
        picked.append(threads)
        choice.record(elements, threads, seconds[threads])
    return picked


@pytest.mark.unit
def test_small_work_starts_on_one_thread_and_large_work_on_all():
    assert _choice().pick(SMALL_WORK - 1) == 1
    assert _choice().pick(SMALL_WORK) == 4


@pytest.mark.unit
def test_the_faster_mode_is_kept_and_the_other_measured_ever_more_rarely():
    choice = _choice()
    picked = _drive(choice, 10**6, {1: 1.0, 4: 3.0}, 2000)  # all threads 3x slower (load)
    assert picked[:2] == [4, 1]  # each mode measured once
    later = picked[2:]
    assert later.count(4) <= 2000 // MAX_PERIOD + 8  # (4, 8, ... 256 between tries)
    assert picked[-MAX_PERIOD + 1 :].count(4) <= 1


@pytest.mark.unit
def test_a_change_of_speed_changes_the_choice():
    choice = _choice()
    _drive(choice, 10**6, {1: 1.0, 4: 3.0}, 300)
    picked = _drive(choice, 10**6, {1: 1.0, 4: 0.3}, 600)  # the cores became free
    assert picked[-100:].count(4) >= 99


@pytest.mark.unit
def test_a_loaded_machine_runs_one_thread_and_does_not_try_all():
    picked = _drive(_choice(loaded=True), 10**6, {1: 1.0, 4: 0.1}, 600)
    assert set(picked) == {1}


@pytest.mark.unit
def test_size_classes_are_measured_apart():
    choice = _choice()
    _drive(choice, 10**6, {1: 1.0, 4: 0.3}, 50)
    assert choice.pick(100) == 1  # small work keeps its own first guess


def test_compute_p_leaves_the_callers_thread_count_and_agrees_with_compute_s():
    a = np.random.default_rng(1).random(SMALL_WORK * 3)

    def f(i):
        return a[i] * 2.0 - 1.0

    before = numba.get_num_threads()
    for n in (10, SMALL_WORK * 3):
        for _ in range(6):  # both modes and the periodic re-measurement
            np.testing.assert_array_equal(ol.compute_p(n, f), ol.compute_s(n, f))
    assert numba.get_num_threads() == before


def test_load_counts_the_threads_running_now_as_well_as_the_average(monkeypatch):
    # the 1-minute average lags new work by a minute; the running count sees it at once
    from offload.cpu import threads

    for avg, running, want in [(0.2, 3.0, True), (3.1, 1.0, True), (0.5, 2.0, False)]:
        monkeypatch.setattr(threads, "_load", lambda a=avg, r=running: (a, r))
        choice = ThreadChoice(2)
        choice.cores = 2
        assert choice.loaded() is want, (avg, running)
    avg, running = threads._load()  # this platform's reading: numbers, this thread running
    assert avg >= 0.0 and running >= 0.0


def test_all_threads_are_measured_when_a_launch_has_fewer_tasks_than_threads():
    # 3 tasks under a choice of 8 threads run as 3 ranges; the launch is still the
    # all-threads mode's measurement (recorded as 3, it was never compared, and all threads
    # stayed picked for every launch: sum at 2^16 on a 16-core host, 8 partials)
    a = np.arange(3.0)

    def twice_of_three(i):
        return a[i] * 2.0

    ol.compute_p((3,), twice_of_three)
    (kernel,) = [k for k in _par_kernels() if k.fn.name == "twice_of_three"]
    kernel.threads = choice = ThreadChoice(8)
    choice.loaded = lambda: False  # type: ignore[method-assign]  # (CI's cores are busy)
    for _ in range(40):
        np.testing.assert_array_equal(ol.compute_p((3,), twice_of_three), a * 2.0)
    (size,) = choice._sizes.values()
    assert set(size.cost) == {1, 8}


def _par_kernels():
    from offload.cpu import CPU_PAR

    return list(CPU_PAR._cache.values())
