"""Scans on the innermost axis: ``scanl``, ``scanl1``, ``scanl_total``, ``scanr``, ``scanr1``,
``scanr_total`` and the segmented ``scanl_seg``, ``scanl1_seg`` (Accelerate's names with
``'`` spelled ``_total``).

    scanl(f, z, a)        [z, f(z, a0), f(f(z, a0), a1), ...]          length n + 1
    scanl1(f, a)          [a0, f(a0, a1), ...]                         length n
    scanl_total(f, z, a)  (scanl(f, z, a)[..., :n], scanl(f, z, a)[..., n])
    scanr(f, z, a)        [..., f(a[n-2], f(a[n-1], z)), f(a[n-1], z), z]
    scanr1(f, a)          [..., f(a[n-2], a[n-1]), a[n-1]]
    scanr_total(f, z, a)  (scanr(f, z, a)[..., 1:], scanr(f, z, a)[..., 0])
    scanl_seg(f, z, a, seg)   scanl of each segment (lengths ``seg``): n + len(seg)
    scanl1_seg(f, a, seg)     scanl1 of each segment: length n

``f`` must be associative (it need not be commutative); ``z`` is its neutral element; a
tuple array scans tuples (``f`` takes and returns tuples). Ranks above one scan every row.

**Determinism and cost.** On the CPU a scan is a reduce-then-scan over chunks whose
size is fixed by the row length alone (``offload.acc.skeletons.scan_src``); on the GPU it
runs in one pass with a decoupled look-back whose prefixes are the left fold of the tiles'
totals (``offload.acc.skeletons.scan_onepass_src``), except a ``cross_target`` scan with a
float component, which runs the CPU's chunk tree. The result never depends on timing or
on where the input sits in memory. The modes differ in the chunk tree the CPU uses:

* ``deterministic`` (default): ``compute_s`` folds each row left to right in one chunk
  (n combines, the sequential cost); ``compute_p`` uses chunks of ``CPU_CHUNK`` (about
  2n combines and a second pass over the data, spread over the cores); the GPU the one
  pass (2n combines, the data read once).
* ``cross_target``: the CPU targets use the GPU's chunk tree (chunks of ``GPU_CHUNK``), so
  every target gives the same bits; ``compute_s`` then does about 2n combines instead of
  n, and a float scan on the GPU reads its data about three times instead of once.
* ``fast``: as ``deterministic`` (the GPU's one pass is deterministic at no cost).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload.acc.base import Collective, Context
from offload.acc.combine import ScalarFunction
from offload.acc.scan_job import ScanJob
from offload.acc.skeletons.build import captured, working, xp_for
from offload.acc.skeletons.deliver import deliver, delivered, results
from offload.acc.skeletons.operands import (
    check_determinism,
    combine_for,
    components,
    neutral,
    pack,
    source_dtypes,
    source_shape,
    target_of,
)
from offload.acc.skeletons.segments import segment_layout
from offload.frontend.nodes import ElementLowering, Index, NodeFunction, NodePath
from offload.frontend.operators import plain
from offload.frontend.values import TupleVal, Val

Dt = np.dtype[Any]


@dataclass(frozen=True, eq=False)
class Scan(Collective):
    """A scan of ``a``'s innermost axis (see the module docstring). ``z is None`` for the
    ``1`` forms; ``seg`` is a segment-length descriptor or ``None``; ``total`` makes the
    result the pair (exclusive scan, total)."""

    f: Callable[..., Any]
    z: object
    a: Any
    right: bool = False
    seg: Any = None
    total: bool = False
    name: str = "scanl"

    def __post_init__(self) -> None:
        shape = source_shape(self.a)
        if len(shape) == 0:
            raise ValueError(f"{self.name}: a scan needs an array of rank >= 1, not a scalar")
        dts = source_dtypes(self.a)
        if self.z is not None:
            neutral(self.z, dts, self.name)
        if self.seg is not None:
            seg_shape = source_shape(self.seg)
            if len(seg_shape) != 1:
                raise ValueError(f"{self.name}: segment lengths are a 1-D array, not {seg_shape}")
            if source_dtypes(self.seg)[0].kind not in "iu":
                raise TypeError(f"{self.name}: segment lengths are integers")

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        *lead, n = source_shape(self.a)
        if self.seg is not None:
            extra = source_shape(self.seg)[0] if self.z is not None else 0
            return (*lead, n + extra)
        if self.z is not None and not self.total:
            return (*lead, n + 1)
        return (*lead, n)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("f", self.f),)

    def static_key(self) -> tuple[object, ...]:
        return (self.name, self.right, self.total, self.z is None, self.seg is None)

    def sources(self) -> tuple[tuple[str, object], ...]:
        out: tuple[tuple[str, object], ...] = (("a", self.a),)
        return out + ((("seg", self.seg),) if self.seg is not None else ())

    def result_dtypes(self) -> tuple[Dt, ...]:
        return source_dtypes(self.a)

    @property
    def replayable(self) -> bool:
        """Whether the replay lane may record this scan (``materialise``): not a segmented
        one (its layout is made on the host from the descriptor's contents)."""
        return self.seg is None

    def lower_captures(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val | None:
        """The source's element (at ``idx``, padded to its rank), ``z`` and the combine
        applied to the element: every value the scan captures (``Collective``)."""
        if not self.replayable:
            return None
        ndim = len(source_shape(self.a))
        at = [*idx[:ndim], *[lo.constant(0)] * (ndim - len(idx))]
        a_path = (*path, ("attr", "a"))
        if isinstance(self.a, tuple | list):
            parts = [lo.element(x, (*a_path, ("item", k)), at) for k, x in enumerate(self.a)]
            v: Val = TupleVal(tuple(parts))
        else:
            v = lo.element(self.a, a_path, at)
        if self.z is not None:
            lo.captured(self.z, (*path, ("attr", "z")))
        return lo.call(self.f, (*path, ("attr", "f")), [v, v])

    def materialise(self, ctx: Context, sources: Mapping[str, Any]) -> Any:
        if self.seg is not None:
            return self._run(ctx, components(sources["a"]), sources["seg"])
        record = ctx.record
        run, captures = self.runner(ctx, kept=record is not None)
        comps = components(sources["a"])
        result = run(*comps)
        if record is not None:
            if captures:
                record.refuse(f"the {self.name}'s combine function captures values")
            else:
                record.step(run, comps, result)
        return result

    def runner(self, ctx: Context, *, kept: bool) -> tuple[Callable[..., Any], bool]:
        """The scan of a source given as its component arrays, for ``ctx`` (not
        segmented): what does not depend on the arrays is looked up once -- the replay
        lane's step (``offload.replay``) where ``kept``, whose launch is then frozen --
        and whether the combine captures values (such a step is not kept)."""
        ctx = replace(ctx, trace=None, record=None)  # (the step outlives this call)
        target, mode, dts, sf, zs, caps = self._setup(ctx)
        has_z = int(self.z is not None)
        frozen: dict[tuple[int, ...], Any] | None = {} if kept and not caps else None
        job = ScanJob(target, mode, sf, dts, caps, right=self.right, frozen=frozen)

        def run(*comps: Any) -> Any:
            xs, lead, rows, n = _rows(target, list(comps), ctx)
            made, outs = results(ctx.backend, target, (rows, n + has_z), dts)
            job.run(xs, zs, has_z, rows, n + has_z, outs=outs)
            delivered(ctx.backend, target)  # (unified: written in place)
            return self._shaped(ctx, target, made, lead, n)

        return run, bool(caps)

    def _setup(
        self, ctx: Context
    ) -> tuple[str, str, tuple[Dt, ...], ScalarFunction, list[Any], list[Any]]:
        """(target, mode, dtypes, combine, neutral elements, the combine's captures)."""
        target = target_of(ctx)
        dts = source_dtypes(self.a)
        sf = combine_for(self.f, dts, f"{self.name}'s combine function")
        zs = neutral(self.z, dts, self.name) if self.z is not None else [dt.type(0) for dt in dts]
        return (
            target,
            check_determinism(ctx),
            dts,
            sf,
            zs,
            captured(target, sf.captures(), ctx.backend),
        )

    def _run(self, ctx: Context, comps: list[Any], seg: Any) -> Any:
        target, mode, _, sf, zs, caps = self._setup(ctx)
        xs, lead, _, n = _rows(target, comps, ctx)
        outs = self._segmented((target, mode, sf, caps), xs, zs, seg)
        return self._shaped(ctx, target, outs, lead, n)

    def _shaped(self, ctx: Context, target: str, outs: list[Any], lead: list[int], n: int) -> Any:
        """The result from the scanned rows ``outs`` (the ``_total`` forms' pair)."""
        shaped = [deliver(ctx, target, o.reshape(*lead, o.shape[1])) for o in outs]
        if not self.total:
            return pack(shaped)
        if self.right:
            return pack([o[..., 1:] for o in shaped]), pack([o[..., 0] for o in shaped])
        return pack([o[..., :n] for o in shaped]), pack([o[..., n] for o in shaped])

    def _segmented(
        self,
        job: tuple[str, str, ScalarFunction, list[Any]],
        xs: list[Any],
        zs: list[Any],
        seg: Any,
    ) -> list[Any]:
        target, mode, sf, caps = job
        rows, n = xs[0].shape
        xp = xp_for(target)
        layout = segment_layout(seg, n, self.z is not None, self.name, xp)
        length = layout.length
        flags = xp.zeros((rows, length), np.uint8)
        flags[:, layout.heads] = 1
        if self.z is None:
            vs = xs
        else:
            vs = []
            for x, z in zip(xs, zs, strict=True):
                v = xp.empty((rows, length), x.dtype)
                v[:, layout.heads] = z
                v[:, layout.dest] = x
                vs.append(v)
        dts = (np.dtype(np.uint8), *(x.dtype for x in xs))
        seg_job = ScanJob(target, mode, sf, dts, caps, segmented=True)
        return seg_job.run([flags, *vs], [np.uint8(0), *zs], 0, rows, length)[1:]


def _rows(target: str, comps: list[Any], ctx: Context) -> tuple[list[Any], list[int], int, int]:
    """The components as working arrays of rows: (arrays, leading shape, rows, length)."""
    xs = [working(target, c, ctx.backend) for c in comps]
    *lead, n = xs[0].shape
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    return [x.reshape(rows, n) for x in xs], lead, rows, n


@dataclass(frozen=True, eq=False)
class Part(Collective):
    """Item ``index`` of a collective whose result is a pair (``scanl_total``'s)."""

    whole: Scan
    index: int

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        full = self.whole.shape
        return full if self.index == 0 else full[:-1]

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def static_key(self) -> tuple[object, ...]:
        return (self.index,)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("whole", self.whole),)

    def result_dtypes(self) -> tuple[Dt, ...]:
        return self.whole.result_dtypes()

    @property
    def replayable(self) -> bool:
        return self.whole.replayable

    def lower_captures(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val | None:
        return self.whole.lower_captures(lo, (*path, ("attr", "whole")), idx)

    def materialise(self, ctx: Context, sources: Mapping[str, Any]) -> Any:
        # (the whole scan is not the call's result: computed where the call's own arrays
        # are, ``Context.inner``, its item is delivered as the call's)
        item = sources["whole"][self.index]
        if ctx.inner is None:
            return item
        target = target_of(ctx)
        if isinstance(item, tuple):
            return tuple(deliver(ctx, target, x) for x in item)
        return deliver(ctx, target, item)


def scanl(f: Callable[..., Any], z: object, a: Any) -> Scan:
    """Exclusive left scan with neutral ``z``, length n + 1 (module docstring)."""
    return Scan(plain(f), z, a, name="scanl")


def scanl1(f: Callable[..., Any], a: Any) -> Scan:
    """Inclusive left scan, length n."""
    return Scan(plain(f), None, a, name="scanl1")


def scanl_total(f: Callable[..., Any], z: object, a: Any) -> tuple[Part, Part]:
    """(exclusive left scan of length n, the total): Accelerate's ``scanl'``."""
    whole = Scan(plain(f), z, a, total=True, name="scanl_total")
    return Part(whole, 0), Part(whole, 1)


def scanr(f: Callable[..., Any], z: object, a: Any) -> Scan:
    """Exclusive right scan with neutral ``z``, length n + 1 (``z`` last)."""
    return Scan(plain(f), z, a, right=True, name="scanr")


def scanr1(f: Callable[..., Any], a: Any) -> Scan:
    """Inclusive right scan, length n."""
    return Scan(plain(f), None, a, right=True, name="scanr1")


def scanr_total(f: Callable[..., Any], z: object, a: Any) -> tuple[Part, Part]:
    """(exclusive right scan of length n, the total): Accelerate's ``scanr'``."""
    whole = Scan(plain(f), z, a, right=True, total=True, name="scanr_total")
    return Part(whole, 0), Part(whole, 1)


def scanl_seg(f: Callable[..., Any], z: object, a: Any, seg: Any) -> Scan:
    """``scanl`` of each segment of the innermost axis (lengths ``seg``, summing to n):
    length n + len(seg)."""
    return Scan(plain(f), z, a, seg=seg, name="scanl_seg")


def scanl1_seg(f: Callable[..., Any], a: Any, seg: Any) -> Scan:
    """``scanl1`` of each segment of the innermost axis: length n."""
    return Scan(plain(f), None, a, seg=seg, name="scanl1_seg")
