#!/usr/bin/env bash
# GPU call 3 (session 27): ol.stencil after NEAR_RANK = 3 (ranks 1-2 split as before), now only; stencil gpu tests
set -uo pipefail
source tools/gpu-env.sh
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$OUT/device.txt"
timeout 140 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/now.txt" 2>&1
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/acc/test_stencil_gpu.py > "$OUT/lane.txt" 2>&1
tail -2 "$OUT/lane.txt"
cat "$OUT/now.txt"
