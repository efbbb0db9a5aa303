"""The size sweep (``python -m offload bench --sweep N``): every benchmark from its quick size
(10^4-10^6 elements) to its paper size, with ``compute_g`` in both memory modes, the GPU
peers and ``compute_p`` at each size.

Sizes: each integer parameter of the benchmark's ``Params`` runs geometrically from its
quick value to its paper value in ``count`` steps (rounded; repeated sizes dropped), except
the iteration count, which stays at the quick size's (per-iteration times are compared, and
a paper-size iteration count at every size would take hours). The report is, per benchmark
and size, the ratio of each ``compute_g`` configuration to the best GPU peer and to
``compute_p`` -- the two figures issue 20 sets targets for (≤ 1.5x the best peer where the
peer's kernel takes ≥ 20 µs; never slower than ``compute_p``) -- and, where matplotlib is
installed, a plot of the ratio to the best peer against the size.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

ITERS = "iters"


def sweep_params(sizes: dict[str, Any], count: int) -> list[Any]:
    """``count`` parameter sets from ``sizes["quick"]`` to ``sizes["paper"]`` (see the module
    docstring), smallest first, without repeats."""
    lo, hi = sizes["quick"], sizes["paper"]
    out: list[Any] = []
    for k in range(count):
        t = k / (count - 1) if count > 1 else 1.0
        changes: dict[str, int] = {}
        for f in dataclasses.fields(lo):
            a, b = getattr(lo, f.name), getattr(hi, f.name)
            if f.name == ITERS or type(a) is not int or type(b) is not int or a == b:
                continue
            if a > 0 and b > 0:
                changes[f.name] = round(math.exp(math.log(a) + t * (math.log(b) - math.log(a))))
            else:
                changes[f.name] = round(a + t * (b - a))
        p = dataclasses.replace(lo, **changes)
        if p not in out:
            out.append(p)
    return out


def label(params: Any) -> str:
    """``n=100000 taps=256``: the integer parameters of one size (not its iterations)."""
    return " ".join(
        f"{f.name}={getattr(params, f.name)}"
        for f in dataclasses.fields(params)
        if f.name != ITERS and type(getattr(params, f.name)) is int
    )


def ratios(rec: dict[str, Any]) -> dict[str, float]:
    """Each ``compute_g`` configuration's time over the best GPU peer's (``/peer``) and over
    ``compute_p``'s (``/p``), for one benchmark record at one size."""
    configs = [c for c in rec["configs"] if c.get("status") == "ok" and "per_iter_s" in c]
    peers = [c for c in configs if c.get("kind") == "peer" and c.get("on_gpu")]
    par = next((c for c in configs if c["config"] == "compute_p"), None)
    best = min(peers, key=lambda c: c["per_iter_s"]) if peers else None
    out: dict[str, float] = {}
    for c in configs:
        if not c["config"].startswith("compute_g"):
            continue
        if best is not None:
            out[f"{c['config']}/peer"] = c["per_iter_s"] / best["per_iter_s"]
        if par is not None:
            out[f"{c['config']}/p"] = c["per_iter_s"] / par["per_iter_s"]
    if best is not None:
        out["best peer us"] = best["per_iter_s"] * 1e6
    return out


def markdown(sweep: list[dict[str, Any]]) -> str:
    """One table row per benchmark and size: the ratios of ``ratios``."""
    keys: list[str] = []
    for r in sweep:
        for k in ratios(r):
            if k not in keys:
                keys.append(k)
    lines = [
        "| benchmark | size | " + " | ".join(keys) + " |",
        "|---|---|" + "---|" * len(keys),
    ]
    for r in sweep:
        got = ratios(r)
        cells = [f"{got[k]:.3g}" if k in got else "—" for k in keys]
        lines.append(f"| {r['name']} | {r['size_label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(sweep: list[dict[str, Any]], path: Path) -> str | None:
    """Ratio to the best GPU peer against elements per iteration, one line per benchmark
    and configuration; ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(9, 6))
    names = sorted({r["name"] for r in sweep})
    for name in names:
        rows = [r for r in sweep if r["name"] == name]
        for cfg in ("compute_g", "compute_g[device]"):
            xs, ys = [], []
            for r in rows:
                got = ratios(r).get(f"{cfg}/peer")
                if got is not None:
                    xs.append(max(r.get("bytes_per_iter") or 1.0, 1.0))
                    ys.append(got)
            if xs:
                ax.plot(xs, ys, marker="o", ls="-" if cfg == "compute_g" else "--",
                        label=f"{name} {cfg}")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(1.5, color="grey", lw=0.8)
    ax.set_xlabel("bytes per iteration (the benchmark's floor traffic)")
    ax.set_ylabel("time / best GPU peer")
    if ax.lines:
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"plot: {path}"
