#!/usr/bin/env bash
# GPU call 1 (session 29): checked walk + rank-3 walk on/off in one call; gpu lane of walk/stage/acc stencils
set -uo pipefail
source tools/gpu-env.sh
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader | tee "$OUT/device.txt"
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/gpu/test_walk_gpu.py tests/gpu/test_stage_gpu.py tests/acc > "$OUT/lane.txt" 2>&1
tail -3 "$OUT/lane.txt"
for r in 1 2; do
  OFFLOAD_DISABLE_PASSES=walk timeout 120 python3 -m benchmarks.runner 7pt-stencil backprojection 2d-convolution --size paper --targets gd,g --repeat 10 --no-plots --out "$OUT/off$r" > "$OUT/off$r.txt" 2>&1
  timeout 120 python3 -m benchmarks.runner 7pt-stencil backprojection 2d-convolution --size paper --targets gd,g --repeat 10 --no-plots --out "$OUT/on$r" > "$OUT/on$r.txt" 2>&1
done
OFFLOAD_DISABLE_PASSES=walk timeout 60 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/split-off.txt" 2>&1
timeout 60 python3 -m benchmarks.lab.stencil_split --repeat 20 > "$OUT/split-on.txt" 2>&1
timeout 100 python3 -m benchmarks.runner 7pt-stencil backprojection 2d-convolution --size paper --targets gpu-peers --repeat 10 --no-plots --out "$OUT/peers" > "$OUT/peers.txt" 2>&1
for f in off1 on1 off2 on2 peers; do echo "== $f"; grep -hE "^\| (2d|7pt|back)" "$OUT"/$f/*/results-paper.md | cut -d'|' -f2-7; done
echo "== split off/on"; paste <(awk '{print $1,$2,$3,$5}' "$OUT/split-off.txt") <(awk '{print $5}' "$OUT/split-on.txt") | tail -14
