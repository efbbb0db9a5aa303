#!/usr/bin/env bash
# GPU call 2 (session 27): ol.stencil border rules, _base (5a29b24, run from _base/) vs now, twice; then the acc gpu lane
set -uo pipefail
source tools/gpu-env.sh
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$OUT/device.txt"
for r in 1; do
  (cd _base && OFFLOAD_CACHE_DIR=/tmp/cache_base timeout 140 python3 -m benchmarks.lab.stencil_split --repeat 20) > "$OUT/base$r.txt" 2>&1
  timeout 140 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/now$r.txt" 2>&1
done
timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/acc > "$OUT/lane.txt" 2>&1
tail -3 "$OUT/lane.txt"
paste <(awk '{print $1, $2, $3, $5}' "$OUT/base1.txt") <(awk '{print $5, $8}' "$OUT/now1.txt")
