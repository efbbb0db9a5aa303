"""cpu-par's compile-time rule (issue 17): a ``cpu-par`` kernel is a sequential numba function
over a range of tasks, compiled by numba's plain pipeline with ``noalias`` (never its
parallel pipeline, which compiled the element body twice), and one shared parallel driver
runs contiguous ranges of its tasks on numba's threads, calling it through its address
(``offload.cpu.parallel``). These tests prove the kernel's form and flags, that the
driver is shared and runs ranges on distinct threads, that launches use it (and one
thread where they must), and that the results are compute_s's bits; no timing is
asserted."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest

import offload as ol
from offload.cpu import CPU_PAR, CPU_SEQ, OutOfBoundsRead
from offload.cpu.loopnest import TILE, TILES_KERNEL, task_count
from offload.cpu.parallel import KERNEL_FLAGS, entry_address
from offload.cpu.threads import ThreadChoice
from offload.frontend.lower import fetch_captures, lower
from offload.ir import Builder, Capture, Opcode
from offload.ir.interp import compute
from offload.ir.types import F64, I64, ArrayType
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from tests.conformance.numerics_cases import ALL_CASES, Case, assert_same
from tests.corpus.valid import PROGRAMS, Program
from tests.cpu.stencil9 import make_stencil9
from tests.scripts import run_script

pytestmark = pytest.mark.cpu

THREADS = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
several_threads = pytest.mark.skipif(THREADS < 2, reason="needs NUMBA_NUM_THREADS >= 2")


@dataclass
class Launches:
    """The parallel driver, and the tasks and ranges of each launch it ran."""

    driver: Any
    tasks: list[int] = field(default_factory=list)
    ranges: list[int] = field(default_factory=list)


@pytest.fixture
def all_threads(monkeypatch: pytest.MonkeyPatch) -> Launches:
    """Every compute_p launch asks for all threads; the driver's launches are recorded."""
    monkeypatch.setattr(ThreadChoice, "pick", lambda self, elements: self.max_threads)
    launches = Launches(CPU_PAR.driver())

    def spy(entry: int, tasks: int, ranges: int, args: Any) -> None:
        launches.tasks.append(tasks)
        launches.ranges.append(ranges)
        launches.driver(entry, tasks, ranges, args)

    monkeypatch.setattr(CPU_PAR, "_driver", spy)
    return launches


def _lowered(fn: Any, rank: int) -> Any:
    return run_pipeline(lower(fn, rank).ir, CompileOptions())


def _rank1(a: np.ndarray[Any, Any]) -> Any:
    def f(i: int) -> Any:
        return a[i] * 0.5 + float(i % 7)

    return f


def _rank1_other(a: np.ndarray[Any, Any]) -> Any:
    def g(i: int) -> Any:
        return a[i] * a[i] - 1.0

    return g


def _rank2(a: np.ndarray[Any, Any]) -> Any:
    def f(i: int, j: int) -> Any:
        return a[i, j] * 0.5 + float((i + j) % 7)

    return f


def _rank3(a: np.ndarray[Any, Any]) -> Any:
    def f(i: int, j: int, k: int) -> Any:
        return a[i, j, k] * 0.5 + float((i + j + k) % 7)

    return f


def _rank4(a: np.ndarray[Any, Any]) -> Any:
    def f(i: int, j: int, k: int, m: int) -> Any:
        t = np.zeros(3)  # a local array: one storage per range of tasks
        t[k % 3] = a[i, j, k, m]
        return t[k % 3] * 0.5 + float((i + j + k + m) % 7)

    return f


# -- the kernel's form and flags ---------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("shape", "tasks"),
    [((), 1), ((7,), 7), ((3, 5), 3), ((2, TILE), 2), ((2, TILE + 1), 4), ((2, 3, 5000), 18)],
)
def test_tasks_are_elements_for_rank_1_and_row_tiles_above(
    shape: tuple[int, ...], tasks: int
) -> None:
    assert task_count(shape) == tasks


