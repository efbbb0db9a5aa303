"""The IR a GPU kernel is built from: the optimised IR, narrowed and staged.

Two variants per kernel (``offload.ptx.guard``): 32-bit index arithmetic
(``offload.opt.narrow``) for launches inside the guard, 64-bit otherwise. Both have their
reduction loop's shared reads staged through shared memory (``offload.opt.stage``) --
except with bounds checks (a staged read is made by another thread than the element's, so
its fault would name the wrong element) or when ``disabled_passes`` names ``stage``.
"""

from __future__ import annotations

from offload.ir.core import Function
from offload.opt.narrow import NarrowIndexArithmetic
from offload.opt.stage import StageTiles
from offload.options import CompileOptions

TILE = 16
"""The thread tile's edge on a GPU: 256-thread blocks."""
SIM_TILE = 4
"""Under the simulator (a Python thread per CUDA thread): small tiles, several chunks."""


def kernel_ir(fn: Function, options: CompileOptions, bits: int, *, simulator: bool) -> Function:
    """The IR of ``fn``'s ``bits``-wide kernel (``fn`` is the optimised IR)."""
    if bits == 32:
        fn = NarrowIndexArithmetic(trust_load_indices=not options.bounds_check).run(fn)
    if not options.bounds_check and "stage" not in options.disabled_passes:
        fn = StageTiles(tile=SIM_TILE if simulator else TILE).run(fn)
    return fn
