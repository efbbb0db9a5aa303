"""Summarise one H100 run directory (benchmark JSON files) as a Markdown table.

python tools/summarize_run.py benchmarks/results/<device>/<run>
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def _fmt(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def main(run: Path) -> str:
    gpu: dict[str, dict] = {}
    cpu: dict[str, dict[str, float]] = {}
    for path in sorted(run.glob("results-*.json")):
        data = json.loads(path.read_text())
        for bench in data["benchmarks"]:
            for cfg in bench["configs"]:
                if cfg.get("status") != "ok":
                    continue
                if cfg["config"] in ("compute_s", "compute_p"):
                    cpu.setdefault(bench["name"], {})[cfg["config"]] = cfg["per_iter_s"]
            if any(c["config"] == "compute_g" for c in bench["configs"]):
                gpu[bench["name"]] = bench
    lines = [
        "| benchmark | compute_g /iter | compute_g[device] /iter | % of floor (device) "
        "| best GPU peer | peer /iter | device ÷ peer | fastmath /iter | fastmath ÷ peer "
        "| compute_p (16 cores) /iter | compute_p ÷ compute_g |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def ratio(c: dict) -> str:
        r = c.get("over_best_peer")
        return f"{r:.2f}x" if r else "—"

    for name, bench in gpu.items():
        cfgs = {c["config"]: c for c in bench["configs"]}
        g = cfgs["compute_g"]
        gd = cfgs.get("compute_g[device]", {})
        gf = cfgs.get("compute_g[device,fastmath]", {})
        peer = bench.get("best_gpu_peer")
        p = cfgs.get(peer, {}) if peer else {}
        cp = cpu.get(name, {}).get("compute_p")
        cpu_vs_gpu = f"{cp / g['per_iter_s']:.0f}x" if cp and "per_iter_s" in g else "—"
        lines.append(
            f"| {name} | {_fmt(g.get('per_iter_s'))} | {_fmt(gd.get('per_iter_s'))} | "
            f"{100 * (gd.get('roofline_fraction') or 0):.1f}% | {peer or '—'} | "
            f"{_fmt(p.get('per_iter_s'))} | {ratio(gd)} | {_fmt(gf.get('per_iter_s'))} | "
            f"{ratio(gf)} | {_fmt(cp)} | {cpu_vs_gpu} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