def test_parallel_kernel_is_a_range_of_tasks_without_prange() -> None:
    a = np.arange(8.0)
    b = np.ones((3, 4, 5))
    rank1 = CPU_PAR.source(_lowered(lambda i: a[i] * 2.0, 1), CompileOptions())
    rank3 = CPU_PAR.source(_lowered(lambda i, j, k: b[i, j, k] + 1.0, 3), CompileOptions())
    assert "def kernel(t0, t1, n0, out0, c0, err):" in rank1
    assert "for _r0 in range(t0, t1):" in rank1
    assert "def kernel(t0, t1, n0, n1, n2, out0, c0, err):" in rank3
    assert "for task in range(t0, t1):" in rank3 and f"min(lo + {TILE}, n2)" in rank3
    for text in (rank1, rank3):
        assert "prange" not in text


def test_cpu_kernels_compile_by_the_plain_pipeline_with_noalias() -> None:
    a = np.arange(16.0)
    ir = _lowered(_rank1_other(a), 1)
    par, seq = CPU_PAR.compile(ir, CompileOptions()), CPU_SEQ.compile(ir, CompileOptions())
    outs = [np.empty(16)]
    par.launch((16,), outs, [a])
    seq.launch((16,), [np.empty(16)], [a])
    assert KERNEL_FLAGS == {"noalias": True}
    assert "parallel" not in par.dispatcher.targetoptions
    assert par.dispatcher.targetoptions["nogil"] is True
    assert par.dispatcher.overloads
    assert all(c.fndesc.noalias for c in par.dispatcher.overloads.values())
    assert seq.dispatcher.overloads
    assert all(c.fndesc.noalias for c in seq.dispatcher.overloads.values())
    np.testing.assert_array_equal(outs[0], a * a - 1.0)


def _affine(rank: int) -> Any:
    """f(i..) = a[i..] * 2 + sum_k (k + 1) * i_k over a float64 array of rank ``rank``."""
    b = Builder(f"affine{rank}", rank, [Capture("a", ArrayType(F64, rank))])
    *idx, a = b.function.params
    acc = b.const(0, I64)
    for k, i in enumerate(idx):
        acc = b.binary(Opcode.ADD, acc, b.binary(Opcode.MUL, i, b.const(k + 1, I64)))
    x = b.binary(Opcode.MUL, b.load(a, list(idx)), b.const(2.0, F64))
    b.ret([b.binary(Opcode.ADD, x, b.cast(acc, F64))])
    b.function.result_types = [F64]
    return b.function


@pytest.mark.parametrize(
    "shape",
    [
        (3, 2, 2 * TILE + 3),
        (2, 3, 1, 4),
        (2, 1, 3, 2, 5),
        (1, 2, 1, 2, 1, TILE + 1),
        (3, 4, 5),
        (2, 3, 4, 6),
        (5, 7),
    ],
    ids=str,
)
def test_any_split_of_the_tasks_computes_every_element_once(shape: tuple[int, ...]) -> None:
    # rows of one tile run as runs of whole rows per plane, longer rows as tiles stepped
    # as an odometer: ranges starting and ending at any task (three ranges: one may start
    # and end inside a plane), across every axis's carry, are right
    a = np.random.default_rng(2).standard_normal(shape)
    fn = _affine(len(shape))
    want = compute(fn, shape, [a])[0]
    kernel = CPU_PAR.compile(fn, CompileOptions())
    dispatcher = kernel._dispatcher_for(shape)
    assert (dispatcher is kernel.dispatcher) == (shape[-1] <= TILE)
    tasks = task_count(shape)
    for s1 in range(tasks + 1):
        for s2 in range(s1, tasks + 1):
            got = np.full(shape, np.nan)
            err = np.zeros(kernel.err_size, np.int64)
            for lo, hi in ((0, s1), (s1, s2), (s2, tasks)):
                kernel._call((lo, hi, *shape, got, a, err), dispatcher)
            np.testing.assert_array_equal(got, want, err_msg=f"split at tasks {s1}, {s2}")


