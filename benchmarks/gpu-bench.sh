#!/usr/bin/env bash
# Paper-size GPU suite on the GPU machine, one group per invocation (each <= ~9 minutes):
#   bash benchmarks/gpu-bench.sh GROUP [REPEAT]
# GROUP: A (1d-convolution nbody matrix-mult), B (2d-convolution 7pt-stencil backprojection
# blackscholes), C (treesearch volume-rendering), D (dotp mandelbrot nbody-accelerate smvm),
# study (the 2D-convolution study). Raw JSON goes to $OUT (or benchmarks/results), a short
# table is printed last. Targets: compute_g and the GPU peers (CPU times come from other runs).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/gpu-env.sh
group="${1:-A}"; repeat="${2:-5}"
out="${OUT:-benchmarks/results}"; mkdir -p "$out"
case "$group" in
  A) names="1d-convolution nbody matrix-mult" ;;
  B) names="2d-convolution 7pt-stencil backprojection blackscholes" ;;
  C) names="treesearch volume-rendering" ;;
  D) names="dotp mandelbrot nbody-accelerate smvm" ;;
  study) exec timeout 540 python3 -m benchmarks.conv2d_study --out "$out/conv2d-study.json" ;;
  *) echo "unknown group $group (A B C D study)" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
timeout 540 python3 -m benchmarks.runner $names --size paper --targets "${TARGETS:-g,gd,gdf,gpu-peers}" \
  --repeat "$repeat" --out "$out" --tag "$group" --no-plots --fresh-compile "${FRESH:-gd}" 2> >(tee "$out/bench-$group.log" >&2)
