#!/usr/bin/env bash
# GPU call 2 (session 28): gpu lane of the touched areas on the final tree; four suite benchmarks at paper size, both modes and peers
set -uo pipefail
source tools/gpu-env.sh
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$OUT/device.txt"
timeout 280 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/acc tests/stream tests/gpu/test_walk_gpu.py tests/gpu/test_stage_gpu.py > "$OUT/lane.txt" 2>&1
tail -3 "$OUT/lane.txt"
timeout 250 python3 -m benchmarks.runner 2d-convolution 7pt-stencil blackscholes backprojection --size paper --targets g,gd,gpu-peers --repeat 10 --no-plots --out "$OUT/suite" > "$OUT/suite.txt" 2>&1
grep -E "^\| (2d|7pt|black|back)" "$OUT"/suite/*/results-paper.md | cut -d'|' -f2-6