def test_rows_of_one_tile_run_as_cpu_seq_nest() -> None:
    # whole rows: the last axis is range(n) (LLVM peels border tests off a loop from 0),
    # the rows of a plane range(a, b); rows longer than a tile are another function's
    # tiles range(lo, hi), compiled only for a launch that has them
    b = np.ones((3, 4, 5))
    text = CPU_PAR.source(_lowered(lambda i, j, k: b[i, j, k] + 1.0, 3), CompileOptions())
    rows, tiles = text.split(f"def {TILES_KERNEL}(")
    assert "for _r2 in range(n2):" in rows and "for _r1 in range(a, b):" in rows
    assert "range(lo, hi)" not in rows
    assert "for _r2 in range(lo, hi):" in tiles
    kernel = CPU_PAR.compile(_lowered(lambda i, j, k: b[i, j, k] + 1.0, 3), CompileOptions())
    kernel.launch((3, 4, 5), [np.empty((3, 4, 5))], [b])
    assert kernel._tiles is None  # (not built: no launch had long rows)


# -- the parallel driver -----------------------------------------------------------------


@numba.njit(nogil=True)
def _record_thread(t0: int, t1: int, ids: Any) -> None:
    for task in range(t0, t1):
        ids[task] = numba.get_thread_id()


def _thread_of_each_task(tasks: int, ranges: int) -> np.ndarray[Any, Any]:
    ids = np.full(tasks, -1, np.int64)
    _record_thread(0, 0, ids)
    (types,) = _record_thread.signatures
    CPU_PAR.driver()(entry_address(_record_thread, types), tasks, ranges, (ids,))
    assert (ids >= 0).all()  # every task ran
    return ids


