"""``ol.explain``: the IR before and after each pass, and the generated kernel."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from offload import driver
from offload.acc.base import Context
from offload.acc.graph import needs_scheduler, schedule
from offload.config import config
from offload.delayed import Delayed
from offload.explain_summary import render
from offload.frontend.lower import fetch_captures
from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.lowering import check_and_lower
from offload.targets import TARGETS, inner_backend, split_target


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

    A delayed array holding collectives (``fold``, ``stencil``, ...) is computed on
    ``target`` stage by stage, as ``compute_*`` would: the text lists every kernel the
    graph ran (``== kernel k/N``: what it computes, its shape), each explained as above.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(sorted(TARGETS))}, got {target!r}")
    if shape is None and isinstance(fn, Delayed) and needs_scheduler(fn):
        text = explain_graph(fn, target, all_passes=all_passes)
    else:
        text = _explain_kernel(fn, shape, target, all_passes)
    print(text, file=file or sys.stdout)
    return text


def _explain_kernel(fn: Any, shape: Any, target: str, all_passes: bool = False) -> str:
    """``explain``'s text for one kernel."""
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
    return render(parts, getattr(tgt, "__qualname__", type(tgt).__name__), shp, target, all_passes)


def explain_graph(
    root: Delayed, target: str, run_on: str | None = None, *, all_passes: bool = False
) -> str:
    """The kernels of a delayed array holding collectives, computed on ``target`` (or on
    ``run_on``: in ``cross_target`` mode every target runs the same stages, so the
    GPU's kernels can be shown from a run on the CPU where no GPU is present)."""
    options = config.compile_options()
    backend = TARGETS[run_on or target].resolve(options)
    trace: list[tuple[str, Any]] = []
    ctx = Context(
        backend, options, config.determinism, trace, driver.run, inner=inner_backend(backend)
    )
    tree = schedule(ctx, root)
    if isinstance(tree, Delayed):
        trace.append(("result", tree))
    parts = [
        f"== collective graph: {len(trace)} kernel(s) on {backend.name} "
        f"(determinism {config.determinism})"
    ]
    for k, (what, node) in enumerate(trace, 1):
        if node is None:
            parts.append(f"== kernel {k}/{len(trace)}: {what} (a skeleton)")
            continue
        parts.append(f"== kernel {k}/{len(trace)}: {what}, shape {tuple(node.shape)}")
        parts.append(_explain_kernel(node, None, target, all_passes))
    return "\n".join(parts)
