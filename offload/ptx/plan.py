"""The GPU targets' pipelines and kernel variants, declared as data.

A GPU kernel is built in two steps, both run by ``offload.opt.manager``: the common
optimiser's pipeline (``offload.opt.registry.DEFAULT_PIPELINE``), then one *variant*
pipeline per kernel a launch may choose. Variants form two levels, tried in order at
launch time (``offload.ptx.choice``), each with the guard that admits it:

* index width (``INDEX_VARIANTS``): ``unit32`` -- 32-bit index arithmetic
  (``narrow``) that also takes every captured array's last-axis stride to be 1 (only
  where the function captures arrays); ``narrow32`` -- 32-bit; ``wide64`` -- 64-bit, the
  fallback. The guard is ``offload.ptx.guard``'s test of the launch's extents, strides
  and scalars against the narrowing's assumptions.
* shape (``KernelPlan.shapes``, by rank): a rank-2 kernel register-blocked by each of
  ``blockings`` (``reroll,jam,stage``: each thread computes f0 x f1 elements, its reads
  staged through shared memory), admitted where its tiles fill the SMs at least once
  (``fills``); then the unblocked staged kernel (where a loop stages); then, for a kernel
  with nothing to stage, ``walk`` (each thread computes ``walk`` neighbouring rows, so a
  stencil's reads of neighbouring rows are made once: ``offload.ptx.passes.walk``),
  admitted where the rows are at least ``walk`` and its threads fill the SMs; then the
  plain kernel. A rank-3 kernel walks axis 0 (its planes) likewise, or is plain. A rank-1
  kernel stages its rolled loop in lines. A variant whose pipeline
  does not apply (the jam would carry too many registers, there is no loop to stage) is
  dropped.

Every variant ends with ``const_bank,early_loads``. ``stage``, ``jam`` and ``early_loads``
do not run with bounds checks; ``disabled_passes`` removes any pass, and a ``first(...)``
alternative naming a disabled ``stage`` or ``jam`` is not tried (``disabled_passes={"jam"}``:
no blocked variants; ``{"reroll"}``: the unrolled loop is staged and blocked). The
simulator (``SIM_PLAN``) runs the same variants with small tiles and lines
and an unequal blocking, always blocked where the jam applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.ir.tile_ops import tile_of
from offload.ir.types import ArrayType
from offload.opt.manager import Trace, run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes import GPU


@dataclass(frozen=True)
class IndexVariant:
    """One index width of a kernel, and what its launch guard checks."""

    name: str
    bits: int
    """32: ``narrow`` runs (and ``licm`` after it: narrowing casts in loops are invariant)."""
    unit_last: bool = False
    """The kernel adds the last index unscaled (captured arrays' last-axis strides are 1)."""
    guarded: bool = True
    """Admitted only where ``offload.ptx.guard``'s test holds (the 64-bit one always)."""

    def applies(self, fn: Function, options: CompileOptions) -> bool:
        """A 32-bit kernel only where ``narrow`` is not disabled; a unit-stride kernel only
        where ``fn`` captures an array (else it is the general one)."""
        if self.bits == 32 and "narrow" in options.disabled_passes:
            return False
        return not self.unit_last or any(
            isinstance(c.type, ArrayType) and c.type.ndim for c in fn.captures
        )


INDEX_VARIANTS = (
    IndexVariant("unit32", 32, unit_last=True),
    IndexVariant("narrow32", 32),
    IndexVariant("wide64", 64, guarded=False),
)


@dataclass(frozen=True)
class ShapeVariant:
    """One way of mapping a kernel's elements to threads."""

    name: str
    pipeline: str
    blocked: bool = False
    """A register-blocked variant: dropped where the blocking does not apply, and (with
    ``KernelPlan.fill_guard``) admitted only where its thread blocks fill the SMs."""
    staged: bool = False
    """Dropped where the kernel does not stage (no thread tiles: a later variant serves)."""


def _shapes(
    blockings: tuple[tuple[int, int], ...], walk: int
) -> dict[int, tuple[ShapeVariant, ...]]:
    blocked = tuple(
        ShapeVariant(
            f"{f0}x{f1}",
            f"first(reroll,jam{{factors={f0}x{f1}}},stage)",
            blocked=True,
        )
        for f0, f1 in blockings
    )
    walking = [ShapeVariant(f"walk{walk}", f"walk{{factor={walk}}}", blocked=True)]
    return {
        1: (ShapeVariant("lines", "first(reroll,stage)"),),
        2: (
            *blocked,
            ShapeVariant("tiles", "stage", staged=True),
            *(walking if walk > 1 else []),
            ShapeVariant("plain", ""),
        ),
        3: (*(walking if walk > 1 else []), ShapeVariant("plain", "")),
    }


@dataclass(frozen=True)
class KernelPlan:
    """A GPU target's kernel variants and the parameters its passes take."""

    name: str
    tile: int
    """A rank-2 kernel's thread tile edge (``tile`` x ``tile`` threads per block)."""
    line: int
    """A staged rank-1 kernel's threads per block (and iterations per chunk)."""
    blockings: tuple[tuple[int, int], ...]
    """Register blockings tried in order (rows, columns of elements per thread)."""
    fill_guard: bool = True
    """Whether a blocked kernel gives way to the next variant where its tiles would not
    fill the SMs (the simulator: no, so that the blocked kernel is what it tests)."""
    walk: int = 4
    """Rows a thread computes in a walking kernel (``offload.ptx.passes.walk``; 1: none)."""
    tail: str = "const_bank,early_loads"
    shapes: Mapping[int, tuple[ShapeVariant, ...]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shapes", _shapes(self.blockings, self.walk))

    def shape_variants(self, rank: int) -> tuple[ShapeVariant, ...]:
        """The shape variants of a rank-``rank`` kernel, in the order they are tried."""
        return self.shapes.get(rank, (ShapeVariant("plain", ""),))

    def pipeline(self, index: IndexVariant, shape: ShapeVariant) -> str:
        """The variant's pipeline text (run after the common one)."""
        narrow = "narrow,licm" if index.bits == 32 else ""
        return ",".join(p for p in (narrow, shape.pipeline, self.tail) if p)

    def kernel_ir(
        self,
        fn: Function,
        options: CompileOptions,
        index: IndexVariant,
        shape: ShapeVariant,
        trace: Trace | None = None,
    ) -> Function | None:
        """The IR of ``fn``'s (the optimised IR's) kernel in this variant, or ``None`` where
        the shape variant does not apply (a blocking that is not made, or that no longer
        stages). ``trace`` sees each pass as ``run_pipeline`` gives it."""
        out = run_pipeline(
            fn,
            options,
            trace,
            pipeline=self.pipeline(index, shape),
            registry=GPU,
            overrides={"stage": {"tile": self.tile, "line": self.line, "index_bits": index.bits}},
        )
        if shape.blocked and not out.blocking:
            return None  # the blocking did not apply: the next shape variant serves
        if shape.staged and tile_of(out) is None:
            return None  # nothing staged: the next shape variant serves
        return out

    def first_ir(
        self,
        fn: Function,
        options: CompileOptions,
        index: IndexVariant,
        trace: Trace | None = None,
    ) -> tuple[ShapeVariant, Function]:
        """The first shape variant of ``index`` that applies and its IR (the kernel a
        large launch of that width runs); ``trace`` (else ``options.print_after``) sees
        only that variant's passes."""
        for shape in self.shape_variants(fn.rank):
            seen: list[tuple[str, Function]] = []
            ir = self.kernel_ir(fn, options, index, shape, _collect(seen))
            if ir is not None:
                for step, after in seen:  # (already filtered by options.print_after)
                    if trace is not None:
                        trace(step, after)
                    elif options.print_after:
                        print(f"// IR after {step}\n{print_function(after)}")
                return shape, ir
        raise AssertionError("the last shape variant always applies")


def _collect(seen: list[tuple[str, Function]]) -> Trace:
    def collect(step: str, fn: Function) -> None:
        seen.append((step, fn))

    return collect


INDEX = {v.name: v for v in INDEX_VARIANTS}
"""The index variants by name."""


GPU_PLAN = KernelPlan("gpu", tile=16, line=256, blockings=((8, 8), (4, 4)))
"""The GPU's: 256-thread blocks; 8 x 8 sums take 64 registers and read 16 staged values per
64 multiply-adds (a float matrix product: 8 x 8; a double one, whose sums take twice the
registers, 4 x 4: ``jam``'s ``max_carried``)."""

SIM_PLAN = KernelPlan("gpu-sim", tile=4, line=8, blockings=((2, 3),), fill_guard=False, walk=3)
"""Under the simulator (a Python thread per CUDA thread): small tiles and short lines, so
that a test runs several chunks, and unequal blocking factors, so that a mix-up of the axes
shows."""
