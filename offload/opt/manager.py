"""Pass manager: a registry of passes and text pipelines (``"fold,cse,dce"``).

Each pass lives in its own module as one class with a ``name``, options as frozen
dataclass fields, a ``from_options`` factory and ``run(fn) -> fn``. ``run`` never mutates
the function it is handed (it works on a clone), so the IR before a pass stays valid for
dumps and comparisons. With ``CompileOptions.verify`` the verifier runs after every pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.options import CompileOptions


class Pass(Protocol):
    """One pass: a ``name`` and ``run(fn) -> fn`` (never mutates IR it was not handed)."""

    name: str

    def run(self, fn: Function) -> Function: ...


class UnknownPassError(ValueError):
    """A pipeline names a pass the registry does not have (a programming error upstream)."""


def _registry() -> dict[str, Callable[[CompileOptions], Pass]]:
    # Imported here so that each pass module can import this one's helpers freely.
    from offload.opt.const_captures import ConstantCaptures
    from offload.opt.copyprop import CopyPropagation
    from offload.opt.cse import CommonSubexpressions
    from offload.opt.dce import DeadCodeElimination
    from offload.opt.divmod import DivModSimplification
    from offload.opt.fold import ConstantFolding
    from offload.opt.licm import LoopInvariantCodeMotion
    from offload.opt.select import BranchToSelect
    from offload.opt.simplifycfg import SimplifyCFG
    from offload.opt.unroll import Unroll

    classes = (
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
    )
    return {cls.name: cls.from_options for cls in classes}


REGISTRY: dict[str, Callable[[CompileOptions], Pass]] = _registry()
"""Pass name -> factory taking the compile options."""

DEFAULT_PIPELINE = (
    "consts,simplifycfg,fold,copyprop,cse,dce,divmod,fold,consts,cse,select,simplifycfg,"
    "fold,copyprop,divmod,cse,fold,licm,unroll,divmod,fold,cse,licm,dce,simplifycfg"
)
"""The pipeline every backend runs unless ``CompileOptions.pipeline`` says otherwise.

Constant captured arrays' shapes and elements first (``consts``: only functions
specialised on a small frozen array have any; again once indices are folded), clean-up (so
that branches on constants and forwarding blocks do not hide diamonds), index
simplification before branch merging (range facts can decide the negative-index wrap
selects), then merging, another round of clean-up, LICM, then runtime unrolling of counted
inner loops (a latency-bound reduction issues its loads F at a time)
and the clean-up it needs.
"""


def parse_pipeline(text: str) -> list[str]:
    """The pass names of a pipeline text (``"fold, cse,dce"``); unknown names raise."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    for name in names:
        if name not in REGISTRY:
            known = ", ".join(sorted(REGISTRY))
            raise UnknownPassError(f"unknown pass {name!r} in pipeline {text!r} (known: {known})")
    return names


def build_pipeline(options: CompileOptions) -> list[Pass]:
    """The pass objects the options ask for, disabled passes removed."""
    text = options.pipeline if options.pipeline is not None else DEFAULT_PIPELINE
    return [
        REGISTRY[name](options)
        for name in parse_pipeline(text)
        if name not in options.disabled_passes
    ]


def run_pipeline(
    fn: Function,
    options: CompileOptions,
    trace: Callable[[str, Function], None] | None = None,
) -> Function:
    """Run the options' pipeline over ``fn``; ``trace(pass_name, fn)`` sees each result.

    ``trace`` is called after the passes named in ``options.print_after`` (every pass when
    it holds ``"all"``); without ``print_after`` it sees every pass. When no ``trace`` is
    given and ``print_after`` is set, the IR is printed to standard output.
    ``options.verify`` verifies the IR after every pass; a failure raises the verifier's
    ``IRVerificationError`` with the pass name in a note.
    """
    wanted = options.print_after
    for p in build_pipeline(options):
        fn = p.run(fn)
        if options.verify:
            _verify_after(p.name, fn)
        if wanted and "all" not in wanted and p.name not in wanted:
            continue
        if trace is not None:
            trace(p.name, fn)
        elif wanted:
            print(f"// IR after {p.name}\n{print_function(fn)}")
    return fn


def _verify_after(pass_name: str, fn: Function) -> None:
    from offload.ir.verifier import IRVerificationError, verify

    try:
        verify(fn)
    except IRVerificationError as err:
        err.add_note(f"after pass {pass_name!r}:\n{print_function(fn)}")
        raise
