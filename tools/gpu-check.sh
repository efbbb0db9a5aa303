#!/usr/bin/env bash
# One command for the GPU machine: versions and device, the gpu + ptx test lanes, the
# overhead benchmark. Run from anywhere; writes pytest output and JSON to $OUT if set.
# Carry .whl/ (numpy 2.4.6) with the working tree: numba-cuda 0.30.4 needs numpy < 2.5.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/offload-gpu-check}"
mkdir -p "$OUT"
# shellcheck source=tools/gpu-env.sh
source tools/gpu-env.sh || { echo "gpu-check: environment setup failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader || true
python3 -c "import sys, numpy, numba, cupy; from numba.cuda.cudadrv import nvvm; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__, 'nvvm', nvvm.NVVM().get_version(), 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'driver', cupy.cuda.runtime.driverGetVersion())"
status=0
# -v: every test's outcome is written as it ends, so a run cut by the time limit still names
# its failures (grep FAILED); GPU_LANE picks the folders (the whole lane needs two calls).
# shellcheck disable=SC2086
timeout ${GPU_TEST_TIMEOUT:-540} python3 -m pytest -v -W error -p no:cacheprovider -n ${GPU_TEST_WORKERS:-4} --dist loadfile --durations=12 -m gpu ${GPU_LANE:-tests/gpu tests/acc tests/ports tests/stream tests/dask tests/api tests/sim} \
  > "$OUT/pytest-gpu.txt" 2>&1 || status=1
grep -E "FAILED|ERROR" "$OUT/pytest-gpu.txt" | head -20
tail -5 "$OUT/pytest-gpu.txt"
timeout 150 python3 benchmarks/lab/overhead.py --json "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.txt" || status=1
echo "gpu-check: exit status $status (outputs in $OUT)"
exit $status
