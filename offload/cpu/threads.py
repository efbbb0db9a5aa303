"""How many threads a ``compute_p`` launch uses: one or all, chosen per kernel and size by
what the launches measured (issue 18 item 6).

A parallel launch costs a few microseconds to wake the pool, and on a machine whose cores
are busy with other work the slowest thread decides when the launch ends: a kernel that
takes 0.6 ms on one thread measured 4 ms on two under load. So ``compute_p`` must never
assume more threads are faster. ``ThreadChoice`` keeps, per kernel and per size class
(powers of two of the element count), the measured time per element with one thread and
with all of them, launches with all threads only where they measure clearly faster (at
most ``ALL_MARGIN`` of one thread's time), and re-measures the other mode now and then:
after ``4, 8, 16, ... MAX_PERIOD`` launches while the choice holds (so a mode 5x slower,
measured on ``PROBES`` launches, costs at most 2 * 5/512 = 2% on average), sooner after
it changed.

The chosen mode's figure is a running average (``ALPHA``; a launch counts at most
``TAIL`` times it). The other mode's figure is the fastest of ``PROBES`` launches in a
row: its first launch after a while can run on cold caches and sleeping threads, and one
such launch would keep one thread for up to ``MAX_PERIOD`` launches (the likely cause of
7pt-stencil on one thread on a 16-core host: 168 us, against 61 us on all 16). All
threads are chosen only on such a fresh measurement of them, never on their old figure
against a slower launch on one thread (the machine became busy). While all threads are
chosen every launch is timed, so a lasting slowdown shows within a few launches, and a
launch while the machine is loaded runs on one thread. While one thread is chosen only
the ``FRESH`` launches before each measurement of all threads are timed: the clock and
the bookkeeping on every launch cost about 1 us (``sum`` at 2^16 elements takes 44 us).

The first guess, before anything is measured, is one thread below ``SMALL_WORK`` elements
(the crossover of a trivial kernel on a 2-core machine, ``benchmarks``: 16-64 k elements)
and all threads above. While the machine is loaded (``ThreadChoice.loaded``: other
processes' threads would take every core) one thread is chosen and all threads are not
tried.

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

import math
import os
import time
from dataclasses import dataclass, field

SMALL_WORK = 32768
"""Elements below which the first launch uses one thread."""
MAX_PERIOD = 512
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

PROBES = 2
"""Launches in a row of the mode not chosen per measurement of it; the fastest counts."""
FRESH = 2
"""Timed launches of one thread, when chosen, before each measurement of all threads (the
others are not timed)."""

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
    """Threads -> seconds per element (see the module doc)."""
    chosen: int = 1
    period: int = 4
    """Launches of the chosen mode between two measurements of the other."""
    calls: int = 0
    """Launches of the chosen mode since the last measurement of the other."""
    probes: int = 0
    """Launches of the other mode still to come in the measurement under way (0: none)."""
    best: float = math.inf
    """The fastest launch (seconds per element) of the measurement under way."""


class ThreadChoice:
    """The thread count of each launch of one parallel kernel (see the module doc).

    ``pick`` then ``record`` per launch; ``timed`` (set by ``pick``) says whether the
    launch just picked needs its time: a caller may skip the clock and ``record`` where it
    is False (recording anyway is harmless)."""

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self.cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
        self.timed = True
        """Whether the launch ``pick`` just chose is a measurement."""
        self._sizes: dict[int, _Size] = {}
        self._load_checked = -2.0
        self._loaded = False

    def pick(self, elements: int) -> int:
        """The thread count for a launch over ``elements`` elements."""
        size = self._sizes.get(elements.bit_length())
        if size is not None and size.chosen == 1 and not size.probes:
            # the common case of small work, kept short: one thread, mostly untimed; all
            # threads are measured only if the cores are free when the timed launches
            # before that measurement begin (else the next period's)
            size.calls += 1
            if size.calls < size.period - FRESH:
                self.timed = False
                return 1
            if size.calls == size.period - FRESH and self.loaded():
                size.calls = 0
                self.timed = False
                return 1
        if self.max_threads <= 1:
            self.timed = False
            return 1
        self.timed = True
        if size is None:
            many = elements >= SMALL_WORK and not self.loaded()
            # (a measurement of the other mode is due once the first guess has a figure)
            size = _Size(chosen=self.max_threads if many else 1, calls=4)
            self._sizes[elements.bit_length()] = size
        elif size.chosen > 1 and not size.probes:
            if self.loaded():
                self.timed = False  # (one thread while the cores are taken; not a figure)
                return 1
            size.calls += 1
        other = self.max_threads if size.chosen == 1 else 1
        if not size.probes:
            if size.calls < size.period or size.chosen not in size.cost:
                return size.chosen
            size.calls, size.probes, size.best = 0, PROBES, math.inf
        if other > 1 and self.loaded():
            size.probes = 0  # measure all threads when the cores are free
            return size.chosen
        return other

    def loaded(self) -> bool:
        """Whether other work keeps the cores busy: the threads of other processes that
        are running or waiting for a core right now (Linux: ``/proc``) are at least the
        number of cores; then one thread is the choice, as a launch on all threads would
        wait for a core (checked at most every second). This process's own threads do not
        count (numba's, just back from a launch, may still be running), nor does the
        1-minute load average, which counts them: a ``compute_p`` loop on 16 threads keeps
        it near 16, one more runnable thread anywhere away from the old threshold
        (``cores + 1``), so a 16-core host could look loaded by this process's own work."""
        t = now()
        if t - self._load_checked > 1.0:
            self._load_checked = t
            self._loaded = _others_running() >= self.cores
        return self._loaded

    def record(self, elements: int, threads: int, seconds: float) -> None:
        """Note that a launch over ``elements`` with ``threads`` took ``seconds``."""
        size = self._sizes.get(elements.bit_length())
        if size is None or elements <= 0:
            return
        per = seconds / elements
        if threads != size.chosen:
            if not size.probes:
                return  # (no measurement under way: a launch its caller forced)
            size.best = min(size.best, per)
            size.probes -= 1
            if size.probes:
                return
            size.cost[threads] = size.best  # the other mode: its old figure is stale
        else:
            chosen = size.cost.get(threads)
            if chosen is None:
                size.cost[threads] = per
            else:
                size.cost[threads] = chosen + ALPHA * (min(per, TAIL * chosen) - chosen)
        one, many = size.cost.get(1), size.cost.get(self.max_threads)
        if one is None or many is None:
            return
        best = self.max_threads if many <= ALL_MARGIN * one else 1
        # to all threads only on their own fresh measurement: a slower launch on one
        # thread (the machine became busy) against all threads' old figure (measured on
        # free cores) would move a loaded machine to all threads
        if best != size.chosen and best in (1, threads):
            size.chosen, size.period, size.calls, size.probes = best, 4, 0, 0
        elif threads != size.chosen:
            size.period = min(size.period * 2, MAX_PERIOD)


def _others_running() -> float:
    """Threads of other processes running or waiting for a core now: the system's
    (``/proc/loadavg``) less this process's (``/proc/self/task``), read in that order's
    reverse so that a thread of ours that goes to sleep in between is not counted as
    another's. Where there is no ``/proc``, the 1-minute load average less this thread."""
    try:
        ours = _own_running()
        return _system_running() - ours
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0] - 1.0
    except OSError:  # no load average on this platform
        return 0.0


def _system_running() -> int:
    """The threads running or waiting for a core now, the reader included (Linux)."""
    with open("/proc/loadavg", encoding="ascii") as f:
        return int(f.read().split()[3].split("/")[0])


def _own_running() -> int:
    """This process's threads that are running or waiting for a core (state ``R``)."""
    running = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat", encoding="ascii") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        # (the name, in parentheses, may hold spaces: the state follows its last ')')
        if stat[stat.rindex(")") + 2 : stat.rindex(")") + 3] == "R":
            running += 1
    return running
