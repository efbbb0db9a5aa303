"""The common optimiser's passes (every target runs them) and its default pipeline.

A target adds its own passes to these in its own registry (the GPU's:
``offload.ptx.passes.GPU``); ``offload.opt.manager`` runs a pipeline over any registry.
"""

from __future__ import annotations

from offload.opt.const_captures import ConstantCaptures
from offload.opt.copyprop import CopyPropagation
from offload.opt.cse import CommonSubexpressions
from offload.opt.dce import DeadCodeElimination
from offload.opt.divmod import DivModSimplification
from offload.opt.fold import ConstantFolding
from offload.opt.hoist import HoistInvariants
from offload.opt.licm import LoopInvariantCodeMotion
from offload.opt.select import BranchToSelect
from offload.opt.simplifycfg import SimplifyCFG
from offload.opt.unroll import Unroll

COMMON: dict[str, type] = {
    cls.name: cls
    for cls in (
        ConstantCaptures,
        ConstantFolding,
        CopyPropagation,
        CommonSubexpressions,
        DeadCodeElimination,
        SimplifyCFG,
        BranchToSelect,
        DivModSimplification,
        LoopInvariantCodeMotion,
        Unroll,
        HoistInvariants,
    )
}
"""Pass name -> pass class, for the passes every target runs."""

DEFAULT_PIPELINE = (
    "consts,simplifycfg,fold,copyprop,cse,dce,divmod,fold,consts,cse,select,simplifycfg,"
    "fold,copyprop,divmod,cse,fold,licm,unroll,divmod,fold,cse,licm,dce,simplifycfg,hoist,dce,"
    "simplifycfg"
)
"""The pipeline every target runs first unless ``CompileOptions.pipeline`` says otherwise.

Constant captured arrays' shapes and elements first (``consts``: only functions
specialised on a small frozen array have any; again once indices are folded), clean-up (so
that branches on constants and forwarding blocks do not hide diamonds), index
simplification before branch merging (range facts can decide the negative-index wrap
selects), then merging, another round of clean-up, LICM, then runtime unrolling of counted
inner loops (a latency-bound reduction issues its loads F at a time)
and the clean-up it needs; last, index-independent loops and transcendental calls leave
the element loop for a once-per-call prologue (``hoist``), and the clean-up after it.
"""
