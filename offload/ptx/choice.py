"""A function's GPU kernel variants and the guards that choose one for each launch.

``KernelChoice`` holds the variants of one level of ``offload.ptx.plan`` (index width, then
thread mapping) in the order they are tried: a launch runs the first variant whose guard
holds (the last has none). The first variant that applies is made when the choice is; each
later one on the first launch that needs it (a variant that does not apply is made as
``None`` and skipped). A variant's kernel is a loaded kernel or the choice of the next
level. Every variant computes every element exactly as the element function does, so the
choice changes the time only.

Making a variant runs its pass pipeline (cheap: IR); compiling its kernel (NVVM: seconds
for a register-blocked one) waits until a launch picks it or something reads its kernel
(``Variant.kernel``). Guards are known from the IR (``FillGuard``'s tile and blocking), so a
launch whose shape a blocked variant would not fill never compiles it: matrix-mult at
n = 128 compiled the 8x8 and 4x4 blockings before the kernel it ran (issue 20 item 6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any, Protocol

from offload.ir.core import Function
from offload.ir.tile_ops import tile_of
from offload.options import CompileOptions
from offload.ptx.config import tile_count
from offload.ptx.guard import IndexGuard
from offload.ptx.plan import INDEX_VARIANTS, IndexVariant, KernelPlan


class LoadedKernel(Protocol):
    """What a variant's kernel offers: ``launch`` and its generated source."""

    @property
    def source(self) -> Any: ...

    def launch(
        self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]
    ) -> None: ...


@dataclass(frozen=True)
class FillGuard:
    """Admits a launch whose ``tile`` x ``tile`` thread blocks of a kernel blocked by
    ``blocking`` number at least ``min_tiles`` (the SMs: fewer would leave some idle)."""

    tile: int
    blocking: tuple[int, ...]
    min_tiles: int

    def __call__(self, shape: tuple[int, ...], captures: Sequence[Any]) -> bool:
        return tile_count(shape, self.tile, self.blocking) >= self.min_tiles


