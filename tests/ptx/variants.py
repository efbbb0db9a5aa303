"""The kernel IR a test looks at: the first variant of one index width that applies."""

from __future__ import annotations

from offload.ir.core import Function
from offload.options import CompileOptions
from offload.ptx.plan import GPU_PLAN, INDEX, SIM_PLAN

TILE, LINE, BLOCKINGS = GPU_PLAN.tile, GPU_PLAN.line, GPU_PLAN.blockings
SIM_TILE, SIM_LINE, SIM_BLOCKINGS = SIM_PLAN.tile, SIM_PLAN.line, SIM_PLAN.blockings


def kernel_ir(fn: Function, options: CompileOptions, bits: int, *, simulator: bool) -> Function:
    """The IR of ``fn``'s general (not unit-stride) ``bits``-wide kernel, blocked by the
    first blocking that applies, as the GPU (or the simulator) compiles it."""
    plan = SIM_PLAN if simulator else GPU_PLAN
    return plan.first_ir(fn, options, INDEX["narrow32" if bits == 32 else "wide64"])[1]
