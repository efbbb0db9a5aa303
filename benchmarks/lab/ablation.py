"""Optimiser ablation: each pass of the default pipeline switched off in turn, all in one run.

    python -m benchmarks.lab.ablation [--size quick|paper] [--repeat N] [--out DIR]

For blackscholes, treesearch, 2d-convolution through a linear index (suite/conv2d_linear.py,
the paper's §4.3 shape) and backprojection, and for every variant -- the default pipeline,
the default without one pass (``ol.config.disabled_passes = {name}``), and no passes at
all (``ol.config.pipeline = ""``):

* PTX instruction counts of the kernel (no GPU needed: NVVM compiles for sm_90 here, or the
  device's compute capability), registers from ``ptxas -v``;
* on a GPU, ``compute_g`` time per iteration (CUDA events, inputs resident via ``ol.use``),
  each variant validated against the benchmark's reference first. Without a GPU the timing
  columns read n/a.

Outputs ``ablation-<size>.json`` and ``.md`` under ``--out`` (default
benchmarks/results/ablation/) and prints a short table last.

Counting notes: a kernel whose body is straight-line code has its grid-stride loop unrolled
by NVVM (about 4 copies of the body, plus an unsigned 64-bit division for the trip count),
so total instructions are not comparable between a branchy and a merged body; the
``fbra`` column (conditional branches on a float comparison: data-dependent divergence)
and the signed division count ``sdiv`` (the element function's ``//`` and ``%``) are.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Check, hosts
from benchmarks.timing import summarise, time_gpu, time_once

BENCHMARKS = ("blackscholes", "treesearch", "2d-convolution-linear", "backprojection")

_PRED_DEF = re.compile(r"^(setp|and|or|xor|not|mov)\.(\S+)\s+(%p\d+)(?:\|(%p\d+))?,\s*(.*);$")
_BRANCH = re.compile(r"^@(!?)(%p\d+)\s+bra")
_INT_DIVREM = re.compile(r"^(div|rem)\.(s|u)(16|32|64)\b")


def ptx_instructions(ptx: str) -> list[str]:
    """The instruction lines of every ``.entry``/``.func`` body (declarations, labels,
    comments and call-argument lines left out; a call counts once)."""
    out: list[str] = []
    depth = 0
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        depth += line.count("{") - line.count("}")
        if depth <= 0 or not line or line[0] in ".{}()$" or line.endswith(":"):
            continue
        if line.endswith(";") or line.startswith("call"):
            out.append(line)
    return out


def _float_predicates(instrs: Sequence[str]) -> set[str]:
    """Predicate registers computed (directly or through and/or/not) from float compares."""
    defs: list[tuple[str, str, list[str]]] = []
    for ins in instrs:
        m = _PRED_DEF.match(ins)
        if m is None or (m.group(1) != "setp" and not m.group(2).startswith("pred")):
            continue
        srcs = re.findall(r"%p\d+", m.group(5))
        for reg in filter(None, (m.group(3), m.group(4))):
            defs.append((reg, m.group(2), srcs))
    floats: set[str] = set()
    changed = True
    while changed:  # a predicate may be combined from others defined later (loops)
        changed = False
        for reg, kind, srcs in defs:
            is_float = bool(re.search(r"\.?f(16|32|64)$", kind)) or any(s in floats for s in srcs)
            if is_float and reg not in floats:
                floats.add(reg)
                changed = True
    return floats


def ptx_counts(ptx: str) -> dict[str, int]:
    """Instruction counts of a PTX module (see the module docstring for the columns)."""
    instrs = ptx_instructions(ptx)
    floats = _float_predicates(instrs)
    branches = [i for i in instrs if re.match(r"^(@!?%p\d+\s+)?bra(\.uni)?\b", i)]
    guarded = [m for m in map(_BRANCH.match, branches) if m is not None]
    divrem = [m for m in map(_INT_DIVREM.match, instrs) if m is not None]
    return {
        "instructions": len(instrs),
        "branches": len(branches),
        "cond_branches": len(guarded),
        "float_branches": sum(1 for m in guarded if m.group(2) in floats),
        "selp": sum(1 for i in instrs if i.startswith("selp.")),
        "divrem": len(divrem),
        "divrem_s64": sum(1 for m in divrem if m.group(2) == "s" and m.group(3) == "64"),
        "ld_global": sum(1 for i in instrs if i.startswith("ld.global")),
        "calls": sum(1 for i in instrs if i.startswith("call")),
        "nv_div_calls": sum(1 for i in instrs if i.startswith("call") and "__nv_" in i),
    }


@dataclass(frozen=True)
class Variant:
    """One optimiser configuration."""

    label: str
    pipeline: str | None
    disabled: frozenset[str] = field(default_factory=frozenset[str])


def variants() -> list[Variant]:
    """default, each pass of the default pipeline and each GPU kernel pass off in turn,
    and no passes of the default pipeline at all."""
    from offload.opt.manager import parse_pipeline
    from offload.opt.registry import COMMON, DEFAULT_PIPELINE
    from offload.ptx.passes import GPU

    common = [s.name for s in parse_pipeline(DEFAULT_PIPELINE) if hasattr(s, "name")]
    passes = dict.fromkeys([*common, *(name for name in GPU if name not in COMMON)])
    return [
        Variant("default", None),
        *(Variant(f"-{p}", None, frozenset({p})) for p in passes),
        Variant("none", ""),
    ]


def all_benchmarks() -> dict[str, Benchmark]:
    """The suite plus the linear-index 2d-convolution (registered here only)."""
    from benchmarks.suite import ALL
    from benchmarks.suite.conv2d_linear import BENCHMARK as CONV2D_LINEAR

    return {**ALL, CONV2D_LINEAR.name: CONV2D_LINEAR}


class _Captured(Exception):
    pass


def element_call(bench: Benchmark, inputs: dict[str, Any]) -> tuple[Any, ...]:
    """``(shape, fn, dtype)`` of the benchmark's first ``compute`` call (not run)."""

    def grab(
        shape: tuple[int, ...], fn: Callable[..., Any], *, dtype: Any = None, out: Any = None
    ) -> Any:
        raise _Captured(shape, fn, dtype)

    try:
        bench.bind(inputs).run(grab)
    except _Captured as c:
        return tuple(c.args)
    raise RuntimeError(f"{bench.name} made no compute call")