@dataclass(frozen=True)
class WalkGuard:
    """Admits a launch of a walking kernel (``offload.ptx.passes.walk``: ``factor``
    neighbouring indices of axis 0 a thread) whose axis 0 is at least ``factor`` long (its
    mapping needs them) and, with ``min_threads``, whose threads number at least that (fewer
    would leave SMs idle: the plain kernel has ``factor`` times the threads)."""

    factor: int
    min_threads: int = 0

    def __call__(self, shape: tuple[int, ...], captures: Sequence[Any]) -> bool:
        rows = shape[0]
        return rows >= self.factor and -(-rows // self.factor) * prod(shape[1:]) >= self.min_threads

    def terms(self, rank: int) -> list[str]:
        """The guard's conditions over a launch's ``shape`` of ``rank`` (``offload.ptx.fused``)."""
        out = [f"shape[0] >= {self.factor}"]
        if self.min_threads:
            rest = "".join(f" * shape[{a}]" for a in range(1, rank))
            out.append(f"-(-shape[0] // {self.factor}){rest} >= {self.min_threads}")
        return out


WALK_THREADS_PER_SM = 512
"""A walking kernel's fill threshold: threads per SM (a quarter of an H100 SM's)."""

Guard = IndexGuard | FillGuard | WalkGuard


class Variant:
    """One variant of a choice: its name (``offload.ptx.plan``), kernel and guard. The
    kernel may be given as a function that makes it, called on first use."""

    __slots__ = ("_kernel", "_make", "guard", "name")

    def __init__(
        self,
        name: str,
        kernel: LoadedKernel | KernelChoice | Callable[[], LoadedKernel | KernelChoice],
        guard: Guard | None,
    ) -> None:
        self.name = name
        self.guard = guard
        """``None``: every launch that reaches it."""
        self._kernel: LoadedKernel | KernelChoice | None = None
        self._make: Callable[[], LoadedKernel | KernelChoice] | None = None
        if isinstance(kernel, KernelChoice) or hasattr(kernel, "launch"):
            self._kernel = kernel  # type: ignore[assignment]
        else:
            self._make = kernel  # type: ignore[assignment]

    @property
    def kernel(self) -> LoadedKernel | KernelChoice:
        """The variant's kernel (compiled now if it was given as a maker)."""
        k = self._kernel
        if k is None:
            assert self._make is not None
            k = self._kernel = self._make()
            self._make = None
        return k

    @property
    def compiled(self) -> bool:
        """Whether the kernel exists yet (``explain`` and tests)."""
        return self._kernel is not None


class KernelChoice:
    """Variants ``make(0) ... make(count - 1)`` tried in order (see the module doc)."""

    def __init__(self, names: Sequence[str], make: Callable[[int], Variant | None]) -> None:
        self.names = tuple(names)
        self._make = make
        self._made: list[Variant | None] = []
        first = self._variant(0)
        while first is None:
            first = self._variant(len(self._made))
        self.first: Variant = first
        """The first variant that applies: the one almost every launch runs."""

    def _variant(self, k: int) -> Variant | None:
        while len(self._made) <= k:  # made in order: a later one may use the earlier
            n = len(self._made)
            if n >= len(self.names):
                raise AssertionError(f"no variant of {self.names} applies")
            self._made.append(self._make(n))
        return self._made[k]

    def variants(self) -> list[Variant]:
        """The variants made so far that apply (for ``explain`` and tests)."""
        return [v for v in self._made if v is not None]

    def pick(self, shape: tuple[int, ...], captures: Sequence[Any]) -> LoadedKernel:
        """The kernel a launch over ``shape`` with ``captures`` runs (through every level)."""
        node: LoadedKernel | KernelChoice = self
        while isinstance(node, KernelChoice):
            node = node._pick_here(shape, captures)
        return node

    def _pick_here(
        self, shape: tuple[int, ...], captures: Sequence[Any]
    ) -> LoadedKernel | KernelChoice:
        for k in range(len(self.names)):
            v = self._variant(k)
            if v is not None and (v.guard is None or v.guard(shape, captures)):
                return v.kernel
        raise AssertionError(f"the last variant of {self.names} has a guard")

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Run over ``shape`` with the kernel whose guards this launch meets."""
        first = self.first  # the common case first: one guard, one call
        guard = first.guard
        if guard is None or guard(shape, captures):
            kernel = first.kernel
            if type(kernel) is KernelChoice:
                kernel = kernel.pick(shape, captures)
            kernel.launch(shape, outs, captures)
        else:
            self.pick(shape, captures).launch(shape, outs, captures)

    def freeze(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> Any:
        """The chosen kernel's ``freeze`` of this launch (``GPUKernel.freeze``), or ``None``
        where it has none. The choice depends only on what a replayed step keeps (shapes,
        strides, integer scalars: ``offload.ptx.guard``), so it holds for its later
        launches."""
        freeze = getattr(self.pick(shape, captures), "freeze", None)
        return None if freeze is None else freeze(shape, outs, captures)

    def leading(self) -> LoadedKernel:
        """The kernel of the first variant at every level."""
        node: LoadedKernel | KernelChoice = self.first.kernel
        while isinstance(node, KernelChoice):
            node = node.first.kernel
        return node


MakeKernel = Callable[[Function, IndexVariant], LoadedKernel]
"""Compile one variant's IR (with its index variant's width and stride assumption)."""


def build_choice(
    fn: Function,
    options: CompileOptions,
    plan: KernelPlan,
    make_kernel: MakeKernel,
    *,
    min_tiles: Callable[[], int],
    host_guards: bool = False,
) -> KernelChoice:
    """The kernel variants of ``fn`` (the optimised IR) that ``plan`` declares: a choice of
    index widths, each a choice of thread mappings (or its one kernel where only the last
    mapping applies). ``min_tiles()`` gives a blocked variant's fill guard its threshold
    (the SM count); ``host_guards``: index guards read host arrays (the simulator)."""
    indexes = [v for v in INDEX_VARIANTS if v.applies(fn, options)]
    shapes = plan.shape_variants(fn.rank)

    def make_index(k: int) -> Variant:
        index = indexes[k]

        def make_shape(j: int) -> Variant | None:
            shape = shapes[j]
            ir = plan.kernel_ir(fn, options, index, shape)
            if ir is None:
                return None
            guard: Guard | None = None
            tile = tile_of(ir)
            if shape.blocked and tile is None:  # a walking kernel: needs its rows
                fill = min_tiles() * WALK_THREADS_PER_SM if plan.fill_guard else 0
                guard = WalkGuard(ir.blocking[0], fill)
            elif shape.blocked and plan.fill_guard and j < len(shapes) - 1:
                assert tile is not None and ir.blocking, "a blocked variant is tiled"
                guard = FillGuard(tile, tuple(ir.blocking), min_tiles())
            return Variant(shape.name, lambda: make_kernel(ir, index), guard)

        inner = KernelChoice([s.name for s in shapes], make_shape)
        only = inner.first.guard is None  # no later variant can be reached
        guarded = index.guarded and k < len(indexes) - 1
        return Variant(
            index.name,
            inner.first.kernel if only else inner,
            IndexGuard(fn, index.unit_last, host_guards) if guarded else None,
        )

    return KernelChoice([v.name for v in indexes], make_index)
