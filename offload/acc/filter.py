"""``filter(pred, a)``: the elements of the vector ``a`` (a tuple of vectors for tuples)
for which ``pred`` holds, in their order.

On the GPU, three steps (Accelerate's filter, without its defaults copy): kernel
``flags`` evaluates ``pred`` once per element; an exclusive ``+`` scan of the flags
(``offload.acc.scan``, integers: exact, so every mode gives the same result) gives each
kept element's position and the count; kernel ``place`` writes the kept elements there.
Cost: two passes over ``a``, one over n int64 flags and the scan's (about 3n int64
accesses); the result's length is known only after the scan, so the GPU synchronises once
to read it.

On the CPU (``compute_s`` and ``compute_p`` alike), chunks of ``FILTER_CHUNK`` elements:
kernel ``keep`` evaluates ``pred`` into one byte per element and counts each chunk's kept
elements; a sum over the counts gives each chunk's first place and the result's length;
kernel ``compact`` copies each chunk's kept elements to its places. Cost: two passes over
``a`` and one over n bytes of flags. Nothing is computed on the elements, so the result
does not depend on the chunks: ``compute_p`` runs ``compute_s``'s kernels below
``SEQUENTIAL_BELOW`` elements, and from there each kernel on one thread or all,
whichever its launches measure faster (``offload.cpu.threads``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np

from offload.acc.base import Collective, Context
from offload.acc.combine import compile_combine, result_error
from offload.acc.permute_cpu import cached_module
from offload.acc.scan_job import ScanJob
from offload.acc.skeletons.build import GPU_TARGETS, captured, compile_module, host, working, xp_for
from offload.acc.skeletons.deliver import deliver
from offload.acc.skeletons.operands import (
    check_determinism,
    components,
    pack,
    source_dtypes,
    source_shape,
    target_of,
)
from offload.acc.skeletons.permute_src import (
    compact_kernel,
    flags_kernel,
    keep_kernel,
    place_kernel,
)
from offload.frontend.nodes import NodeFunction
from offload.frontend.operators import plain

Dt = np.dtype[Any]
I64 = np.dtype(np.int64)


def _count_add(a: Any, b: Any) -> Any:
    return a + b


@dataclass(frozen=True, eq=False)
class Filter(Collective):
    """``filter(pred, a)`` (module docstring). Its length is known only once computed:
    ``shape`` gives the upper bound ``a.shape``."""

    pred: Callable[..., Any]
    a: Any

    bounded: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if len(source_shape(self.a)) != 1:
            raise ValueError(f"filter: the array must be 1-D, not of shape {source_shape(self.a)}")

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return source_shape(self.a)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("pred", self.pred),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("a", self.a),)

    def result_dtypes(self) -> tuple[Dt, ...]:
        return source_dtypes(self.a)

    def materialise(self, ctx: Context, sources: Mapping[str, Any]) -> Any:
        target = target_of(ctx)
        mode = check_determinism(ctx)
        dts = source_dtypes(self.a)
        what = "filter's predicate"
        pf = compile_combine(self.pred, (dts,), "pred", what)
        if len(pf.result_dtypes) != 1:
            raise result_error(self.pred, f"{what} returns {len(pf.result_dtypes)} values, not one")
        xp = xp_for(target)
        xs = [working(target, x, ctx.backend) for x in components(sources["a"])]
        n = int(xs[0].shape[0])
        if n == 0:
            return pack([deliver(ctx, target, x[:0].copy()) for x in xs])
        caps = captured(target, pf.captures(), ctx.backend)
        gpu = target in GPU_TARGETS
        if not gpu:
            on = "cpu-seq" if target == "cpu-par" and n < SEQUENTIAL_BELOW else target
            outs = _compact_cpu(on, pf.source(False), xs, caps)
            return pack([deliver(ctx, target, o) for o in outs])
        src = "\n\n".join([pf.source(gpu), flags_kernel(target, len(xs), len(caps))])
        flg = xp.empty(n, np.int64)
        compile_module(target, src, ["pred"], ["flags"], {}).launch("flags", n, *xs, flg, *caps)
        add = compile_combine(_count_add, ((I64,), (I64,)), "ol_comb", "filter's count")
        job = ScanJob(target, mode, add, (I64,), [])
        (pos,) = job.run([flg.reshape(1, n)], [np.int64(0)], 1, 1, n + 1)
        count = int(host(pos[0, n]))
        outs = [xp.empty(count, x.dtype) for x in xs]
        module = compile_module(target, place_kernel(target, len(xs)), [], ["place"], {})
        module.launch("place", n, flg, pos.reshape(n + 1), *xs, *outs)
        return pack([deliver(ctx, target, o) for o in outs])


FILTER_CHUNK = 1 << 14
"""Elements per chunk of the CPU filter (a task of ``compute_p``)."""
SEQUENTIAL_BELOW = 1 << 17
"""Elements below which ``compute_p`` runs ``compute_s``'s kernels: a parallel launch
costs about 10 us even on one thread, and a filter of 10^5 float32 takes about 110 us on
one (on the idle 2-core VM ``compute_p`` measured 0.89-0.91x ``compute_s`` there in
parallel; 1.35x at 10^6)."""


def _compact_cpu(target: str, pred_src: str, xs: list[Any], caps: list[Any]) -> list[Any]:
    """The CPU filter (module docstring): per chunk, flags and a count; the chunks' start
    places (a sum over the few counts); per chunk, the kept elements to their places.
    There is no arithmetic on the elements, so the result cannot depend on the chunks or
    the thread count: ``compute_p`` runs each kernel on one thread or all, as measured
    (``offload.cpu.threads``)."""
    m, n = len(xs), int(xs[0].shape[0])
    nch = -(-n // FILTER_CHUNK)
    i64 = np.int64

    def keep_source(t: str) -> str:
        return "\n\n".join([pred_src, keep_kernel(t, m, len(caps))])

    flg = np.empty(n, np.uint8)
    cnt = np.empty(nch, np.int64)
    keep = cached_module(target, ("keep", pred_src, m, len(caps)), keep_source, ["pred"], ["keep"])
    keep.launch("keep", n, i64(nch), i64(FILTER_CHUNK), *xs, flg, cnt, *caps)
    start = np.zeros(nch + 1, np.int64)
    np.cumsum(cnt, out=start[1:])
    count = int(start[nch])
    outs = [np.empty(count, x.dtype) for x in xs]
    if count > 0:
        compact_source = partial(compact_kernel, m=m)
        compact = cached_module(target, ("compact", m), compact_source, [], ["compact"])
        compact.launch("compact", n, i64(nch), i64(FILTER_CHUNK), flg, start, *xs, *outs)
    return outs


def filter(pred: Callable[..., Any], a: Any) -> Filter:
    """The elements of the vector ``a`` where ``pred(a[i])`` holds, in order."""
    return Filter(plain(pred), a)
