"""``ol.explain``: the IR before and after each pass, and the generated kernel."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from offload import driver
from offload.backend import pinned_captures
from offload.config import config
from offload.frontend.lower import fetch_captures
from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.opt.manager import run_pipeline


def explain(fn: Any, shape: Any = None, target: str = "cpu", *, file: TextIO | None = None) -> str:
    """Print (to ``file``, default stdout) and return how ``fn`` compiles for ``target``.

    Shows the IR after lowering, after every pass of the pipeline, the generated kernel
    source and, for ``target="gpu"``, the PTX, registers, shared memory, occupancy and
    launch configuration (where a GPU is present; the PTX also without one).
    """
    from offload.api import _split_target

    if target not in ("cpu", "gpu"):
        raise ValueError(f"target must be 'cpu' or 'gpu', got {target!r}")
    shp, tgt = _split_target(shape, fn) if shape is not None else _split_target(fn, None)
    options = config.compile_options()
    lowered = driver.check_and_lower(tgt, len(shp))
    lowered_ir = lowered.ir
    if target == "gpu":  # the kernel compute_g would run: on small frozen arrays' contents
        from offload.api import _GPU

        values = fetch_captures(tgt, lowered)
        pinned = pinned_captures(_GPU.resolve(options), values)
        consts = {k: p.value for k, p in pinned.items()}
        lowered_ir = driver.with_constants(lowered_ir, consts)
    parts: list[str] = ["== IR after lowering", print_function(lowered_ir, with_locs=True)]

    def trace(name: str, ir: Function) -> None:
        parts.extend([f"== IR after {name}", print_function(ir, with_locs=True)])

    ir = run_pipeline(lowered_ir, options, trace)
    if target == "cpu":
        from offload.cpu.backend import CPU_PAR

        parts.extend(["== CPU kernel source", CPU_PAR.source(ir, options)])
    else:
        from offload.ptx.inspect import describe

        parts.append(describe(ir, options, shp))
    text = "\n".join(parts)
    print(text, file=file or sys.stdout)
    return text
