#!/usr/bin/env bash
# Nsight Compute profile of compute_g kernels (issue #5), on the GPU machine from the repo root:
#   source tools/gpu-env.sh
#   bash tools/gpu-profile.sh [--peers] [--size paper] [--target g|gd] NAME [NAME...]
# --peers also profiles the hand-written CUDA C peer kernels of each benchmark.
# Writes ${OUT:-/tmp/offload-gpu}/profile/: NAME.csv (ncu raw page), NAME.log (stderr),
# metrics.txt, summary.md; prints the Markdown summary last. Per-benchmark limit:
# PROFILE_TIMEOUT seconds (default 240). The metric list is benchmarks/lab/ncu_profile.py METRICS.
set -uo pipefail
cd "$(dirname "$0")/.."
peers=(); size=paper; target=g; names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --peers) peers=(--peers) ;;
    --size) size="$2"; shift ;;
    --target) target="$2"; shift ;;
    -*) echo "gpu-profile: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || { echo "usage: bash tools/gpu-profile.sh [--peers] NAME..." >&2; exit 2; }
dir="${OUT:-/tmp/offload-gpu}/profile"; mkdir -p "$dir"
NCU="${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)}"
[ -n "$NCU" ] || { echo "gpu-profile: ncu not found (set NCU=/path/to/ncu)" >&2; exit 1; }
"$NCU" --version | tail -n 1 | tee "$dir/ncu-version.txt"
# Drop metrics this ncu does not list, so one unknown name cannot fail every profile.
"$NCU" --query-metrics > "$dir/query-metrics.txt" 2>&1 || true
metrics="$(python3 -m benchmarks.lab.ncu_profile metrics --available "$dir/query-metrics.txt")" || exit 1
echo "$metrics" | tr ',' '\n' > "$dir/metrics.txt"
status=0
csvs=()
for name in "${names[@]}"; do
  filter="$(python3 -m benchmarks.lab.ncu_profile kernels "$name" "${peers[@]}")" || { status=2; continue; }
  start=$(date +%s)
  timeout -k 20 "${PROFILE_TIMEOUT:-240}" "$NCU" --clock-control none --target-processes all \
    --profile-from-start off --kernel-name "$filter" --metrics "$metrics" \
    --csv --page raw --print-units base \
    python3 -m benchmarks.lab.ncu_profile drive "$name" --size "$size" --target "$target" "${peers[@]}" \
    > "$dir/$name.csv" 2> "$dir/$name.log"
  rc=$?
  echo "== $name: rc $rc, $(( $(date +%s) - start )) s, $(grep -c '^"[0-9]' "$dir/$name.csv") launch row(s)"
  [ $rc -eq 0 ] || { status=1; tail -n 5 "$dir/$name.log"; grep -h '==ERROR==' "$dir/$name.csv" "$dir/$name.log" | head -n 5; }
  csvs+=("$dir/$name.csv")
done
echo
[ ${#csvs[@]} -gt 0 ] && python3 -m benchmarks.lab.ncu_profile summarize "${csvs[@]}" --out "$dir/summary.md"
echo "gpu-profile: status $status (files in $dir)"
exit $status
