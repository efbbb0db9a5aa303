"""``ol.explain``: the IR before and after each pass, and the generated kernel."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from offload import driver
from offload.config import config
from offload.explain_summary import render
from offload.frontend.lower import fetch_captures
from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.lowering import check_and_lower
from offload.targets import TARGETS, split_target


def explain(
    fn: Any,
    shape: Any = None,
    target: str = "cpu",
    *,
    file: TextIO | None = None,
    all_passes: bool = False,
) -> str:
    """Print (to ``file``, default stdout) and return how ``fn`` compiles for ``target``.

    Shows the IR after lowering, after every pass of the target's pipeline (the common
    optimiser's, then for ``target="gpu"`` the passes of the kernel variant almost every
    launch runs), the generated kernel source and, for the GPU, the PTX, registers, shared
    memory, occupancy and launch configuration (where a GPU is present; the PTX also
    without one). ``target`` is ``"cpu"`` (``compute_p``'s), ``"cpu-seq"`` or ``"gpu"``.
    A summary comes first (``offload.explain_summary``: kernels, launch, registers, which
    passes changed the IR); the IR after a pass that changed nothing is shown only with
    ``all_passes=True``.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(sorted(TARGETS))}, got {target!r}")
    shp, tgt = split_target(shape, fn) if shape is not None else split_target(fn, None)
    options = config.compile_options()
    backend = TARGETS[target].resolve(options)
    lowered = check_and_lower(tgt, len(shp))
    # The kernel the target would run: on the contents it specialises on (the GPU's small
    # frozen arrays).
    pinned = backend.pinned_captures(fetch_captures(tgt, lowered))
    consts = {k: p.value for k, p in pinned.items()}
    lowered_ir = driver.with_constants(lowered.ir, consts)
    parts: list[str] = ["== IR after lowering", print_function(lowered_ir, with_locs=True)]

    def trace(name: str, ir: Function) -> None:
        parts.extend([f"== IR after {name}", print_function(ir, with_locs=True)])

    ir = driver.specialise(lowered, None, options, consts, trace)
    parts.append(backend.explain(ir, options, shp))
    text = render(parts, getattr(tgt, "__qualname__", type(tgt).__name__), shp, target, all_passes)
    print(text, file=file or sys.stdout)
    return text
