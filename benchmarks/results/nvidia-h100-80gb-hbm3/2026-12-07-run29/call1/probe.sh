#!/usr/bin/env bash
# GPU call 1 (session 28): walking kernels (ptx.passes.walk) on/off in one call; gpu tests
set -uo pipefail
source tools/gpu-env.sh
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_walk_gpu.py tests/gpu/test_stage_gpu.py > "$OUT/lane.txt" 2>&1
tail -3 "$OUT/lane.txt"
python3 -m benchmarks.lab.explain_kernel 2d-convolution --size paper --lines 8 > "$OUT/explain.txt" 2>&1
for r in 1 2; do
  OFFLOAD_DISABLE_PASSES=walk timeout 100 python3 -m benchmarks.runner 2d-convolution --sweep 4 --targets gd,g --repeat 10 --no-plots --out "$OUT/off$r" > "$OUT/off$r.txt" 2>&1
  timeout 100 python3 -m benchmarks.runner 2d-convolution --sweep 4 --targets gd,g --repeat 10 --no-plots --out "$OUT/on$r" > "$OUT/on$r.txt" 2>&1
done
OFFLOAD_DISABLE_PASSES=walk timeout 60 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/split-off.txt" 2>&1
timeout 60 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/split-on.txt" 2>&1
timeout 60 python3 -m benchmarks.runner 2d-convolution --size paper --targets gpu-peers --repeat 10 --no-plots --out "$OUT/peers" > "$OUT/peers.txt" 2>&1
for f in off1 on1 off2 on2 peers; do echo "== $f"; grep -E "compute_g|cuda|cupy|jax|ratio|x " "$OUT/$f.txt" | tail -14; done
echo "== split off/on"; paste <(awk '{print $1,$2,$3,$5}' "$OUT/split-off.txt") <(awk '{print $5}' "$OUT/split-on.txt") | tail -14
cat "$OUT/explain.txt" | head -6
