"""The ncu profiling tool without a GPU: the raw-page CSV parser and Markdown summary, the
metric-list filter, the kernel filter, ``drive``'s argument checks and warm/profiled run
order, and tools/gpu-profile.sh end to end against a fake ``ncu``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.lab import ncu_profile as profile
from benchmarks.lab.ncu_profile import (
    METRIC_NAMES,
    available_metrics,
    bandwidth_gbs,
    kernel_filter,
    main,
    parse_ncu_csv,
    summarise_launches,
    summarize_files,
    top_stalls,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
STALL_LONG = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
STALL_WAIT = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"
STALL_MIO = "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"
STALL_BAR = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"

# What `ncu --csv --page raw` prints: ==PROF== lines and the program's output interleaved, a
# header of metric names, a units row, quoted values with thousands separators. The
# L1 hit-rate metric is missing (as when an ncu version lacks it); offload_price ran twice.
SAMPLE = f"""\
==PROF== Connected to process 4242 (/usr/bin/python3.11)
[profile] blackscholes [paper] inputs: Params(n=10000000, iters=1)
==PROF== Profiling "offload_price" - 0: 0%....50%....100% - 9 passes
==PROF== Profiling "offload_price" - 1: 0%....50%....100% - 9 passes
==PROF== Profiling "blackscholes" - 2: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum","launch__registers_per_thread","lts__t_sector_hit_rate.pct","sm__warps_active.avg.pct_of_peak_sustained_active","{STALL_LONG}","{STALL_WAIT}","{STALL_MIO}","{STALL_BAR}"
"","","","","","","","","","","","byte","byte","usecond","register/thread","%","%","","","",""
"0","4242","python3.11","127.0.0.1","offload_price","1","7","(256, 1, 1)","(39063, 1, 1)","0","9.0","120,000,000","80,000,000","100.5","40","12.5","81.25","20.5","3.25","1.5","0"
"1","4242","python3.11","127.0.0.1","offload_price","1","7","(256, 1, 1)","(39063, 1, 1)","0","9.0","160,000,000","40,000,000","80","40","13","80.0","19","3","1","0"
"2","4242","python3.11","127.0.0.1","blackscholes","1","7","(256, 1, 1)","(39063, 1, 1)","0","9.0","200,000,000","40,000,000","96.000","32","n/a","85","10","4","","0.5"
==PROF== Report: done
"""  # noqa: E501  (ncu's rows are long)


def test_parser_skips_noise_reads_units_row_and_thousands_separators() -> None:
    launches = parse_ncu_csv(SAMPLE)
    assert [la.kernel for la in launches] == ["offload_price", "offload_price", "blackscholes"]
    first = launches[0].values
    assert first["dram__bytes_read.sum"] == 120_000_000
    assert first["gpu__time_duration.sum"] == pytest.approx(100_500.0)  # usecond -> ns
    assert first["launch__registers_per_thread"] == 40
    assert launches[2].values["lts__t_sector_hit_rate.pct"] is None  # "n/a"
    assert launches[2].values[STALL_MIO] is None  # empty cell
    assert "l1tex__t_sector_hit_rate.pct" not in first


def test_two_launches_of_one_kernel_become_one_row_at_median_duration() -> None:
    kernels = summarise_launches("blackscholes", parse_ncu_csv(SAMPLE))
    price, peer = kernels
    assert (price.kernel, price.launches, peer.kernel, peer.launches) == (
        "offload_price",
        2,
        "blackscholes",
        1,
    )
    # every metric comes from one launch, the upper median (the 100.5 us one)
    assert price.values["gpu__time_duration.sum"] == pytest.approx(100_500.0)
    assert price.values["dram__bytes_write.sum"] == 80_000_000


def test_achieved_bandwidth_is_dram_bytes_over_duration_in_gbs() -> None:
    values: dict[str, float | None] = {
        "gpu__time_duration.sum": 100_000.0,
        "dram__bytes_read.sum": 2e8,
        "dram__bytes_write.sum": 1e8,
    }
    assert bandwidth_gbs(values) == pytest.approx(3000.0)
    assert bandwidth_gbs({**values, "dram__bytes_write.sum": None}) is None


def test_top_stalls_are_the_three_largest_named_by_reason() -> None:
    values: dict[str, float | None] = {STALL_LONG: 20.5, STALL_WAIT: 3.25, STALL_MIO: None}
    values |= {STALL_BAR: 7.0, "smsp__inst_executed.sum": 1e9}
    assert top_stalls(values) == "long_scoreboard 20.5, barrier 7.0, wait 3.2"
    assert top_stalls({}) == "-"


def test_markdown_shows_missing_metrics_as_dash_and_one_section_per_report(
    tmp_path: Path,
) -> None:
    report = tmp_path / "blackscholes.csv"
    report.write_text(SAMPLE)
    md = summarize_files([report])
    overview = next(line for line in md.splitlines() if "`offload_price`" in line)
    cells = [c.strip() for c in overview.strip("|").split("|")]
    # bench, kernel, n, time us, DRAM GB/s, DRAM %, SM %, occ, regs, issue, L1, L2, stalls
    assert cells[:5] == ["blackscholes", "`offload_price`", "2", "100.5", "1990.0"]
    assert cells[5] == "-" and cells[10] == "-"  # not collected in SAMPLE
    assert cells[8] == "40"
    assert cells[12] == "long_scoreboard 20.5, wait 3.2, mio_throttle 1.5"
    assert "## blackscholes" in md
    l1_row = next(line for line in md.splitlines() if "`l1tex__t_sector_hit_rate.pct`" in line)
    assert l1_row.endswith("| - | - |")


def test_summarize_command_writes_the_markdown_file(tmp_path: Path) -> None:
    report = tmp_path / "blackscholes.csv"
    report.write_text(SAMPLE)
    out = tmp_path / "md" / "summary.md"
    assert main(["summarize", str(report), "--out", str(out)]) == 0
    assert "`blackscholes` (n=1)" in out.read_text()


def test_report_without_launches_says_so(tmp_path: Path) -> None:
    report = tmp_path / "empty.csv"
    report.write_text("==PROF== Disconnected from process 1\n==ERROR== no kernels were profiled\n")
    assert "no kernel launches found" in summarize_files([report])


def test_metric_list_is_short_unique_and_filtered_by_the_query_output() -> None:
    assert len(METRIC_NAMES) == len(set(METRIC_NAMES)) <= 26
    listed = [m.split(".")[0] for m in METRIC_NAMES if not m.startswith("launch__")]
    listed.remove("l1tex__t_sector_hit_rate")
    listed += [f"dummy__metric_{k}" for k in range(60)]  # a real query lists hundreds
    query = "Device NVIDIA H100 (GH100)\nMetric Name  Metric Type\n" + "\n".join(
        f"{b:<70} Counter   byte   description" for b in listed
    )
    kept = available_metrics(query)
    assert "l1tex__t_sector_hit_rate.pct" not in kept
    assert "launch__registers_per_thread" in kept  # launch metrics are never filtered
    assert len(kept) == len(METRIC_NAMES) - 1
    assert available_metrics("==ERROR== query failed\n") == list(METRIC_NAMES)


def test_kernel_filter_adds_the_cuda_peer_entry_names_only_with_peers() -> None:
    assert kernel_filter("matrix-mult", peers=False) == "regex:^(offload_.*)$"
    assert kernel_filter("matrix-mult", peers=True) == "regex:^(offload_.*|sgemm)$"


def test_drive_rejects_an_unknown_benchmark_with_the_known_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["drive", "no-such-bench"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown benchmark 'no-such-bench'" in err and "blackscholes" in err


def test_drive_runs_once_warm_then_once_between_profiler_start_and_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.suite import common

    events: list[str] = []
    real = common.python_compute

    def counting(shape, fn, *, dtype=None, out=None):  # type: ignore[no-untyped-def]
        events.append(f"launch {shape}")
        return real(shape, fn, dtype=dtype, out=out)

    monkeypatch.setattr(common, "python_compute", counting)
    monkeypatch.setattr(profile, "_profiler", lambda on: events.append(f"profiler {on}"))
    # the CPython target stands in for compute_g; tiny blackscholes has iters=2, forced to 1
    profile.drive("blackscholes", "tiny", "py", peers=False)
    assert events == ["launch (64,)", "profiler True", "launch (64,)", "profiler False"]


FAKE_NCU = """#!/usr/bin/env bash
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute"; echo "Version 2025.3.0.0"; exit 0 ;;
  --query-metrics) exit 1 ;;
