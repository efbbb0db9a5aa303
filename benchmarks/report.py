"""Derived figures (speedups, roofline fractions), the Markdown table and the PNG plots."""

from __future__ import annotations

import math
import platform
import re
from pathlib import Path
from typing import Any


def cpu_name() -> str:
    """The CPU model and core count."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                import os

                return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_slug(env: dict[str, Any]) -> str:
    """``nvidia-h100-80gb-hbm3`` or ``cpu-<model>-x2``: the results sub-directory."""
    name = env.get("gpu") or f"cpu {env.get('cpu', 'unknown')}"
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60]


def _ok(c: dict[str, Any]) -> bool:
    return c.get("status") == "ok" and "per_iter_s" in c


def derive(rec: dict[str, Any]) -> None:
    """Add speedup over compute_s, roofline fraction (GPU) and compute_g / best GPU peer."""
    configs = rec["configs"]
    base = next((c for c in configs if c["config"] == "compute_s" and _ok(c)), None)
    floor = rec["floor_per_iter_s"]
    for c in configs:
        if not _ok(c):
            continue
        if base is not None:
            c["speedup_vs_s"] = base["per_iter_s"] / c["per_iter_s"]
        if c["on_gpu"] and floor > 0:
            c["roofline_fraction"] = floor / c["per_iter_s"]
    g = next((c for c in configs if c["config"] == "compute_g" and _ok(c)), None)
    peers = [c for c in configs if c["kind"] == "peer" and c["on_gpu"] and _ok(c)]
    if peers:
        best = min(peers, key=lambda c: c["per_iter_s"])
        rec["best_gpu_peer"] = best["config"]
        for c in configs:  # each compute_g configuration's ratio (unified, device, fastmath)
            if c["kind"] != "peer" and c["on_gpu"] and _ok(c):
                c["over_best_peer"] = c["per_iter_s"] / best["per_iter_s"]
        if g is not None:
            rec["g_over_best_peer"] = g["per_iter_s"] / best["per_iter_s"]


def _fmt_t(s: float | None) -> str:
    if s is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def one_line(c: dict[str, Any]) -> str:
    """A progress line for one configuration."""
    if not _ok(c):
        return f"{c['config']}: {c['status']} {c.get('detail', '')}"
    return f"{c['config']}: {_fmt_t(c['per_iter_s'])}/iter ({c.get('detail', '')})"


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _compile(c: dict[str, Any]) -> str:
    """Cold compile time, and the fresh process's (a disk-cache hit) where measured."""
    cold = _fmt_t(c.get("compile_s"))
    if "fresh_compile_s" in c:
        return f"{cold} / {_fmt_t(c['fresh_compile_s'])}"
    return cold


