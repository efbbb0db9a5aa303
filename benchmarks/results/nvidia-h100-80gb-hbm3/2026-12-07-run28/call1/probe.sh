#!/usr/bin/env bash
# GPU call 1 (session 27): ol.stencil mirror/wrap border rules, _base (HEAD) vs now, then the gpu lane
set -uo pipefail
source tools/gpu-env.sh
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$OUT/device.txt"
for r in 1 2; do
  OFFLOAD_CACHE_DIR=/tmp/cache_base PYTHONPATH=$PWD/_base:$PYTHONPATH timeout 150 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/base$r.txt" 2>&1
  timeout 150 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/now$r.txt" 2>&1
done
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/acc/test_stencil_gpu.py tests/stream/test_stream_gpu.py tests/acc/test_fold_gpu.py > "$OUT/lane.txt" 2>&1
tail -3 "$OUT/lane.txt"
for f in base1 now1 base2 now2; do echo "== $f"; cat "$OUT/$f.txt" | tail -20; done
