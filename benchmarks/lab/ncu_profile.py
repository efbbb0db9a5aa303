"""Nsight Compute profiling of the suite's compute_g kernels (issue #5: why targets are missed).

    python -m benchmarks.lab.ncu_profile drive NAME [--size paper] [--target g|gd] [--peers]
    python -m benchmarks.lab.ncu_profile kernels NAME [--peers]       # the ncu --kernel-name filter
    python -m benchmarks.lab.ncu_profile metrics [--available FILE]   # the ncu --metrics list
    python -m benchmarks.lab.ncu_profile summarize NAME.csv... [--out FILE.md]

``drive`` runs one benchmark once to compile (warm) and once more between
cudaProfilerStart/Stop, so ``ncu --profile-from-start off`` sees only warm launches. The
shell side is tools/gpu-profile.sh; ``summarize`` turns ``ncu --csv --page raw`` output
(ncu's ``==PROF==`` lines mixed in) into Markdown tables.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
STALL_REASONS = (
    "long_scoreboard",
    "short_scoreboard",
    "mio_throttle",
    "lg_throttle",
    "math_pipe_throttle",
    "wait",
    "barrier",
    "no_instruction",
)

METRICS: tuple[tuple[str, str], ...] = (
    ("gpu__time_duration.sum", "duration ns"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput % of peak"),
    ("dram__bytes_read.sum", "DRAM bytes read"),
    ("dram__bytes_write.sum", "DRAM bytes written"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput % of peak"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy %"),
    ("sm__maximum_warps_per_active_cycle_pct", "theoretical occupancy %"),
    ("launch__registers_per_thread", "registers/thread"),
    ("launch__block_size", "block size"),
    ("launch__grid_size", "grid size (blocks)"),
    ("sm__inst_issued.avg.pct_of_peak_sustained_active", "issue-slot utilisation %"),
    ("smsp__inst_executed.sum", "warp instructions executed"),
    ("l1tex__t_sector_hit_rate.pct", "L1 hit rate %"),
    ("lts__t_sector_hit_rate.pct", "L2 hit rate %"),
    ("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum", "FP32 thread instructions"),
    ("smsp__sass_thread_inst_executed_op_integer_pred_on.sum", "integer thread instructions"),
    ("smsp__sass_inst_executed_op_global_ld.sum", "global load warp instructions"),
    ("smsp__sass_inst_executed_op_global_st.sum", "global store warp instructions"),
    *((f"{STALL_PREFIX}{r}{STALL_SUFFIX}", f"stall {r} (cycles/issue)") for r in STALL_REASONS),
)
"""(ncu metric name, label): the one list both tools/gpu-profile.sh (via ``metrics``) and
the parser use. 26 metrics; the launch__ ones cost no replay pass."""

METRIC_NAMES = tuple(m for m, _ in METRICS)
DURATION, READ, WRITE = "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"
_DRAM_PCT, _SM_PCT = METRIC_NAMES[1], METRIC_NAMES[4]
_OCC, _OCC_THEORY, _REGS = METRIC_NAMES[5], METRIC_NAMES[6], METRIC_NAMES[7]
_ISSUE, _L1, _L2 = METRIC_NAMES[10], METRIC_NAMES[12], METRIC_NAMES[13]

# ncu's raw page scales units unless --print-units base; normalise to ns and bytes either way.
_UNIT_SCALE = {
    "nsecond": 1.0,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
    "byte": 1.0,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "Tbyte": 1e12,
    "Kibyte": 1024.0,
    "Mibyte": 1024.0**2,
    "Gibyte": 1024.0**3,
}
# launch__ and derived metrics may be absent from `ncu --query-metrics`: never filter them.
_ALWAYS_KEEP = ("launch__", "gpu__time_duration", "sm__maximum_warps_per_active_cycle_pct")


@dataclass
class Launch:
    """One profiled kernel launch: its kernel name and metric values (None: not collected)."""

    kernel: str
    values: dict[str, float | None]


@dataclass
class KernelSummary:
    """Launches of one kernel in one report, represented by its median-duration launch."""

    bench: str
    kernel: str
    launches: int
    values: dict[str, float | None]


def _number(text: str, unit: str) -> float | None:
    cleaned = text.strip().replace(",", "")
    if cleaned in {"", "n/a", "N/A", "-"}:
        return None
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value * _UNIT_SCALE.get(unit.strip(), 1.0)


def parse_ncu_csv(text: str) -> list[Launch]:
    """Launches in ``ncu --csv --page raw`` output. Non-CSV lines (``==PROF==``, the
    program's own output) are skipped; a row with an empty ID is the units row."""
    header: list[str] | None = None
    units: dict[str, str] = {}
    launches: list[Launch] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith('"'):  # ncu quotes every CSV field; anything else is noise
            continue
        fields = next(csv.reader([stripped]))
        if "Kernel Name" in fields:
            header = fields
            continue
        if header is None or len(fields) != len(header):
            continue
        row = dict(zip(header, fields, strict=True))
        if not row.get("ID", "").strip().isdigit():
            units = {k: v for k, v in row.items() if v}
            continue
        values = {m: _number(row[m], units.get(m, "")) for m in header if m in row and "__" in m}
        launches.append(Launch(row["Kernel Name"].strip(), values))
    return launches


def summarise_launches(bench: str, launches: list[Launch]) -> list[KernelSummary]:
    """Group by kernel name (first-seen order); each kernel is represented by its launch of
    median duration (the upper median for an even count), all metrics from that one launch
    so that e.g. bytes / duration stays consistent."""
    groups: dict[str, list[Launch]] = {}
    for launch in launches:
        groups.setdefault(launch.kernel, []).append(launch)
    out = []
    for kernel, group in groups.items():
        ordered = sorted(group, key=lambda la: la.values.get(DURATION) or 0.0)
        rep = ordered[len(ordered) // 2]
        out.append(KernelSummary(bench, kernel, len(group), dict(rep.values)))
    return out


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e5:  # counts and bytes: exact, grouped
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def bandwidth_gbs(values: dict[str, float | None]) -> float | None:
    """Achieved DRAM bandwidth in GB/s: (read + write bytes) / duration (bytes/ns = GB/s)."""
    dur, rd, wr = values.get(DURATION), values.get(READ), values.get(WRITE)
    if not dur or rd is None or wr is None:
        return None
    return (rd + wr) / dur


def top_stalls(values: dict[str, float | None], n: int = 3) -> str:
    """The ``n`` largest stall reasons as ``reason 12.3`` (cycles per issued instruction)."""
    stalls = [
        (v, m[len(STALL_PREFIX) : -len(STALL_SUFFIX)])
        for m, v in values.items()
        if m.startswith(STALL_PREFIX) and m.endswith(STALL_SUFFIX) and v is not None
    ]
    stalls.sort(reverse=True)
    return ", ".join(f"{r} {v:.1f}" for v, r in stalls[:n]) or "-"


def markdown(kernels: list[KernelSummary]) -> str:
    """An overview table (one row per kernel), then per benchmark every metric per kernel."""
    head = ("| bench | kernel | n | time us | DRAM GB/s | DRAM % | SM % | occ % (theor.) | regs "
            "| issue % | L1 hit % | L2 hit % | top stalls (cycles/issue) |")  # fmt: skip
    lines = ["# ncu profile", "", head, "|" + "---|" * (head.count("|") - 1)]
    for k in kernels:
        v = k.values
        dur = v.get(DURATION)
        occ = f"{_fmt(v.get(_OCC))} ({_fmt(v.get(_OCC_THEORY))})"
        cells = [
            k.bench,
            f"`{k.kernel}`",
            str(k.launches),
            _fmt(None if dur is None else dur / 1e3),
            _fmt(bandwidth_gbs(v)),
            _fmt(v.get(_DRAM_PCT)),
            _fmt(v.get(_SM_PCT)),
            occ,
            _fmt(v.get(_REGS), 0),
            _fmt(v.get(_ISSUE)),
            _fmt(v.get(_L1)),
            _fmt(v.get(_L2)),
            top_stalls(v),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for bench in dict.fromkeys(k.bench for k in kernels):
        group = [k for k in kernels if k.bench == bench]
        lines += [
            "",
            f"## {bench}",
            "",
            "| metric | " + " | ".join(f"`{k.kernel}` (n={k.launches})" for k in group) + " |",
            "|---|" + "---|" * len(group),
        ]
        rows: list[tuple[str, list[str]]] = [
            ("achieved DRAM GB/s", [_fmt(bandwidth_gbs(k.values)) for k in group])
        ]
        rows += [
            (f"{label} `{m}`", [_fmt(k.values.get(m), 2) for k in group]) for m, label in METRICS
        ]
        lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join(lines) + "\n"


def summarize_files(paths: list[Path]) -> str:
    """Markdown for ncu CSV reports; a report's file stem names its benchmark."""
    kernels: list[KernelSummary] = []
    for path in paths:
        text = path.read_text(errors="replace")
        kernels += summarise_launches(path.stem, parse_ncu_csv(text))
    if not kernels:
        return "# ncu profile\n\nno kernel launches found in " + ", ".join(map(str, paths)) + "\n"
    return markdown(kernels)


def available_metrics(query_output: str) -> list[str]:
    """METRIC_NAMES whose base name ``ncu --query-metrics`` lists (so one misspelt or
    missing metric cannot fail a whole profile). Unusable query output keeps every name."""
    bases = {
        m.group(0) for line in query_output.splitlines() if (m := re.match(r"[a-z0-9]+__\w+", line))
    }
    if len(bases) < 50:
        return list(METRIC_NAMES)
    return [m for m in METRIC_NAMES if m.startswith(_ALWAYS_KEEP) or m.split(".")[0] in bases]


def peer_kernel_names(name: str) -> list[str]:
    """``__global__`` entry names in the hand-written CUDA peer of benchmark ``name``."""
    from benchmarks.peers.cuda_src import SOURCES

    return re.findall(r"__global__\s+void\s+(\w+)", SOURCES.get(name, ""))


def kernel_filter(name: str, peers: bool) -> str:
    """The ncu ``--kernel-name`` value: offload's kernels, plus the CUDA peer's if asked.
    Anchored both ends so full-match and search semantics select the same kernels."""
    alts = ["offload_.*", *(peer_kernel_names(name) if peers else [])]
    return "regex:^(" + "|".join(alts) + ")$"


def _profiler(on: bool) -> None:
    """cudaProfilerStart/Stop: CuPy's runtime binding, else numba's."""
    try:
        import cupy

        cupy.cuda.runtime.deviceSynchronize()
        (cupy.cuda.runtime.profilerStart if on else cupy.cuda.runtime.profilerStop)()
    except ImportError:
        from numba import cuda

        cuda.synchronize()  # type: ignore[no-untyped-call]
        (cuda.profile_start if on else cuda.profile_stop)()


def _log(msg: str) -> None:
    # stderr: ncu's CSV goes to stdout and this must not be mistaken for it
    print(f"[profile] {msg}", file=sys.stderr, flush=True)


def drive(name: str, size: str, target_key: str, peers: bool) -> None:
    """Run benchmark ``name`` once to warm (compile), then once inside the profiler range.
    The iteration count is 1, so each launch still has the full ``size`` problem."""
    from benchmarks.suite import ALL
    from benchmarks.targets import TARGETS

    bench = ALL[name]
    params = bench.sizes[size]
    if hasattr(params, "iters"):
        params = dataclasses.replace(params, iters=1)
    _log(f"{name} [{size}] inputs: {params}")
    inputs = bench.make_inputs(params)
    target = TARGETS[target_key]
    why = target.available()
    if why is not None:
        raise SystemExit(f"profile: {target.label} unavailable: {why}")
    runs: list[Any] = []
    with target.configured():
        compute = target.compute()
        bound = bench.bind(target.resident(inputs))
        runs.append(lambda: bound.run(compute))
        if peers:
            from benchmarks.peers.gpu_cuda import PEERS

            runs += [p.prepare(inputs) for p in PEERS.get(name, []) if p.name == "cuda"]
        for run in runs:  # warm: JIT compile, allocation of outputs and ping-pong buffers
            run()
        _profiler(True)
        for run in runs:
            run()
        _profiler(False)
    _log(f"{name}: profiled {len(runs)} warm run(s)")


def _known(name: str) -> str:
    from benchmarks.suite import ALL

    if name not in ALL:
        raise argparse.ArgumentTypeError(f"unknown benchmark {name!r}; known: {', '.join(ALL)}")
    return name


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The four subcommands; an unknown benchmark name is a usage error (exit 2)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.lab.ncu_profile", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = ap.add_subparsers(dest="cmd", required=True)
    dr = sub.add_parser("drive", help="warm run, then one run between cudaProfilerStart/Stop")
    dr.add_argument("name", type=_known)
    dr.add_argument("--size", default="paper", choices=["tiny", "quick", "paper"])
    dr.add_argument("--target", default="g", choices=["g", "gd"], help="unified / device memory")
    dr.add_argument("--peers", action="store_true", help="also run the CUDA C peer")
    kn = sub.add_parser("kernels", help="print the ncu --kernel-name filter")
    kn.add_argument("name", type=_known)
    kn.add_argument("--peers", action="store_true")
    me = sub.add_parser("metrics", help="print the ncu --metrics list (comma-separated)")
    me.add_argument("--available", type=Path, help="`ncu --query-metrics` output to filter by")
    su = sub.add_parser("summarize", help="ncu --csv --page raw reports -> Markdown")
    su.add_argument("reports", nargs="+", type=Path)
    su.add_argument("--out", type=Path, help="also write the Markdown here")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    args = parse_args(argv)
    if args.cmd == "drive":
        drive(args.name, args.size, args.target, args.peers)
    elif args.cmd == "kernels":
        print(kernel_filter(args.name, args.peers))
    elif args.cmd == "metrics":
        names = list(METRIC_NAMES)
        if args.available is not None and args.available.exists():
            names = available_metrics(args.available.read_text(errors="replace"))
            dropped = sorted(set(METRIC_NAMES) - set(names))
            if dropped:
                _log(f"metrics this ncu does not list, left out: {', '.join(dropped)}")
        print(",".join(names))
    else:
        text = summarize_files(args.reports)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text)
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