def kernel_ptx(call: tuple[Any, ...], variant: Variant, cc: tuple[int, int]) -> tuple[str, str]:
    """(optimised IR text, PTX) of the element function under ``variant``."""
    from offload.driver import specialise
    from offload.ir.printer import print_function
    from offload.lowering import check_and_lower
    from offload.options import CompileOptions
    from offload.ptx.compile import compile_ptx
    from offload.ptx.kernel_source import build_kernel_source

    shape, fn, dtype = call
    options = CompileOptions(pipeline=variant.pipeline, disabled_passes=variant.disabled)
    lowered = check_and_lower(fn, len(shape))
    want = None if dtype is None else [np.dtype(dtype)] * len(lowered.ir.result_types)
    ir = specialise(lowered, want, options)
    ks = build_kernel_source(ir, bounds_check=False)
    return print_function(ir), compile_ptx(ks, ir.name, cc, fastmath=False)


def ptx_table(
    call: tuple[Any, ...], vs: list[Variant], cc: tuple[int, int]
) -> dict[str, dict[str, Any]]:
    """Counts per variant; variants whose optimised IR is identical share one compile."""
    from offload.ptx.inspect import ptxas_resources

    seen: dict[str, dict[str, Any]] = {}
    out: dict[str, dict[str, Any]] = {}
    for v in vs:
        try:
            ir_text, ptx = kernel_ptx(call, v, cc)
        except Exception as err:  # a broken variant is reported, never fatal to the run
            out[v.label] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
            continue
        if ir_text not in seen:
            counts: dict[str, Any] = dict(ptx_counts(ptx))
            res = ptxas_resources(ptx, cc)
            counts["registers"] = res["num_regs"] if res else None
            counts["ir_ops"] = sum(1 for ln in ir_text.splitlines() if " = " in ln)
            seen[ir_text] = counts
        out[v.label] = dict(seen[ir_text])
    return out


