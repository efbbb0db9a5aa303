#!/usr/bin/env bash
# The package as a user gets it: build the sdist and the wheel (the wheel from the sdist),
# install the wheel into a fresh virtual environment (no source checkout on its path), and run
# `python -m offload --version`, the benchmark suite at tiny size on s,p and every example on
# s and p from it. The suite and the examples are copied out of the checkout, so the `offload`
# they import is the installed one (its helpers then live under site-packages: issue 18).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== wheel: build sdist and wheel"
python -m build --outdir "$work/dist" . > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
ls "$work/dist"
echo "== wheel: install into a fresh virtual environment"
python -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q "$work/dist"/offload-*.whl
mkdir "$work/run"
cp -r "$root/benchmarks" "$root/examples" "$work/run/"
cd "$work/run"
export OFFLOAD_CACHE_DIR="$work/cache"
"$py" -c 'import offload, sys; f = offload.__file__; print("offload", offload.__version__, "from", f); sys.exit("site-packages" not in f)'
"$py" -m offload --version
echo "== wheel: bench --size tiny --targets s,p"
"$py" -m offload bench --size tiny --targets s,p --repeat 1 --no-plots --out "$work/results" > "$work/bench.log" 2>&1 || { tail -40 "$work/bench.log"; exit 1; }
tail -3 "$work/bench.log"
echo "== wheel: examples on s and p"
for example in examples/[a-z]*.py; do
  for target in s p; do
    OFFLOAD_EXAMPLE_SMALL=1 "$py" "$example" "$target" > /dev/null || { echo "FAILED: $example $target"; exit 1; }
  done
done
echo "wheel check passed"