def markdown(results: dict[str, Any]) -> str:
    """One row per configuration; then the geometric mean of speedups per configuration."""
    env = results["env"]
    lines = [
        f"# offload benchmark results ({results['size']} size)",
        "",
        f"Device: {env.get('gpu') or 'no GPU'}; CPU: {env.get('cpu')}; "
        f"numpy {env.get('numpy')}, numba {env.get('numba')}, cupy {env.get('cupy')}, "
        f"jax {env.get('jax')}. Command: `python -m offload {' '.join(results['argv'])}`",
        "",
        "| benchmark | config | status | time/iter (median) | spread (IQR)/iter | "
        "speedup vs compute_s | roofline | compile (cold / fresh process) | end-to-end | "
        "detail |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    speedups: dict[str, list[float]] = {}
    for r in results["benchmarks"]:
        for c in r["configs"]:
            if _ok(c):
                t, it = c["time"], r["iters"]
                spread = f"{_fmt_t(t['q1'] / it)} - {_fmt_t(t['q3'] / it)}"
                sp = c.get("speedup_vs_s")
                if sp:
                    speedups.setdefault(c["config"], []).append(sp)
                row = [_fmt_t(c["per_iter_s"]), spread, f"{sp:.3g}x" if sp else "—",
                       f"{c['roofline_fraction']:.1%}" if "roofline_fraction" in c else "—",
                       _compile(c), _fmt_t(c.get("e2e_s"))]  # fmt: skip
            else:
                row = ["—"] * 6
            detail = str(c.get("detail", "")).replace("|", "/")[:90]
            lines.append(
                f"| {r['name']} | {c['config']} | {c['status']} | {' | '.join(row)} | {detail} |"
            )
        floor = _fmt_t(r["floor_per_iter_s"])
        for c in r["configs"]:
            if "over_best_peer" in c:
                label = f"{c['config']} / best GPU peer ({r['best_gpu_peer']})"
                ratio = f"{c['over_best_peer']:.3g}x"
                tail = f"| | | | | | floor {floor}/iter |"
                lines.append(f"| {r['name']} | {label} | | {ratio} {tail}")
    lines += ["", "| config | geomean speedup vs compute_s | benchmarks |", "|---|---|---|"]
    for name, xs in speedups.items():
        gm = _geomean(xs)
        lines.append(f"| {name} | {gm:.3g}x | {len(xs)} |" if gm else f"| {name} | — | 0 |")
    lines += [
        "",
        "Times are per iteration of the timed region (data resident on the device for GPU "
        "configurations; CUDA events). FAILED: validation failed, no time reported.",
    ]
    return "\n".join(lines) + "\n"


def _value(rec: dict[str, Any], config: str, key: str) -> float:
    return float(next((c.get(key, 0) for c in rec["configs"] if c["config"] == config), 0))


def plots(results: dict[str, Any], outdir: Path, stem: str) -> list[str]:
    """Speedup over compute_s (log scale, geomean group) and roofline fraction charts."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["note: matplotlib is not installed; plots skipped (pip install matplotlib)"]
    recs = results["benchmarks"]
    configs = sorted({c["config"] for r in recs for c in r["configs"] if "speedup_vs_s" in c})
    notes = []
    if configs:
        names = [r["name"] for r in recs] + ["geomean"]
        fig, ax = plt.subplots(figsize=(max(8, len(names) * 0.9), 4.5))
        width = 0.8 / len(configs)
        for k, cfg in enumerate(configs):
            vals = [_value(r, cfg, "speedup_vs_s") for r in recs]
            vals.append(_geomean([v for v in vals if v]) or 0)
            ax.bar([i + k * width for i in range(len(names))], vals, width, label=cfg)
        ax.set_yscale("log")
        ax.set_xticks(
            [i + 0.4 - width / 2 for i in range(len(names))], names, rotation=30, ha="right"
        )
        ax.set_ylabel("speedup over compute_s")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.legend(fontsize=7, ncol=3)
        fig.tight_layout()
        fig.savefig(outdir / f"{stem}-speedup.png", dpi=120)
        plt.close(fig)
        notes.append(f"plot: {outdir / stem}-speedup.png")
    gpu = sorted({c["config"] for r in recs for c in r["configs"] if "roofline_fraction" in c})
    if gpu:
        fig, ax = plt.subplots(figsize=(max(8, len(recs) * 0.9), 4.5))
        width = 0.8 / len(gpu)
        for k, cfg in enumerate(gpu):
            vals = [_value(r, cfg, "roofline_fraction") for r in recs]
            ax.bar([i + k * width for i in range(len(recs))], vals, width, label=cfg)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(recs))], [r["name"] for r in recs],
                      rotation=30, ha="right")  # fmt: skip
        ax.set_ylabel("fraction of roofline floor (H100)")
        ax.axhline(0.8, color="grey", linestyle="--", linewidth=0.8)
        ax.legend(fontsize=7, ncol=3)
        fig.tight_layout()
        fig.savefig(outdir / f"{stem}-roofline.png", dpi=120)
        plt.close(fig)
        notes.append(f"plot: {outdir / stem}-roofline.png")
    return notes
