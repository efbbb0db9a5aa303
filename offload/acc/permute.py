"""Forward permutation: ``permute(f, defaults, ix, a)`` and ``scatter(to, defaults, a)``.

    permute(f, defaults, ix, a)   out = copy of defaults; for each index i of a, in order:
                                      d = ix(*i); unless d is IGNORE: out[d] = f(a[i], out[d])
    scatter(to, defaults, a)      permute with f(new, old) = new and ix(i) = to[i] (1-D)

``f`` is applied as Accelerate applies it, ``f(new, old)``; it should be associative and
commutative when several sources meet one destination and the result must not depend on
the mode. ``ix`` returns an index tuple of the result's rank (an int for rank 1), or
``IGNORE`` (any coordinate equal to ``IGNORE``, e.g. ``(IGNORE, IGNORE)`` for rank 2) to
drop the element. A destination outside the result raises ``PermuteIndexError`` naming
the source index and the destination; nothing is written out of bounds.

**Determinism and cost.**

* ``deterministic`` (default) and ``cross_target``: ``compute_s`` and the GPU combine the
  elements meeting at one destination in source order (the GPU gives the bits of
  ``compute_s``). ``compute_p`` runs ``compute_s``'s kernels below ``SEQUENTIAL_BELOW``
  (2^17) sources; from there it computes the destinations in parallel, and in
  ``deterministic`` mode, from ``PARTIALS_MIN`` (2^18) sources, it then folds fixed
  slices of the sources (their number set by the sizes alone, ``cpu_tasks``: rows of at
  most ``n / 64`` values in all) into per-task rows in parallel and folds the rows in
  order (exact combines such as integer ``+`` give the bits of ``compute_s``; float ones
  differ from them but not from run to run); else -- fewer sources, or destinations too
  many for the rows -- and always under ``cross_target``, it combines in the one
  sequential pass of ``compute_s`` (its bits). Each of ``compute_p``'s kernels runs on
  one thread or all, as its launches measure (``offload.cpu.threads``): the work split
  is the same either way.
  The GPU sorts the source positions by destination (a stable radix sort: O(n) extra
  memory, about 4 passes over n 64-bit keys) and folds each destination's group in one
  thread: a destination that receives a large share of the elements serialises on that
  thread. An integer ``+``, ``min`` or ``max`` (exact
  and order-independent) uses native atomics instead, in every mode.
* ``fast``: the GPU combines with native atomics (``add`` on 32/64-bit ints and floats,
  ``min``/``max`` on ints) or a compare-and-swap loop for any other single-component
  combine of 32 or 64 bits; float results then depend on the order in which threads
  arrive. Tuples and 8/16-bit types take the deterministic path. The CPU is as above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from offload.acc.base import Collective, Context, length_known
from offload.acc.combine import (
    ScalarFunction,
    compile_combine,
    compile_index_function,
    result_error,
)
from offload.acc.permute_cpu import accumulate, cached_module, exact_either_way, partials
from offload.acc.skeletons import atomic_src as shared_atomics
from offload.acc.skeletons.build import (
    GPU_TARGETS,
    SIM_THREADS,
    THREADS,
    captured,
    compile_module,
    host,
    working,
    xp_for,
)
from offload.acc.skeletons.deliver import deliver, delivered, results
from offload.acc.skeletons.operands import (
    check_determinism,
    components,
    pack,
    source_dtypes,
    source_shape,
    target_of,
)
from offload.acc.skeletons.permute_src import (
    IGNORE,
    atomic_cas_kernel,
    atomic_native_kernel,
    bit_functions,
    combine_new_old,
    dests_kernel,
    groups_kernel,
)
from offload.diagnostics import KernelFault, TypeMismatch
from offload.frontend.nodes import ElementLowering, Index, NodeFunction, NodePath
from offload.frontend.operators import plain
from offload.frontend.values import TupleVal, Val
from offload.ir.core import Return
from offload.ir.ops import Opcode

__all__ = ["IGNORE", "Permute", "PermuteIndexError", "permute", "scatter"]

Dt = np.dtype[Any]


class PermuteIndexError(KernelFault, IndexError):
    """A permute's index function sent an element outside the result."""

    rule = "permute-index"


