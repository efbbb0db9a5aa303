"""compute_p's thread count (issue 18 item 6): one thread for small work, the faster of one
and all by measurement (the other mode on ``PROBES`` launches in a row, its fastest
counting), one while other processes load the machine; launches on one thread are mostly
not timed; the caller's numba thread count is left as it was."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import offload as ol
from offload.cpu import threads
from offload.cpu.threads import FRESH, MAX_PERIOD, PROBES, SMALL_WORK, ThreadChoice

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
    assert picked[: 1 + PROBES] == [4] + [1] * PROBES  # each mode measured
    later = picked[1 + PROBES :]
    assert later.count(4) <= PROBES * (2000 // MAX_PERIOD + 8)  # (4, 8, ... between tries)
    assert picked[-MAX_PERIOD + 1 :].count(4) <= PROBES


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
def test_a_slower_one_thread_does_not_move_to_all_threads_on_their_old_figure():
    # all threads measured 0.9x on free cores (not enough: one thread kept); then the
    # machine gets busy: one thread 2x slower, all threads 10x; only a fresh measurement of
    # all threads may choose them (the old figure chose them at once, 6 launches in a row)
    choice = _choice()
    _drive(choice, 10**6, {1: 1.0, 4: 0.9}, 300)
    picked = _drive(choice, 10**6, {1: 2.0, 4: 10.0}, 300)
    assert picked[:50].count(4) == 0
    assert picked.count(4) <= 2 * PROBES


@pytest.mark.unit
def test_all_threads_give_way_to_one_while_the_machine_is_loaded():
    choice = _choice()
    _drive(choice, 10**6, {1: 1.0, 4: 0.3}, 50)
    assert choice.pick(10**6) == 4
    choice.loaded = lambda: True  # type: ignore[method-assign]
    picked = [choice.pick(10**6) for _ in range(20)]
    assert picked == [1] * 20 and not choice.timed  # (not a figure of either mode)
    choice.loaded = lambda: False  # type: ignore[method-assign]
    assert choice.pick(10**6) == 4


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


@pytest.mark.unit
def test_a_slow_first_launch_of_all_threads_does_not_keep_one_thread():
    # the first launch of all threads after a run on one thread is cold (sleeping threads,
    # cold caches): 7pt-stencil on a 16-core host stayed on one thread, 168 us against 61
    choice = _choice()
    previous = [0]

    def seconds(threads: int) -> float:
        cold = threads == 4 and previous[0] == 1
        previous[0] = threads
        return 1.0 if threads == 1 else (3.0 if cold else 0.3)

    picked = []
    for _ in range(300):
        t = choice.pick(SMALL_WORK - 1)  # (small work: one thread first)
        picked.append(t)
        choice.record(SMALL_WORK - 1, t, seconds(t))
    assert picked[0] == 1
    assert picked[-100:].count(4) >= 100 - PROBES


@pytest.mark.unit
def test_one_thread_launches_are_timed_only_before_measuring_all_threads():
    choice = _choice()
    timed = []
    for _ in range(2000):
        t = choice.pick(100)
        timed.append(choice.timed)
        choice.record(100, t, 1.0 if t == 1 else 3.0)
    measurements = 2000 // MAX_PERIOD + 8
    assert sum(timed) <= (FRESH + PROBES) * measurements
    assert not any(timed[-MAX_PERIOD // 2 :])


@pytest.mark.unit
def test_a_loaded_machine_leaves_one_thread_launches_untimed():
    choice = _choice(loaded=True)
    timed = []
    for _ in range(200):
        t = choice.pick(10**6)
        timed.append(choice.timed)
        choice.record(10**6, t, 1.0)
    assert sum(timed[10:]) == 0


@pytest.mark.unit
@pytest.mark.parametrize(
    ("system", "ours", "cores", "want"),
    [
        (17, 16, 16, False),  # our own 16 threads, still finishing a launch: not a load
        (18, 1, 16, True),  # 17 threads of other processes on 16 cores
        (3, 1, 2, True),  # two busy processes beside us on 2 cores
        (2, 1, 2, False),
    ],
)
def test_load_counts_only_other_processes_threads(monkeypatch, system, ours, cores, want):
    # the 1-minute load average counts this process's threads: compute_p keeping 16 threads
    # busy made a 16-core host look loaded by itself, and so kept one thread
    monkeypatch.setattr(threads, "_system_running", lambda: system)
    monkeypatch.setattr(threads, "_own_running", lambda: ours)
    choice = ThreadChoice(cores)
    choice.cores = cores
    assert choice.loaded() is want


def test_the_running_threads_are_read_on_this_platform():
    others = threads._others_running()
    assert isinstance(others, float | int)
    try:
        ours = threads._own_running()
    except OSError:  # no /proc
        return
    assert ours >= 1  # this thread
    assert threads._system_running() >= 1


def test_untimed_launches_are_not_recorded():
    a = np.arange(100.0)

    def plus_one_of_hundred(i):
        return a[i] + 1.0

    ol.compute_p((100,), plus_one_of_hundred)
    (kernel,) = [k for k in _par_kernels() if k.fn.name == "plus_one_of_hundred"]
    records = []

    class Counting(ThreadChoice):
        def record(self, elements: int, threads: int, seconds: float) -> None:
            records.append(threads)
            super().record(elements, threads, seconds)

    kernel.threads = choice = Counting(4)
    choice.loaded = lambda: False  # type: ignore[method-assign]
    for _ in range(600):
        np.testing.assert_array_equal(ol.compute_p((100,), plus_one_of_hundred), a + 1.0)
    assert 0 < len(records) <= (FRESH + PROBES) * (600 // MAX_PERIOD + 8)


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
