"""``compute_p``'s combining passes of ``permute`` on the CPU (``offload.acc.permute``
decides which by ``cpu_tasks``): ``compute_s``'s one sequential pass in source order, the
per-task partial rows folded in task order, and -- for integer values, whose grouping does
not change the bits -- whichever of the two its launches measure faster. With the module
cache the permute and filter skeletons share (``cached_module``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from offload.acc.skeletons.build import Module, compile_module
from offload.acc.skeletons.permute_src import accumulate_kernel, partials_kernels
from offload.cpu.threads import ThreadChoice, now

MERGE_BLOCK = 4096
"""Destinations per task of the merge of the rows."""


def accumulate(base: list[str], arrays: tuple[Any, list[Any], list[Any]], caps: list[Any]) -> None:
    """One sequential pass in source order (the destinations came in parallel):
    ``compute_s``'s combining pass."""
    dst, xs, outs = arrays
    src = "\n\n".join([*base, accumulate_kernel(len(xs), len(caps))])
    module = compile_module("cpu-seq", src, ["ol_comb", "cmb"], ["accumulate"], {})
    module.kernels["accumulate"](np.int64(int(dst.shape[0])), dst, *xs, *outs, *caps)


_EXACT_CHOICES: dict[tuple[object, ...], tuple[ThreadChoice, set[int]]] = {}


def exact_either_way(
    base: list[str],
    tasks: int,
    arrays: tuple[Any, list[Any], list[Any]],
    caps: list[Any],
    neutral: Any,
) -> None:
    """``compute_p``'s combine of integer (or bool) values: the per-task partial rows
    (``partials``) or ``compute_s``'s one sequential pass, whichever its launches measure
    faster (``ThreadChoice``: one thread means the pass). Integer arithmetic wraps, so an
    associative combine gives the same bits grouped either way, and the choice may follow
    a measurement; a float combine may not (its grouping is fixed by the sizes). On one
    thread -- a loaded machine, few cores -- the partial rows cost more than the pass."""
    n = int(arrays[0].shape[0])
    key = ("exact", *base, len(arrays[1]), len(caps))
    made = _EXACT_CHOICES.get(key)
    if made is None:
        import numba

        threads_now = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
        made = _EXACT_CHOICES.setdefault(key, (ThreadChoice(threads_now), set()))
    choice, warm = made
    threads = choice.pick(n)
    start = now()
    if threads == 1:
        accumulate(base, arrays, caps)
    else:
        partials(base, tasks, arrays, caps, neutral)
    if threads in warm:  # (a path's first launch compiles: not a measurement)
        choice.record(n, threads, now() - start)
    warm.add(threads)


def partials(
    base: list[str],
    tasks: int,
    arrays: tuple[Any, list[Any], list[Any]],
    caps: list[Any],
    neutral: Any = None,
) -> None:
    """``compute_p``: each task folds its slice into its own row of partial results, in
    source order; the rows are folded into the outputs in task order (deterministic;
    the bits of ``compute_s`` wherever the combine is exact, e.g. integer ``+``). The
    rows start from ``neutral`` where the combine has one (``_neutral``), else each row
    marks the values it holds. Each kernel runs on one thread or all, as its launches
    measure (the split is the same)."""
    dst, xs, outs = arrays
    n, dests = int(dst.shape[0]), int(outs[0].shape[0])
    marked = neutral is None

    def source(t: str) -> str:
        return "\n\n".join([*base, partials_kernels(len(xs), len(caps), marked)])

    key = ("partials", *base, len(xs), len(caps), marked)
    module = cached_module("cpu-par", key, source, ["ol_comb", "cmb"], ["partials", "merge"])
    if marked:
        rows = [np.empty((tasks, dests), o.dtype) for o in outs]
        held = [np.zeros((tasks, dests), np.uint8)]
    else:
        rows = [np.full((tasks, dests), neutral, o.dtype) for o in outs]
        held = []
    per = -(-n // tasks)
    i64 = np.int64
    module.launch("partials", n, i64(tasks), i64(per), dst, *xs, *rows, *held, *caps)
    blocks = -(-dests // MERGE_BLOCK)
    module.launch("merge", tasks * dests, i64(blocks), i64(MERGE_BLOCK), i64(dests),
                  i64(tasks), *rows, *held, *outs, *caps)  # fmt: skip


_MODULES: dict[tuple[object, ...], Module] = {}
_MODULES_LOCK = threading.Lock()


def cached_module(
    target: str,
    key: tuple[object, ...],
    source: Callable[[str], str],
    helpers: list[str],
    kernels: list[str],
) -> Module:
    """``compile_module(target, source(target), helpers, kernels)``, looked up by ``key``
    (what the text is made from) so that a warm call does not rebuild the text."""
    whole = (target, *key, *kernels)
    with _MODULES_LOCK:
        module = _MODULES.get(whole)
    if module is None:
        module = compile_module(target, source(target), helpers, kernels, {})
        with _MODULES_LOCK:
            module = _MODULES.setdefault(whole, module)
    return module
