#!/usr/bin/env bash
# The project's whole test command (README and .ci/run run exactly this).
# Lanes: unit, cpu, ptx in one pytest run; sim in its own process (NUMBA_ENABLE_CUDASIM
# must be set before numba.cuda is imported); gpu runs only on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== lint"
ruff check offload tests benchmarks examples
ruff format --check offload tests benchmarks examples
echo "== docs"
site=$(mktemp -d)
mkdocs build --strict --quiet -d "$site"
rm -rf "$site"
echo "== types"
mypy offload
echo "== unit, cpu, ptx lanes"
python -m pytest -q -p no:cacheprovider -n 2 -m "unit or cpu or ptx" --timeout=900
echo "== sim lane (numba CUDA simulator)"
NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -q -p no:cacheprovider -n 2 -m sim --timeout=900
echo "== wheel (sdist + wheel into a fresh venv: --version, bench tiny s,p, the examples)"
bash tools/wheel-check.sh