def _gpu() -> tuple[str | None, tuple[int, int]]:
    """(why there is no usable GPU or None, compute capability to compile for)."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        cc = cupy.cuda.Device().compute_capability
        return None, (int(cc[:-1]), int(cc[-1]))
    except Exception as err:
        return f"no GPU: {type(err).__name__}: {str(err)[:120]}", (9, 0)


def time_variants(
    bench: Benchmark, inputs: dict[str, Any], vs: list[Variant], repeat: int
) -> dict[str, dict[str, Any]]:
    """compute_g per iteration for each variant, validated first (GPU only).

    Timed in interleaved rounds (every variant once per round), so that clock ramp-up or
    memory-placement drift falls on all variants alike rather than on the first measured."""
    import offload as ol
    from benchmarks.targets import TARGETS

    resident = TARGETS["g"].resident(inputs)  # once: every variant reads the same copies
    ref = bench.reference(inputs)
    iters = bench.iters(inputs["params"])
    saved = (ol.config.pipeline, ol.config.disabled_passes)
    out: dict[str, dict[str, Any]] = {}
    runs: dict[str, tuple[Variant, Callable[[], Any]]] = {}
    try:
        for v in vs:
            _configure(ol.config, v)
            out[v.label], run = _prepare(bench, ol.compute_g, resident, inputs, ref)
            if run is not None:
                runs[v.label] = (v, run)
        samples: dict[str, list[float]] = {label: [] for label in runs}
        for _ in range(repeat):
            for label, (v, run) in runs.items():
                _configure(ol.config, v)  # the compiled kernel is found again, not rebuilt
                samples[label] += time_gpu(run, 1)
        for label, s in samples.items():
            stats = summarise(s)
            out[label].update(time=stats.as_dict(), per_iter_s=stats.median / iters)
    finally:
        ol.config.pipeline, ol.config.disabled_passes = saved
    return out


def _configure(config: Any, v: Variant) -> None:
    config.pipeline = v.pipeline
    config.disabled_passes = v.disabled


def _prepare(
    bench: Benchmark, compute: Any, resident: dict[str, Any], inputs: dict[str, Any], ref: Any
) -> tuple[dict[str, Any], Callable[[], Any] | None]:
    """Compile, validate and warm one variant: (record, the timed region or None)."""
    try:
        bound = bench.bind(resident)
        first, outs = time_once(lambda: bound.run(compute), True)
        check = bench.validate(hosts(outs), ref, inputs)
        if check.ok and bound.extra is not None:
            extra = bound.extra(compute)
            check = Check(extra.ok, f"{check.detail}; {extra.detail}")
        if not check.ok:
            return {"status": "FAILED", "detail": check.detail}, None
        time_once(lambda: bound.run(compute), True)  # warm: the extra check rebinds inputs
        rec = {"status": "ok", "detail": check.detail, "first_call_s": first}
        return rec, lambda: bound.run(compute)
    except Exception as err:  # a broken variant is reported, never fatal to the run
        return {"status": "error", "detail": f"{type(err).__name__}: {str(err)[:300]}"}, None


COLUMNS = (
    ("instr", "instructions"), ("bra", "branches"), ("cbra", "cond_branches"),
    ("fbra", "float_branches"), ("selp", "selp"), ("div/rem", "divrem"),
    ("sdiv", "divrem_s64"), ("ld.g", "ld_global"), ("regs", "registers"), ("ir ops", "ir_ops"),
)  # fmt: skip


def _time_cell(rec: dict[str, Any] | None, base: dict[str, Any] | None) -> tuple[str, str]:
    if not rec or rec.get("status") != "ok":
        return ("n/a" if not rec else rec.get("status", "n/a")), ""
    ms = rec["per_iter_s"] * 1e3
    ratio = ""
    if base and base.get("status") == "ok":
        ratio = f"{rec['per_iter_s'] / base['per_iter_s']:.2f}x"
    return f"{ms:.4f}", ratio


def markdown(results: dict[str, Any]) -> str:
    """One table per benchmark: a row per variant, PTX counts and time per iteration."""
    lines = [
        f"# Optimiser ablation ({results['size']}, {results['env'].get('gpu') or 'no GPU'})",
        "",
    ]
    heads = ["variant", "ms/iter", "vs default", *(c for c, _ in COLUMNS)]
    for b in results["benchmarks"]:
        lines += [f"## {b['name']}", "", "| " + " | ".join(heads) + " |",
                  "|" + "---|" * len(heads)]  # fmt: skip
        timing = b.get("timing", {})
        for label, counts in b["ptx"].items():
            ms, ratio = _time_cell(timing.get(label), timing.get("default"))
            cells = [str(counts.get(k, "err")) for _, k in COLUMNS]
            lines.append("| " + " | ".join([label, ms, ratio, *cells]) + " |")
        if b.get("timing_note"):
            lines.append(f"\ntiming: {b['timing_note']}")
        lines.append("")
    return "\n".join(lines)


def short_table(results: dict[str, Any]) -> str:
    """Variants x benchmarks: ``ms/iter (instructions, float branches, div/rem)``."""
    names = [b["name"] for b in results["benchmarks"]]
    rows = [f"{'variant':<14}" + "".join(f"{n[:26]:>30}" for n in names)]
    for label in results["variants"]:
        cells = []
        for b in results["benchmarks"]:
            c = b["ptx"].get(label, {})
            ms, _ = _time_cell(b.get("timing", {}).get(label), None)
            cells.append(
                f"{ms} ({c.get('instructions', '?')}i {c.get('float_branches', '?')}fb "
                f"{c.get('divrem', '?')}d)"
            )
        rows.append(f"{label:<14}" + "".join(f"{cell:>30}" for cell in cells))
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.lab.ablation", description=__doc__.split("\n")[0]
    )
    p.add_argument("--size", choices=("tiny", "quick", "paper"), default="quick")
    p.add_argument("--repeat", type=int, default=5, help="timed repetitions per variant")
    p.add_argument("--out", default="benchmarks/results/ablation", help="output directory")
    p.add_argument("names", nargs="*", default=list(BENCHMARKS), help="benchmarks to run")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns 1 if any timed variant FAILED validation or errored."""
    args = parse_args(argv)
    started = time.perf_counter()
    benches = all_benchmarks()
    unknown = [n for n in args.names if n not in benches]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; known: {', '.join(benches)}", file=sys.stderr)
        return 2
    no_gpu, cc = _gpu()
    vs = variants()
    env = {"python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
           "gpu": None if no_gpu else _gpu_name(), "cc": f"sm_{cc[0]}{cc[1]}"}  # fmt: skip
    records = []
    for name in args.names:
        bench = benches[name]
        inputs = bench.make_inputs(bench.sizes[args.size])
        print(f"[ablation] {name}: PTX for {len(vs)} variants", file=sys.stderr, flush=True)
        rec: dict[str, Any] = {"name": name, "ptx": ptx_table(element_call(bench, inputs), vs, cc)}
        if no_gpu:
            rec["timing_note"] = f"n/a ({no_gpu})"
        else:
            print(f"[ablation] {name}: timing", file=sys.stderr, flush=True)
            rec["timing"] = time_variants(bench, inputs, vs, args.repeat)
        records.append(rec)
    results = {"env": env, "size": args.size, "repeat": args.repeat,
               "variants": [v.label for v in vs], "wall_s": time.perf_counter() - started,
               "benchmarks": records}  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"ablation-{args.size}.json").write_text(json.dumps(results, indent=1, default=str))
    (out / f"ablation-{args.size}.md").write_text(markdown(results))
    print(markdown(results))
    print(short_table(results))
    print(f"results: {out}/ablation-{args.size}.json, .md ({results['wall_s']:.1f} s)")
    bad = [(r["name"], k) for r in records for k, t in r.get("timing", {}).items()
           if t.get("status") in ("FAILED", "error")]  # fmt: skip
    return 1 if bad else 0


def _gpu_name() -> str | None:
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
