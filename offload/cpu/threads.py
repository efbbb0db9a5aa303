"""How many threads a ``compute_p`` launch uses: one or all, chosen per kernel and size by
what the launches measured (issue 18 item 6).

A parallel launch costs a few microseconds to wake the pool, and on a machine whose cores
are busy with other work the slowest thread decides when the launch ends: a kernel that
takes 0.6 ms on one thread measured 4 ms on two under load. So ``compute_p`` must never
assume more threads are faster. ``ThreadChoice`` keeps, per kernel and per size class
(powers of two of the element count), the measured time per element with one thread and
with all of them, launches with all threads only where they measure clearly faster (at
most ``ALL_MARGIN`` of one thread's time; a launch's time counts at most ``TAIL`` times the
running figure), and re-measures the other now and then: after ``4, 8, 16, ...
MAX_PERIOD`` launches while the choice holds (so a mode 5x slower costs at most 5/256 = 2%
on average), sooner after it changed. The first guess, before anything is
measured, is one thread below ``SMALL_WORK`` elements (the crossover of a trivial kernel on
a 2-core machine, ``benchmarks``: 16-64 k elements) and all threads above. While the
machine is loaded (``ThreadChoice.loaded``: other processes keep every core busy) one
thread is chosen and all threads are not tried.

One thread means the ``cpu-par`` kernel's whole range of tasks on the calling thread (a
sequential numba function, ``offload.cpu.loopnest``): no scheduler, and no second kernel
to compile. All threads means ``max_threads`` ranges of the tasks on numba's threads
(``offload.cpu.parallel``; ``numba.set_num_threads`` makes them fewer threads, each then
running several ranges).

``quiet_threading`` makes numba's OpenMP pool sleep rather than spin between launches
(``OMP_WAIT_POLICY=PASSIVE``, unless the user set it): a spinning pool takes the cores that
other processes, or the calling thread, need (the main job measured compute_p at 0.21x
compute_s on a loaded 2-core machine).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

SMALL_WORK = 32768
"""Elements below which the first launch uses one thread."""
MAX_PERIOD = 256
"""Most launches between two measurements of the mode not chosen."""
ALPHA = 0.3
"""Weight of a new measurement in the running time per element of the chosen mode."""
TAIL = 1.5
"""A launch of the chosen mode counts at most this many times its running time: one
preempted launch (a loaded machine stops a thread for milliseconds) does not make the
other mode look faster (with ``ALPHA``, it raises the running time by 15% at most, less
than ``ALL_MARGIN`` asks of all threads); a lasting slowdown still shows within a few
launches."""
ALL_MARGIN = 0.8
"""All threads are chosen only where they take at most this share of one thread's time:
under contention their typical launch can be a little faster while their slow launches
are much slower (10^4 elements of blackscholes beside two busy processes on 2 cores: a
median of 0.112 ms against 0.121 on one thread, a mean of about 1 ms against 0.19)."""

now = time.perf_counter


def quiet_threading() -> None:
    """Ask OpenMP runtimes for sleeping, not spinning, idle threads (before numba starts
    its pool; a value the user set wins)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("KMP_BLOCKTIME", "0")  # Intel's OpenMP, where numba uses it


@dataclass
class _Size:
    """What one size class of one kernel measured."""

    cost: dict[int, float] = field(default_factory=dict)
    """Threads -> seconds per element (running average)."""
    chosen: int = 1
    period: int = 4
    calls: int = 0


class ThreadChoice:
    """The thread count of each launch of one parallel kernel (see the module doc)."""

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self.cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
        self._sizes: dict[int, _Size] = {}
        self._load_checked = -2.0
        self._loaded = False

    def pick(self, elements: int) -> int:
        """The thread count for a launch over ``elements`` elements."""
        if self.max_threads <= 1:
            return 1
        size = self._sizes.get(elements.bit_length())
        if size is None:
            many = elements >= SMALL_WORK and not self.loaded()
            size = _Size(chosen=self.max_threads if many else 1)
            self._sizes[elements.bit_length()] = size
        other = self.max_threads if size.chosen == 1 else 1
        if other not in size.cost:
            if size.chosen not in size.cost:
                return size.chosen
            if other > 1 and self.loaded():
                return size.chosen  # measure all threads when the cores are free
            return other
        size.calls += 1
        if size.calls >= size.period:
            size.calls = 0
            if other > 1 and self.loaded():
                return size.chosen
            return other
        return size.chosen

    def loaded(self) -> bool:
        """Whether other work keeps the cores busy: the 1-minute load average, or the
        threads running right now (Linux: ``/proc/loadavg``; the average takes a minute
        to see new work), is at least the number of cores plus one (this thread); then
        one thread is the choice, as a launch on all threads would wait for a core
        (checked at most every second)."""
        t = now()
        if t - self._load_checked > 1.0:
            self._load_checked = t
            self._loaded = max(_load()) >= self.cores + 1
        return self._loaded

    def record(self, elements: int, threads: int, seconds: float) -> None:
        """Note that a launch over ``elements`` with ``threads`` took ``seconds``."""
        size = self._sizes.get(elements.bit_length())
        if size is None or elements <= 0:
            return
        per = seconds / elements
        chosen = size.cost.get(size.chosen)
        if threads == size.chosen and chosen is not None:
            size.cost[threads] += ALPHA * (min(per, TAIL * chosen) - chosen)
        else:
            size.cost[threads] = per  # the other mode: its old figure is stale
        one, many = size.cost.get(1), size.cost.get(self.max_threads)
        if one is None or many is None:
            return
        best = self.max_threads if many <= ALL_MARGIN * one else 1
        if best != size.chosen:
            size.chosen, size.period = best, 4
        elif threads != size.chosen:
            size.period = min(size.period * 2, MAX_PERIOD)


def _load() -> tuple[float, float]:
    """The 1-minute load average and the threads running now (0 where unknown)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            fields = f.read().split()
        return float(fields[0]), float(fields[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0], 0.0
    except OSError:  # no load average on this platform
        return 0.0, 0.0
