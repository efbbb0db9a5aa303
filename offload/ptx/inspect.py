"""Introspection for ``ol.explain(..., target="gpu")``: kernel source, PTX, resources,
launch configuration and occupancy.

Register and memory use come from the loaded function where a GPU is present, else from
``ptxas -v`` where the CUDA toolkit is installed (CI has it), else they are unknown.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.opt.manager import Trace
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.config import LaunchConfig, launch_config, tiled_launch_config, walked
from offload.ptx.kernel_source import build_kernel_source
from offload.ptx.plan import GPU_PLAN, INDEX_VARIANTS, IndexVariant, KernelPlan, ShapeVariant
from offload.runtime.gpu import device_info

_UNSUPPORTED = re.compile(r"Unsupported \.version \S+; current version is '([0-9.]+)'")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
H100 = {"sm_count": 132, "regs_per_sm": 65536, "max_threads_per_sm": 2048}


@dataclass
class GPUExplain:
    """What the GPU backend makes of one element function."""

    kernel_name: str
    source: str
    """The generated numba.cuda kernel (Python, with ``# offload: file:line`` comments)."""
    ptx: str
    resources: dict[str, int] = field(default_factory=dict[str, int])
    """``num_regs``, ``local_size_bytes`` (spills), ``shared_size_bytes`` when known."""
    resources_from: str = "unknown"
    """``device``, ``ptxas`` or ``unknown``."""
    launch: LaunchConfig | None = None
    shape: tuple[int, ...] = ()
    image: str = ""
    """What the driver loaded, ``cubin`` or ``ptx``; empty where nothing was loaded."""

    def render(self) -> str:
        res = ", ".join(f"{k}={v}" for k, v in self.resources.items()) or "unknown"
        lines = [
            f"== GPU kernel {self.kernel_name} ==",
            self.source.rstrip(),
            f"== resources ({self.resources_from}): {res}",
        ]
        if self.image:
            how = "no driver JIT" if self.image == "cubin" else "JIT-compiled by the driver"
            lines.append(f"== loaded from {self.image} ({how})")
        if self.launch is not None:
            lc = self.launch
            lines.append(
                f"== launch for {self.shape}: grid={lc.grid} block={lc.block} "
                f"blocks/SM={lc.blocks_per_sm} occupancy={lc.occupancy:.0%}"
            )
        lines += ["== PTX ==", self.ptx.rstrip()]
        return "\n".join(lines) + "\n"


def ptxas_resources(ptx: str, cc: tuple[int, int]) -> dict[str, int] | None:
    """Registers, spill bytes and shared memory per ``ptxas -v``; ``None`` without ptxas."""
    ptxas = shutil.which("ptxas") or (
        "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None
    )
    if ptxas is None:
        return None
    proc = _run_ptxas(ptxas, ptx, cc)
    newest = _UNSUPPORTED.search(proc.stderr)
    if proc.returncode != 0 and newest:
        # numba-cuda's NVVM may be newer than the toolkit's ptxas; the kernels use nothing
        # of newer PTX ISAs, so for a resource estimate the older version is equivalent.
        ptx = re.sub(r"^\.version \S+", f".version {newest.group(1)}", ptx, count=1, flags=re.M)
        proc = _run_ptxas(ptxas, ptx, cc)
    if proc.returncode != 0:
        return None
    text = proc.stdout + proc.stderr
    regs = re.search(r"Used (\d+) registers", text)
    spill = _SPILL.search(text)
    smem = re.search(r"(\d+) bytes smem", text)
    out = {"num_regs": int(regs.group(1)) if regs else 0}
    out["local_size_bytes"] = int(spill.group(1)) + int(spill.group(2)) if spill else 0
    out["shared_size_bytes"] = int(smem.group(1)) if smem else 0
    return out


def leading_variant(
    fn: Function, options: CompileOptions, plan: KernelPlan, trace: Trace | None = None
) -> tuple[IndexVariant, ShapeVariant, Function]:
    """The variant almost every launch runs (the first that applies at each level of
    ``plan``) and its IR; ``trace`` sees the passes of its pipeline."""
    index = next(v for v in INDEX_VARIANTS if v.applies(fn, options))
    shape, ir = plan.first_ir(fn, options, index, trace)
    return index, shape, ir


def explain_gpu(
    fn: Function,
    options: CompileOptions,
    *,
    shape: tuple[int, ...] = (),
    cc: tuple[int, int] = (9, 0),
    device: dict[str, int] | None = None,
    backend: Any | None = None,
    plan: KernelPlan = GPU_PLAN,
    trace: Trace | None = None,
) -> GPUExplain:
    """Source, PTX, resources and launch configuration of ``fn``'s (optimised IR's)
    leading variant (``leading_variant``: the 32-bit kernel, unit-stride where there are
    arrays, blocked where that applies); ``trace`` sees its pipeline's passes.

    With ``backend`` (a ``GPUBackend`` on a real GPU) the kernel is compiled and loaded the
    normal way and its resources come from the driver; otherwise PTX is compiled for ``cc``
    and resources come from ptxas, launch figures from ``device`` (default: an H100)."""
    index, variant, kfn = leading_variant(fn, options, plan, trace)
    ks = build_kernel_source(
        kfn, bounds_check=options.bounds_check, index_bits=index.bits, unit_last=index.unit_last
    )
    name = f"{ks.name} (variant {index.name}/{variant.name}: {plan.pipeline(index, variant)})"
    if backend is not None:
        kernel = backend.compile(fn, options).leading()
        cfg = kernel.config(shape) if shape else None
        resources = dict(kernel.attributes)
        return GPUExplain(
            name, ks.source, kernel.ptx, resources, "device", cfg, shape, image=kernel.image
        )
    ptx = compile_ptx(ks, fn.name, cc, fastmath=options.fastmath)
    res = ptxas_resources(ptx, cc)
    dev = device or H100
    cfg = None
    if shape and ks.tile is not None:
        cfg = tiled_launch_config(
            shape,
            ks.tile,
            blocking=ks.blocking,
            num_regs=(res or {}).get("num_regs", 32),
            sm_count=dev["sm_count"],
            shared_bytes=(res or {}).get("shared_size_bytes", 0),
            regs_per_sm=dev["regs_per_sm"],
            max_threads_per_sm=dev["max_threads_per_sm"],
        )
    elif shape:
        cfg = launch_config(
            walked(shape, ks.blocking),
            num_regs=(res or {}).get("num_regs", 32),
            max_threads_per_block=1024,
            sm_count=dev["sm_count"],
            regs_per_sm=dev["regs_per_sm"],
            max_threads_per_sm=dev["max_threads_per_sm"],
        )
    return GPUExplain(name, ks.source, ptx, res or {}, "ptxas" if res else "unknown", cfg, shape)


def _run_ptxas(ptxas: str, ptx: str, cc: tuple[int, int]) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        return subprocess.run(
            [ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", "-o", os.path.join(tmp, "k.cubin"), src],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )


def describe(
    fn: Function,
    options: CompileOptions,
    shape: tuple[int, ...] = (),
    *,
    backend: Any | None = None,
    plan: KernelPlan = GPU_PLAN,
) -> str:
    """The GPU section of ``ol.explain``: the leading variant's pipeline, pass by pass,
    then its kernel. With ``backend`` (a GPU's) the kernel is compiled and loaded as
    compute_g would (resources from the driver); without, PTX for the GPU's compute
    capability where one is present, else sm_90, with ptxas's resource figures and an
    H100's launch configuration."""
    parts: list[str] = []

    def trace(step: str, ir: Function) -> None:
        parts.extend(
            [f"== IR after {step} (GPU kernel pipeline)", print_function(ir, with_locs=True)]
        )

    cc = (9, 0)
    if backend is not None:
        cc = device_info().cc
    found = explain_gpu(
        fn, options, shape=tuple(shape), cc=cc, backend=backend, plan=plan, trace=trace
    )
    return "\n".join([*parts, found.render()])
