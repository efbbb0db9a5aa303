"""The GPU target's own passes, and its registry: the common passes plus these.

``narrow`` (32-bit index arithmetic), ``reroll`` (a chunk of the rolled loop), ``stage``
(shared-memory staging of a reduction loop's reads), ``jam`` (register blocking),
``walk`` (neighbouring rows a thread), ``const_bank`` (specialised contents kept in the
constant bank) and ``early_loads`` (each block's loads first). ``offload.ptx.plan``
declares the pipelines that use them.
"""

from __future__ import annotations

from offload.opt.registry import COMMON
from offload.ptx.passes.const_bank import ConstBank
from offload.ptx.passes.early_loads import EarlyLoads
from offload.ptx.passes.jam import JamIndex
from offload.ptx.passes.narrow import NarrowIndexArithmetic
from offload.ptx.passes.reroll import Reroll
from offload.ptx.passes.stage import StageTiles
from offload.ptx.passes.walk import WalkRows

GPU: dict[str, type] = {
    **COMMON,
    **{
        cls.name: cls
        for cls in (
            NarrowIndexArithmetic,
            Reroll,
            StageTiles,
            JamIndex,
            WalkRows,
            ConstBank,
            EarlyLoads,
        )
    },
}
"""Pass name -> pass class for GPU pipelines (the simulator's too)."""