@several_threads
@pytest.mark.parametrize("tasks", [2, 7, 64, 1001])
def test_driver_runs_one_contiguous_range_per_numba_thread(tasks: int) -> None:
    ranges = min(THREADS, tasks)
    ids = _thread_of_each_task(tasks, ranges)
    bounds = [tasks * r // ranges for r in range(ranges + 1)]
    threads = [set(ids[lo:hi].tolist()) for lo, hi in zip(bounds, bounds[1:], strict=False)]
    assert all(len(t) == 1 for t in threads)  # a range is one call, on one thread
    assert len(set.union(*threads)) == ranges


@several_threads
def test_driver_spreads_ranges_over_the_threads_numba_set_num_threads_leaves() -> None:
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        ids = _thread_of_each_task(64, THREADS)
    finally:
        numba.set_num_threads(before)
    assert len(set(ids.tolist())) == 1


@several_threads
def test_one_driver_specialisation_serves_kernels_of_the_same_argument_types(
    all_threads: Launches,
) -> None:
    a = np.arange(40000.0)
    f, g = _rank1(a), _rank1_other(a)
    np.testing.assert_array_equal(ol.compute_p(a.shape, f), ol.compute_s(a.shape, f))
    specialisations = len(all_threads.driver.overloads)
    np.testing.assert_array_equal(ol.compute_p(a.shape, g), ol.compute_s(a.shape, g))
    assert len(all_threads.driver.overloads) == specialisations  # g reused f's driver
    assert len(all_threads.tasks) == 2
    assert all_threads.driver.targetoptions["parallel"] is True


# -- compute_p on all threads ------------------------------------------------------------


@several_threads
def test_compute_p_runs_the_9_way_stencil_on_all_threads_with_compute_s_bits(
    all_threads: Launches,
) -> None:
    u = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    stencil9 = make_stencil9(u)
    got = ol.compute_p(u.shape, stencil9)
    assert len(all_threads.tasks) == 1
    np.testing.assert_array_equal(got, ol.compute_s(u.shape, stencil9), strict=True)


@several_threads
@pytest.mark.parametrize("shape", [(10001,), (3, 2 * TILE + 5), (5, 3, 4), (2, 3, 3, 2)], ids=str)
def test_every_rank_on_all_threads_equals_compute_s(
    all_threads: Launches, shape: tuple[int, ...]
) -> None:
    a = np.random.default_rng(1).standard_normal(shape)
    f = [_rank1, _rank2, _rank3, _rank4][len(shape) - 1](a)
    got = ol.compute_p(shape, f)
    assert all_threads.tasks == [task_count(shape)]
    assert all_threads.ranges == [min(THREADS, task_count(shape))]
    np.testing.assert_array_equal(got, ol.compute_s(shape, f), strict=True)


@several_threads
@pytest.mark.parametrize("case", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_numerics_cases_on_all_threads(all_threads: Launches, case: Case) -> None:
    _, shape, fn, expected = case
    assert_same(ol.compute_p(shape, fn), expected)


@several_threads
@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_corpus_program_on_all_threads_equals_compute_s(
    all_threads: Launches, program: Program
) -> None:
    lowered = lower(program.fn, len(program.shape))
    captures = fetch_captures(program.fn, lowered)
    results = []
    for backend in (CPU_SEQ, CPU_PAR):
        kernel = backend.compile(lowered.ir, CompileOptions())
        outs = backend.allocate(program.shape, [t.dtype for t in lowered.ir.result_types])
        kernel.launch(program.shape, outs, backend.prepare_captures(captures))
        results.append(outs)
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(got, want, strict=True, err_msg=program.name)


@several_threads
def test_an_out_of_bounds_read_in_the_last_range_is_reported(
    all_threads: Launches, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.arange(1000.0)

    def shifted(i: int) -> Any:
        return a[i + 1]

    monkeypatch.setattr(ol.config, "bounds_check", True)
    with pytest.raises(OutOfBoundsRead, match=r"a\[1000\].*\(999,\)"):
        ol.compute_p(1000, shifted)
    assert len(all_threads.tasks) == 1


@several_threads
def test_a_new_array_layout_gets_its_own_kernel_entry(all_threads: Launches) -> None:
    a = np.arange(3 * 700.0).reshape(3, 700)

    def layout_probe(i: int, j: int) -> Any:
        return a[i, j] - 0.25

    want = ol.compute_s(a.shape, layout_probe)
    np.testing.assert_array_equal(ol.compute_p(a.shape, layout_probe), want)
    out = np.asfortranarray(np.empty(a.shape))
    ol.compute_p(a.shape, layout_probe, out=out)
    np.testing.assert_array_equal(out, want)
    (kernel,) = [k for k in CPU_PAR._cache.values() if k.fn.name == "layout_probe"]
    assert len(kernel.dispatcher.overloads) == 2  # C and F order outputs
    assert len(set(kernel._entries.values())) == 2
    assert len(all_threads.tasks) == 2


FORK = """
import json
import os
import numpy as np
import offload as ol
from offload.cpu.threads import ThreadChoice

ThreadChoice.pick = lambda self, elements: self.max_threads
A = np.arange(10000.0)

def f(i):
    return A[i] * 2.0

assert (ol.compute_p(10000, f) == A * 2).all()  # numba's threads started
pid = os.fork()
if pid == 0:
    ok = (ol.compute_p(10000, f) == A * 2).all()
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
assert (ol.compute_p(10000, f) == A * 2).all()
"""


@several_threads
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_after_parallel_launches_computes(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "fork_parallel.py", FORK)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "child 0" in proc.stdout, (proc.stdout, proc.stderr[-2000:])


CACHED = """
import json
import numpy as np
import offload as ol
from offload.cpu.backend import CPU_PAR
from offload.cpu.threads import ThreadChoice

ol.config.cache_dir = {cache!r}
ThreadChoice.pick = lambda self, elements: self.max_threads
A = np.arange(10000.0)

def f(i):
    return A[i] * 2.0

assert (ol.compute_p(10000, f) == A * 2).all()
stats = CPU_PAR.driver().stats
print(json.dumps([sum(stats.cache_hits.values()), sum(stats.cache_misses.values())]))
"""


@several_threads
def test_a_fresh_process_loads_the_driver_from_the_disk_cache(tmp_path: Path) -> None:
    script = CACHED.format(cache=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        proc = run_script(tmp_path, "cached_driver.py", script)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs == [[0, 1], [1, 0]]  # compiled once, then loaded