esac
echo "$@" > "$FAKE_ARGS"
echo "==PROF== Connected to process 1"
cat "$FAKE_CSV"
"""


def test_gpu_profile_script_runs_ncu_per_benchmark_and_prints_the_summary(
    tmp_path: Path,
) -> None:
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU)
    ncu.chmod(0o755)
    (tmp_path / "sample.csv").write_text(SAMPLE)
    env = {**os.environ, "NCU": str(ncu), "OUT": str(tmp_path / "out")}
    env |= {"FAKE_CSV": str(tmp_path / "sample.csv"), "FAKE_ARGS": str(tmp_path / "args")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # python3 = this interpreter
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "gpu-profile.sh"), "--peers", "blackscholes"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    args = (tmp_path / "args").read_text()
    for flag in ("--clock-control none", "--profile-from-start off", "--target-processes all"):
        assert flag in args
    assert "--kernel-name regex:^(offload_.*|blackscholes)$" in args
    assert f"--metrics {','.join(METRIC_NAMES)} " in args
    assert args.rstrip().endswith("drive blackscholes --size paper --target g --peers")
    assert done.stdout.rstrip().splitlines()[-1].startswith("gpu-profile: status 0")
    assert "| blackscholes | `offload_price` | 2 |" in done.stdout
    assert (tmp_path / "out" / "profile" / "summary.md").exists()
