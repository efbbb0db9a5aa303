"""Pass manager: a registry of passes and text pipelines (``"fold,cse,dce"``).

SKELETON written by the integrator: the optimiser work (issue 4) owns this module and
fills the registry; the contract below is what the backends rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from offload.ir.core import Function
from offload.options import CompileOptions


class Pass(Protocol):
    """One pass: a ``name`` and ``run(fn) -> fn`` (never mutates IR it was not handed)."""

    name: str

    def run(self, fn: Function) -> Function: ...


REGISTRY: dict[str, Callable[[CompileOptions], Pass]] = {}
"""Pass name -> factory taking the compile options."""

DEFAULT_PIPELINE = ""
"""The pipeline every backend runs unless ``CompileOptions.pipeline`` says otherwise."""


def run_pipeline(
    fn: Function,
    options: CompileOptions,
    trace: Callable[[str, Function], None] | None = None,
) -> Function:
    """Run the options' pipeline over ``fn``; ``trace(pass_name, fn)`` sees each result."""
    text = options.pipeline if options.pipeline is not None else DEFAULT_PIPELINE
    for name in [p.strip() for p in text.split(",") if p.strip()]:
        if name in options.disabled_passes:
            continue
        fn = REGISTRY[name](options).run(fn)
        if trace is not None:
            trace(name, fn)
    return fn