@dataclass(frozen=True, eq=False)
class Permute(Collective):
    """``permute(f, defaults, ix, a)`` (module docstring)."""

    f: Callable[..., Any]
    defaults: Any
    ix: Callable[..., Any]
    a: Any
    name: str = "permute"

    def __post_init__(self) -> None:
        dd, da = source_dtypes(self.defaults), source_dtypes(self.a)
        if len(dd) != len(da):
            raise TypeMismatch(
                f"{self.name}: the defaults have {len(dd)} component(s), the source {len(da)}"
            )
        for d, s in zip(dd, da, strict=True):
            if not np.can_cast(s, d, "same_kind"):
                raise TypeMismatch(f"{self.name}: source elements of {s} into defaults of {d}")

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return source_shape(self.defaults)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("f", self.f), NodeFunction("ix", self.ix))

    def static_key(self) -> tuple[object, ...]:
        return (self.name,)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("defaults", self.defaults), ("a", self.a))

    def result_dtypes(self) -> tuple[Dt, ...]:
        return source_dtypes(self.defaults)

    replayable: ClassVar[bool] = True
    """A step of the replay lane (``offload.replay``): the index function's and the
    combine's captured values are the step's inputs, read anew on every call."""

    def lower_captures(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val | None:
        """The defaults' element at ``idx``, the source's (``idx`` fitted to its rank), the
        index function called there and the combine applied: every value the permutation
        captures (``Collective``)."""
        if not self.replayable:
            return None
        na = len(source_shape(self.a))
        at = [*idx[:na], *[lo.constant(0)] * (na - len(idx))]
        self._element(lo, path, "a", self.a, at)
        d = self._element(lo, path, "defaults", self.defaults, list(idx))
        lo.call(self.ix, (*path, ("attr", "ix")), at)
        return lo.call(self.f, (*path, ("attr", "f")), [d, d])

    @staticmethod
    def _element(lo: ElementLowering, path: NodePath, attr: str, x: Any, at: Index) -> Val:
        where = (*path, ("attr", attr))
        if isinstance(x, tuple | list):
            return TupleVal(
                tuple(lo.element(c, (*where, ("item", k)), at) for k, c in enumerate(x))
            )
        return lo.element(x, where, at)

    def materialise(self, ctx: Context, sources: Mapping[str, Any]) -> Any:
        record = ctx.record
        if record is None:
            return run_permute(ctx, self, self.ix, sources)
        # the replay lane's step: the sources' arrays, then the captured values
        quiet = replace(ctx, trace=None, record=None)  # (the step outlives this call)
        sf, ixf = functions(self, self.ix)
        fcaps, icaps = sf.captures(), ixf.captures()
        ds, xs = components(sources["defaults"]), components(sources["a"])
        nd, nx, nf = len(ds), len(xs), len(fcaps)

        def step(*args: Any) -> Any:
            parts = {"defaults": pack(list(args[:nd])), "a": pack(list(args[nd : nd + nx]))}
            caps = args[nd + nx :]
            return run_permute(quiet, self, self.ix, parts, (list(caps[:nf]), list(caps[nf:])))

        inputs = [*ds, *xs, *fcaps, *icaps]
        result = step(*inputs)
        record.step(step, inputs, result)
        return result


def functions(node: Permute, ix: Callable[..., Any]) -> tuple[ScalarFunction, ScalarFunction]:
    """The combine and the index function of ``node`` compiled (remembered by the
    compiler), their results checked."""
    dts = source_dtypes(node.defaults)
    what = f"{node.name}'s combine function"
    sf = compile_combine(node.f, (dts, dts), "ol_comb", what)
    if len(sf.result_dtypes) != len(dts):
        raise result_error(
            node.f, f"{what} returns {len(sf.result_dtypes)} value(s), not {len(dts)}"
        )
    rank = len(source_shape(node.a))
    ixf = compile_index_function(ix, rank, "ixf", f"{node.name}'s index function")
    check_index_results(ix, ixf, len(source_shape(node.defaults)), node.name)
    return sf, ixf


def run_permute(
    ctx: Context,
    node: Permute,
    ix: Callable[..., Any],
    sources: Mapping[str, Any],
    caps: tuple[list[Any], list[Any]] | None = None,
) -> Any:
    """The permutation of ``node`` with index function ``ix`` on ``ctx``'s target; with
    ``caps``, the combine's and the index function's captured values (a replayed step's),
    else their values now."""
    target = target_of(ctx)
    mode = check_determinism(ctx)
    dts = source_dtypes(node.defaults)
    # (the computed sources' shapes: a filter's result is shorter than the node's bound)
    dshape = source_shape(sources["defaults"])
    sshape = source_shape(sources["a"])
    sf, ixf = functions(node, ix)
    fcaps, icaps_now = (sf.captures(), ixf.captures()) if caps is None else caps
    xp = xp_for(target)
    made, outs = results(ctx.backend, target, (int(np.prod(dshape, dtype=np.int64)),), dts)
    for o, d in zip(outs, components(sources["defaults"]), strict=True):
        o[...] = working(target, d, ctx.backend).reshape(-1)
    xs = [working(target, x, ctx.backend).reshape(-1) for x in components(sources["a"])]
    xs = [x.astype(dt, copy=False) for x, dt in zip(xs, dts, strict=True)]
    n = int(np.prod(sshape, dtype=np.int64))
    if n > 0:
        fc = captured(target, fcaps, ctx.backend)
        icaps = captured(target, icaps_now, ctx.backend)
        dst = xp.empty(n, np.int64)
        err = xp.zeros(1 + len(dshape), np.int64)
        gpu = target in GPU_TARGETS

        def dests_source(t: str) -> str:
            return "\n\n".join(
                [ixf.source(gpu), dests_kernel(t, len(sshape), len(dshape), len(icaps))]
            )

        i64 = np.int64
        shapes = (*(i64(k) for k in sshape), *(i64(k) for k in dshape))
        # small work: compute_s's kernel (no parallel launch to pay for)
        on = "cpu-seq" if target == "cpu-par" and n < SEQUENTIAL_BELOW else target
        key = ("dests", ixf.source(gpu), len(sshape), len(dshape), len(icaps))
        dm = cached_module(on, key, dests_source, ["ixf"], ["dests"])
        dm.launch("dests", n, *shapes, dst, err, *icaps)
        fault = host(err)
        if fault[0] != 0:
            raise _index_error(node.name, int(fault[0]) - 1, fault[1:], sshape, dshape)
        _combine((target, mode), sf, dts, (dst, xs, outs), fc)
    delivered(ctx.backend, target)  # (unified: written in place)
    return pack([deliver(ctx, target, o.reshape(dshape)) for o in made])


def check_index_results(ix: Any, ixf: ScalarFunction, rank: int, name: str) -> None:
    """An error located at ``ix``'s return unless its results ``ixf`` are ``rank``
    integers."""
    got = ixf.result_dtypes
    if len(got) != rank or any(d.kind not in "iu" for d in got):
        shown = ", ".join(str(d) for d in got)
        bools = any(d.kind == "b" for d in got)
        note = " (a bool is no index: NumPy reads a bool as a mask)" if bools else ""
        raise result_error(
            ix,
            f"{name}'s index function returns ({shown}); the result has rank {rank}: return "
            f"{rank} integer(s) (a tuple for rank > 1), or IGNORE in each coordinate{note}",
        )


def _index_error(
    name: str, s: int, dest: Any, sshape: tuple[int, ...], dshape: tuple[int, ...]
) -> PermuteIndexError:
    src = tuple(int(i) for i in np.unravel_index(s, sshape)) if sshape else ()
    to = tuple(int(d) for d in dest)
    return PermuteIndexError(
        f"{name}: the index function sends source element {src} to {to}, outside the "
        f"result's shape {dshape} (return IGNORE to drop an element)"
    )


def _plain_op(sf: ScalarFunction) -> Opcode | None:
    """``ADD``, ``MIN`` or ``MAX`` when the combine is exactly that op of its two operands
    (``new + old`` or ``old + new``: not ``new + new``, not ``new + 1``), capturing
    nothing; else ``None``."""
    fn = sf.ir
    if sf.user_captures or sf.n_operands != 2 or len(fn.blocks) != 1:
        return None
    ops = list(fn.ops())
    rest = [op for op in ops if op.opcode is not Opcode.LOAD]
    if len(rest) != 1 or rest[0].opcode not in (Opcode.ADD, Opcode.MIN, Opcode.MAX):
        return None
    op = rest[0]
    loaded = {id(o.result): o.operands[0] for o in ops if o.opcode is Opcode.LOAD}
    sources = [loaded.get(id(v)) for v in op.operands]
    new, old = fn.capture_params[:2]
    ret = fn.blocks[0].terminator
    if not (isinstance(ret, Return) and len(ret.values) == 1 and ret.values[0] is op.result):
        return None
    if len(sources) != 2 or {id(v) for v in sources} != {id(new), id(old)}:
        return None
    return op.opcode


def _native_op(sf: ScalarFunction, dt: Dt, mode: str) -> str | None:
    """``add``/``min``/``max`` when the combine is exactly that op of its two operands
    and the hardware has the atomic (floats: ``add``, and only in ``fast`` mode)."""
    code = _plain_op(sf)
    names = {Opcode.ADD: "add", Opcode.MIN: "min", Opcode.MAX: "max"}
    if code is None or dt.itemsize not in (4, 8):
        return None
    if dt.kind in "iu":
        return names[code]
    if dt.kind == "f" and code is Opcode.ADD and mode == "fast":
        return "add"
    return None


def _neutral(sf: ScalarFunction, dts: tuple[Dt, ...]) -> Any:
    """The neutral element of a combine that is ``+`` (integers, float32/64: ``-0.0``,
    for which ``-0.0 + x`` is ``x`` bit for bit, signed zeros included), or ``min``/``max``
    of integers; else ``None``. ``compute_p``'s partial rows start from it instead of
    marking which values they hold: the same bits, and on one thread the cost of the
    sequential pass (marked rows: 1.3x it at 256 destinations, 2.5x at 4,096)."""
    code = _plain_op(sf)
    if code is None or len(dts) != 1:
        return None
    dt = dts[0]
    if dt.kind in "iu":
        if code is Opcode.ADD:
            return dt.type(0)
        info = np.iinfo(dt)
        return dt.type(info.max if code is Opcode.MIN else info.min)
    if dt.kind == "f" and dt.itemsize in (4, 8) and code is Opcode.ADD:
        return dt.type(-0.0)
    return None


def _combine(
    where: tuple[str, str],
    sf: ScalarFunction,
    dts: tuple[Dt, ...],
    arrays: tuple[Any, list[Any], list[Any]],
    caps: list[Any],
) -> None:
    """Combine the sources into the outputs at their destinations ``dst``; ``where`` is
    (target, determinism mode)."""
    target, mode = where
    dst, xs, outs = arrays
    n = int(dst.shape[0])
    gpu = target in GPU_TARGETS
    wrapper = combine_new_old("ol_comb", dts, len(caps))
    helpers = ["ol_comb", "cmb"]
    base = [sf.source(gpu), wrapper]
    if not gpu:
        tasks = 1
        if target == "cpu-par" and mode == "deterministic":
            tasks = cpu_tasks(n, int(outs[0].shape[0]))
        if tasks <= 1:
            accumulate(base, (dst, xs, outs), caps)
        elif not all(dt.kind in "iub" for dt in dts):
            partials(base, tasks, (dst, xs, outs), caps, _neutral(sf, dts))
        else:
            exact_either_way(base, tasks, (dst, xs, outs), caps, _neutral(sf, dts))
        return
    native = _native_op(sf, dts[0], mode) if len(dts) == 1 else None
    entries = int(outs[0].size)
    if native is not None and shared_atomics.fits(dts[0], entries):
        # a small result (a histogram): block-private copies in shared memory
        cap = shared_atomics.capacity(entries)
        src = shared_atomics.shared_atomic_kernel(native, dts[0], cap)
        module = compile_module(target, src, [], ["atomic_shared"], {})
        threads = SIM_THREADS if target == "gpu-sim" else THREADS
        blocks = shared_atomics.blocks_for(n, threads)
        module.launch("atomic_shared", n, np.int64(entries), dst, xs[0], outs[0], blocks=blocks)
        return
    if native is not None:
        src = atomic_native_kernel(target, native)
        compile_module(target, src, [], ["atomic_native"], {}).launch(
            "atomic_native", n, dst, xs[0], outs[0]
        )
        return
    if mode == "fast" and len(dts) == 1 and dts[0].itemsize in (4, 8) and dts[0].kind != "b":
        bits_src, extra = bit_functions(dts[0], simulator=target == "gpu-sim")
        src = "\n\n".join([*base, bits_src, atomic_cas_kernel(target, len(caps))])
        # integers swap as they are; floats as the integers of their bits
        bits = outs[0] if dts[0].kind in "iu" else outs[0].view(f"i{dts[0].itemsize}")
        helpers += ["to_bits", "from_bits"]
        module = compile_module(target, src, helpers, ["atomic_cas"], extra)
        module.launch("atomic_cas", n, dst, xs[0], outs[0], bits, *caps)
        return
    xp = xp_for(target)
    order = _by_destination(xp, dst, int(outs[0].shape[0]))
    src = "\n\n".join([*base, groups_kernel(target, len(dts), len(caps))])
    module = compile_module(target, src, helpers, ["groups"], {})
    module.launch("groups", n, order, dst, *xs, *outs, *caps)


SEQUENTIAL_BELOW = 1 << 17
"""Sources below which ``compute_p`` runs ``compute_s``'s kernels: a parallel launch costs
about 10 us even on one thread, and on the idle 2-core VM the parallel destinations did
not repay it at 10^5 sources (a 256-bin histogram: 0.91-0.94x ``compute_s``; 1.4x at
10^6)."""
PARTIALS_MIN = 1 << 18
"""Sources below which ``compute_p`` combines in the one sequential pass of ``compute_s``
(its bits; see ``cpu_tasks``)."""
PARTIAL_TASK = 1 << 16
"""Least sources per task of ``compute_p``'s partial rows."""
MAX_TASKS = 64
ROW_SOURCES = 64
"""Least sources per partial value (all rows together). Rows cost their allocation, first
touches and merge, and a task whose row outgrows the core's cache misses on its updates:
on one thread (a loaded machine), partials and merge took 1.1-1.4x the sequential pass
with 64 or more sources per row value, and 1.3-2.7x with 16 (2^20 sources into 4,096
destinations, 16 tasks: 2.7x), 4-8x with 1-4."""


def cpu_tasks(n: int, dests: int) -> int:
    """Tasks of ``compute_p``'s permute of ``n`` sources into ``dests`` destinations, fixed
    by the sizes alone (never by the thread count or a measurement, so the bits are the
    same run to run): 1 -- the sequential pass in source order, ``compute_s``'s algorithm
    and bits -- below ``PARTIALS_MIN`` sources, else one task per ``PARTIAL_TASK``
    sources (at most ``MAX_TASKS``), fewer where the rows would hold more than
    ``n / ROW_SOURCES`` values (1 where that leaves one)."""
    if n < PARTIALS_MIN:
        return 1
    return max(1, min(MAX_TASKS, n // PARTIAL_TASK, n // (ROW_SOURCES * max(dests, 1))))


def _by_destination(xp: Any, dst: Any, dests: int) -> Any:
    """Source positions sorted by destination, in source order within a destination (the
    key ``d * n + s`` is unique, so no sort's stability is relied on)."""
    n = int(dst.shape[0])
    if dests * n >= 1 << 62:  # (a key would overflow: NumPy's stable sort)
        return xp.argsort(dst, kind="stable")
    key = xp.where(dst >= 0, dst * n + xp.arange(n, dtype=np.int64), -1)
    return xp.argsort(key)


def permute(f: Callable[..., Any], defaults: Any, ix: Callable[..., Any], a: Any) -> Permute:
    """Forward permutation of ``a`` into a copy of ``defaults`` (module docstring)."""
    return Permute(plain(f), defaults, ix, a)


@dataclass(frozen=True, eq=False)
class Scatter(Permute):
    """``scatter(to, defaults, a)``: ``out[to[i]] = a[i]`` (the last in source order wins
    where several meet)."""

    to: Any = None

    replayable: ClassVar[bool] = False
    """Not a replay-lane step: its index function is made per call (over ``to``)."""

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("defaults", self.defaults), ("a", self.a), ("to", self.to))

    def materialise(self, ctx: Context, sources: Mapping[str, Any]) -> Any:
        to = working(target_of(ctx), sources["to"], ctx.backend)
        if source_shape(sources["to"]) != source_shape(sources["a"]):  # (a filter's, computed)
            _lengths_differ(source_shape(sources["to"])[0], source_shape(sources["a"])[0])
        return run_permute(ctx, self, _index_reader(to), sources)


def _lengths_differ(indices: int, elements: int) -> None:
    raise ValueError(f"scatter: 'to' has {indices} indices for {elements} elements")


def _replace(new: Any, old: Any) -> Any:
    return new


def _index_reader(to: Any) -> Callable[[int], Any]:
    def ix(i: int) -> Any:
        return to[i]

    return ix


def scatter(to: Any, defaults: Any, a: Any) -> Scatter:
    """``out = copy of defaults; out[to[i]] = a[i]`` for each i of the vector ``a``
    (``to[i] == IGNORE`` drops it; the last of several writes to one place wins)."""
    for what, x in (("to", to), ("defaults", defaults), ("a", a)):
        if len(source_shape(x)) != 1:
            raise ValueError(f"scatter: '{what}' must be a vector, not of shape {source_shape(x)}")
    if source_shape(to) != source_shape(a) and length_known(to) and length_known(a):
        _lengths_differ(source_shape(to)[0], source_shape(a)[0])
    if source_dtypes(to)[0].kind not in "iu" or len(source_dtypes(to)) != 1:
        raise TypeError("scatter: 'to' holds integer indices")
    return Scatter(_replace, defaults, _index_reader(to), a, name="scatter", to=to)
