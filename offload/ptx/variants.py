"""The IR a GPU kernel is built from: the optimised IR, narrowed and staged.

Two variants per kernel (``offload.ptx.guard``): 32-bit index arithmetic
(``offload.opt.narrow``) for launches inside the guard, 64-bit otherwise. Both have their
reduction loop's shared reads staged through shared memory (``offload.opt.stage``; a
rank-1 kernel's on its rolled loop, ``offload.opt.reroll``) --
except with bounds checks (a staged read is made by another thread than the element's, so
its fault would name the wrong element) or when ``disabled_passes`` names ``stage``. A
staged kernel is also register-blocked (``offload.opt.jam``: each thread computes
``BLOCKINGS`` elements, so each staged read serves several) where the jam applies and the
blocked kernel stages too, unless ``disabled_passes`` names ``jam``; its loop is the rolled
one (``offload.opt.reroll``, unless ``disabled_passes`` names ``reroll``).
"""

from __future__ import annotations

from collections.abc import Sequence

from offload.ir.core import Function
from offload.ir.tile_ops import tile_of
from offload.opt.const_bank import bank_constants
from offload.opt.early_loads import EarlyLoads
from offload.opt.jam import JamIndex, carried_words
from offload.opt.licm import LoopInvariantCodeMotion
from offload.opt.narrow import NarrowIndexArithmetic
from offload.opt.reroll import Reroll
from offload.opt.stage import StageTiles
from offload.options import CompileOptions

TILE = 16
"""The thread tile's edge on a GPU: 256-thread blocks."""
SIM_TILE = 4
"""Under the simulator (a Python thread per CUDA thread): small tiles, several chunks."""
LINE = 256
"""A staged rank-1 kernel's threads per block (and iterations per chunk)."""
SIM_LINE = 8
"""Under the simulator: short lines, several chunks."""
BLOCKINGS = ((8, 8), (4, 4))
"""Elements per thread of a staged kernel (rows, columns), the first whose loop-carried
values fit ``MAX_CARRIED``: 8 x 8 sums take 64 registers and read 16 staged values per 64
multiply-adds (a float matrix product: 8 x 8; a double one: 4 x 4)."""
MAX_CARRIED = 80
"""32-bit registers a blocked kernel's loop may carry (of the 255 a thread can have)."""
SIM_BLOCKINGS = ((2, 3),)
"""Under the simulator: unequal factors, so that a mix-up of the axes shows."""


def kernel_ir(
    fn: Function,
    options: CompileOptions,
    bits: int,
    *,
    simulator: bool,
    blockings: Sequence[tuple[int, int]] | None = None,
) -> Function:
    """The IR of ``fn``'s ``bits``-wide kernel (``fn`` is the optimised IR), blocked by the
    first of ``blockings`` (default ``BLOCKINGS``; none: not blocked) that applies, its
    constant captures banked where uniform (``offload.opt.const_bank``), with each block's
    loads issued first (``offload.opt.early_loads``) unless bounds-checked or
    ``disabled_passes`` names ``early_loads``."""
    fn = bank_constants(_staged(fn, options, bits, simulator=simulator, blockings=blockings))
    if options.bounds_check or "early_loads" in options.disabled_passes:
        return fn
    return EarlyLoads().run(fn)


def _staged(
    fn: Function,
    options: CompileOptions,
    bits: int,
    *,
    simulator: bool,
    blockings: Sequence[tuple[int, int]] | None,
) -> Function:
    """``kernel_ir`` before ``early_loads``: narrowed, staged and blocked."""
    if bits == 32:
        fn = NarrowIndexArithmetic(trust_load_indices=not options.bounds_check).run(fn)
        if "licm" not in options.disabled_passes:  # narrowing casts in loops: a bound is one
            fn = LoopInvariantCodeMotion().run(fn)
    if options.bounds_check or "stage" in options.disabled_passes:
        return fn
    stage = StageTiles(
        tile=SIM_TILE if simulator else TILE,
        line=SIM_LINE if simulator else LINE,
        index_bits=bits,
    )
    if fn.rank == 1:  # the rolled loop: one window per array, not one per unrolled copy
        rolled = fn if "reroll" in options.disabled_passes else Reroll().run(fn)
        staged = stage.run(rolled)
        return staged if tile_of(staged) is not None else fn
    staged = stage.run(fn)
    if tile_of(staged) is None or "jam" in options.disabled_passes:
        return staged
    if "reroll" not in options.disabled_passes:
        fn = Reroll().run(fn)  # a chunk of the rolled loop: the slots fit at 8 x 8
    if blockings is None:
        blockings = SIM_BLOCKINGS if simulator else BLOCKINGS
    for factors in blockings:
        jammed = JamIndex(factors).run(fn)
        if not jammed.blocking or carried_words(jammed) > MAX_CARRIED:
            continue
        blocked = stage.run(jammed)
        if tile_of(blocked) is not None:
            return blocked
    return staged
