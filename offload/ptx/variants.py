"""The IR a GPU kernel is built from: the optimised IR, narrowed and staged.

Two variants per kernel (``offload.ptx.guard``): 32-bit index arithmetic
(``offload.opt.narrow``) for launches inside the guard, 64-bit otherwise. Both have their
reduction loop's shared reads staged through shared memory (``offload.opt.stage``) --
except with bounds checks (a staged read is made by another thread than the element's, so
its fault would name the wrong element) or when ``disabled_passes`` names ``stage``. A
staged kernel is also register-blocked (``offload.opt.jam``: each thread computes
``BLOCKING`` elements, so each staged read serves several) where the jam applies and the
blocked kernel stages too, unless ``disabled_passes`` names ``jam``.
"""

from __future__ import annotations

from offload.ir.core import Function
from offload.ir.tile_ops import tile_of
from offload.opt.jam import JamIndex
from offload.opt.narrow import NarrowIndexArithmetic
from offload.opt.stage import StageTiles
from offload.options import CompileOptions

TILE = 16
"""The thread tile's edge on a GPU: 256-thread blocks."""
SIM_TILE = 4
"""Under the simulator (a Python thread per CUDA thread): small tiles, several chunks."""
BLOCKING = (4, 4)
"""Elements per thread of a staged kernel (rows, columns): 16 accumulators, 8 shared reads
per 16 multiply-adds instead of 32."""
SIM_BLOCKING = (2, 3)
"""Under the simulator: unequal factors, so that a mix-up of the axes shows."""


def kernel_ir(fn: Function, options: CompileOptions, bits: int, *, simulator: bool) -> Function:
    """The IR of ``fn``'s ``bits``-wide kernel (``fn`` is the optimised IR)."""
    if bits == 32:
        fn = NarrowIndexArithmetic(trust_load_indices=not options.bounds_check).run(fn)
    if options.bounds_check or "stage" in options.disabled_passes:
        return fn
    stage = StageTiles(tile=SIM_TILE if simulator else TILE)
    staged = stage.run(fn)
    if tile_of(staged) is None or "jam" in options.disabled_passes:
        return staged
    blocked = stage.run(JamIndex(SIM_BLOCKING if simulator else BLOCKING).run(fn))
    return blocked if blocked.blocking and tile_of(blocked) is not None else staged
