#!/usr/bin/env bash
# One call on the GPU machine (device tool: carry .whl, limit 600 s):
#   bash tools/gpu-run.sh STAGE[:SECONDS] [STAGE[:SECONDS]...]
# Stages (run in order, each with its own time limit):
#   check     the gpu + ptx test lanes and the launch-overhead / compile-time benchmark
#   A B C D   paper-size benchmark groups (compute_g + GPU peers), see benchmarks/gpu-bench.sh
#   study     the 2D-convolution study (paper Table 3)
#   blocking  matrix-mult's kernel under each register blocking (benchmarks/lab/blocking.py)
#   ablation  every optimiser pass on/off on the paper's kernels (kernel time + PTX counts)
#   cpu-quick the whole suite at quick size on compute_s, compute_p and the CPU peers (NumPy,
#             numba loops over the same element functions: benchmarks/peers/numba_loops.py)
#   quick     the whole suite at quick size on compute_g + peers (a fast smoke run)
#   sweep     every benchmark at SWEEP_COUNT (5) sizes from quick to paper: compute_g (both
#             modes), compute_p and the GPU peers; ratios per size (benchmarks/sweep.py)
#   cpu       the host's CPU cores: compute_s and compute_p at paper size, one iteration
#             (compute_p only for the three whose compute_s takes minutes)
#   profile   Nsight Compute metrics of compute_g and the CUDA peers (tools/gpu-profile.sh) for
#             PROFILE_NAMES (default: the benchmarks that miss their targets)
#   unified   where unified mode's per-call time goes against device mode
#             (benchmarks/lab/unified_tax.py; UNIFIED_NAMES picks benchmarks)
#   pvs       compute_p against compute_s call by call on the suite (benchmarks/lab/p_vs_s.py;
#             PVS_ARGS, e.g. "--load 16")
#   cubin     the cubin cache on the GPU: tests/gpu/test_cubin_gpu.py, then fresh processes
#             reaching cached kernels from cubin and from PTX (benchmarks/lab/cubin_start.py)
#   overhead  the launch-overhead / compile-time benchmark alone (benchmarks/lab/overhead.py)
#   host      host time of a warm collective call (benchmarks/lab/acc_host.py, no profiler
#             line first) for HOST_NAMES (sum dotp smvm) at HOST_SIZE (quick); base-host: _base/
#   lane      the gpu test lane alone: GPU_LANE folders (tests/acc tests/dask tests/stream),
#             GPU_TEST_WORKERS (8), -v into lane.txt (failures named even if cut by the limit)
#   acc       the collectives' benchmarks (sum, dotp, smvm, histogram, prefix-sum and the
#             element forms) at ACC_SIZE (paper) on ACC_TARGETS (g,gd,gpu-peers)
#   fuzz      the differential fuzzer on the real GPU (tools/fuzz.py: interp and compute_g)
#   cccl      cuda.compute (CUB) against offload's fold_all/scanl1/fold_seg (benchmarks/lab/cccl_peers.py)
#   stream    streaming on one GPU (benchmarks/lab/stream_bench.py; STREAM_ARGS)
#   dask      weak scaling through dask-cuda, a worker per GPU, against Dask's CuPy code
#             (benchmarks/lab/dask_scaling.py; DASK_ARGS, e.g. "--workers 1,2,4 --host";
#             needs their wheels in .whl: once, from the project's root,
#             EXTRA="dask==2026.8.0 distributed==2026.8.0 dask-cuda==26.10.0 locket partd
#             tblib tornado zict" bash ../shared/gpu/fetch-wheels.sh; rm .whl/numpy-*
#             (the machine's own numpy 2.5 works: offload.ptx.numba_compat))
#   staging   host arrays into device mode, staged against one pageable copy
#             (benchmarks/lab/stage_probe.py; STAGING_ARGS)
#   system-numpy  the gpu lane's semantics tests and the quick blackscholes on the machine's
#             own numpy (2.5 there: no carried wheel; offload.ptx.numba_compat)
#   base-A base-B base-C base-D base-overhead base-quick base-acc
#             the same, run by an earlier revision's tree in _base/ (a before/after in one
#             call, on one machine): here, `mkdir _base && git archive REV offload benchmarks
#             tools | tar -x -C _base` (_base/ is in .git/info/exclude: carry it with .whl);
#             its kernels are cached apart (OFFLOAD_CACHE_DIR)
# Everything is written under $OUT/run (fetched back as one tarball, $OUT/gpu-run.tgz);
# short tables are printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/offload-gpu}"
RUN="$(mktemp -d)"
source tools/gpu-env.sh || { echo "gpu-run: environment setup failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,memory.total --format=csv,noheader | tee "$RUN/device.txt"
status=0
summary=()
for arg in "$@"; do
  stage="${arg%%:*}"
  limit="${arg#*:}"; [ "$limit" = "$arg" ] && limit=240
  start=$(date +%s)
  case "$stage" in
    check)
      OUT="$RUN/check" timeout "$limit" bash tools/gpu-check.sh > "$RUN/check.log" 2>&1 || status=1
      summary+=("$(tail -n 40 "$RUN/check/overhead.txt" 2>/dev/null)")
      summary+=("$(grep -E 'passed|failed' "$RUN/check/pytest-gpu.txt" | tail -n 1)") ;;
    A|B|C|D)
      OUT="$RUN" timeout "$limit" bash benchmarks/gpu-bench.sh "$stage" 3 > "$RUN/bench-$stage.log" 2>&1 || status=1
      summary+=("$(grep -E '^\|' "$RUN/bench-$stage.log" | grep -v -- '---' | cut -c1-220)") ;;
    study)
      OUT="$RUN" timeout "$limit" bash benchmarks/gpu-bench.sh study > "$RUN/study.log" 2>&1 || status=1
      summary+=("$(tail -n 15 "$RUN/study.log")") ;;
    blocking)
      timeout "$limit" python3 -m benchmarks.lab.blocking --repeat 15 --json "$RUN/blocking.json" > "$RUN/blocking.log" 2>&1 || status=1
      summary+=("$(tail -n 12 "$RUN/blocking.log")") ;;
    ablation)
      timeout "$limit" python3 -m benchmarks.lab.ablation --size paper --repeat 5 --out "$RUN/ablation" > "$RUN/ablation.log" 2>&1 || status=1
      summary+=("$(tail -n 45 "$RUN/ablation.log")") ;;
    cpu)
      light="blackscholes 2d-convolution 7pt-stencil backprojection treesearch volume-rendering dotp mandelbrot smvm nbody-accelerate"
      # shellcheck disable=SC2086
      timeout "$limit" python3 -m benchmarks.runner $light --size paper --targets s,p --iters 1 --repeat 3 --out "$RUN" --tag cpu --no-plots > "$RUN/cpu.log" 2>&1 || status=1
      timeout "$limit" python3 -m benchmarks.runner 1d-convolution matrix-mult nbody --size paper --targets p --iters 1 --repeat 1 --out "$RUN" --tag cpu-heavy --no-plots >> "$RUN/cpu.log" 2>&1 || status=1
      summary+=("$(grep -E '^\| [a-z0-9-]+ \| compute_' "$RUN/cpu.log" | cut -c1-120)") ;;
    cpu-quick)
      timeout "$limit" python3 -m benchmarks.runner --size quick --targets s,p,cpu-peers --repeat "${CPU_REPEAT:-5}" --out "$RUN" --tag cpu-quick --no-plots > "$RUN/cpu-quick.log" 2>&1 || status=1
      summary+=("$(grep -E '^\| [a-z0-9-]+ \| (compute_|numba|numpy)' "$RUN/cpu-quick.log" | cut -c1-110)") ;;
    quick)
      timeout "$limit" python3 -m benchmarks.runner --size quick --targets ${QUICK_TARGETS:-g,gd,gpu-peers} --repeat 3 --out "$RUN" --tag quick --no-plots > "$RUN/quick.log" 2>&1 || status=1
      summary+=("$(grep -E '^\|' "$RUN/quick.log" | cut -c1-200)") ;;
    sweep)
      timeout "$limit" python3 -m benchmarks.runner ${SWEEP_NAMES:-} --sweep ${SWEEP_COUNT:-5} --targets ${SWEEP_TARGETS:-g,gd,p,gpu-peers} --repeat 3 --out "$RUN" --tag sweep > "$RUN/sweep.log" 2>&1 || status=1
      summary+=("$(grep -E '^\|' "$RUN/sweep.log" | cut -c1-200)") ;;
    profile)
      names="${PROFILE_NAMES:-2d-convolution 7pt-stencil backprojection blackscholes dotp smvm nbody volume-rendering matrix-mult}"
      # shellcheck disable=SC2086
      OUT="$RUN" PROFILE_TIMEOUT=60 timeout "$limit" bash tools/gpu-profile.sh --peers $names > "$RUN/profile.log" 2>&1 || status=1
      summary+=("$(sed -n '/^| bench/,/^$/p' "$RUN/profile/summary.md" 2>/dev/null | cut -c1-260)") ;;
    acc)
      # shellcheck disable=SC2086
      timeout "$limit" python3 -m benchmarks.runner ${ACC_NAMES:-sum dotp smvm histogram prefix-sum dotp-element smvm-element} --size ${ACC_SIZE:-paper} --targets ${ACC_TARGETS:-g,gd,gpu-peers} --repeat 3 --out "$RUN" --tag "acc-${ACC_SIZE:-paper}" --no-plots > "$RUN/acc-${ACC_SIZE:-paper}.log" 2>&1 || status=1
      summary+=("$(grep -E '^\|' "$RUN/acc-${ACC_SIZE:-paper}.log" | cut -c1-200)") ;;
    stream)
      timeout "$limit" python3 -m benchmarks.lab.stream_bench --json "$RUN/stream.json" ${STREAM_ARGS:-} > "$RUN/stream.log" 2>&1 || status=1
      summary+=("$(tail -n 25 "$RUN/stream.log")") ;;
    dask)
      # every GPU of the machine: DASK_ARGS, e.g. "--workers 1,2,4 --host"
      timeout "$limit" python3 -m benchmarks.lab.dask_scaling --json "$RUN/dask.json" ${DASK_ARGS:-} > "$RUN/dask.log" 2>&1 || status=1
      summary+=("$(grep -v -i warn "$RUN/dask.log" | tail -n 6)") ;;
    staging)
      timeout "$limit" python3 -m benchmarks.lab.stage_probe ${STAGING_ARGS:-} > "$RUN/staging.log" 2>&1 || status=1
      summary+=("$(grep -v -i deprecat "$RUN/staging.log" | tail -n 12)") ;;
    fuzz)
      timeout "$limit" python3 tools/fuzz.py --budget $(( limit - 30 )) --seed ${FUZZ_SEED:-800000} --targets interp,compute_g --out "$RUN/fuzz" > "$RUN/fuzz.log" 2>&1 || status=1
      summary+=("$(tail -n 12 "$RUN/fuzz.log")") ;;
    cccl)
      timeout "$limit" python3 -m benchmarks.lab.cccl_peers --json "$RUN/cccl.json" > "$RUN/cccl.log" 2>&1 || status=1
      summary+=("$(cat "$RUN/cccl.log" | cut -c1-300)") ;;
    system-numpy)
      (export PYTHONPATH="$PWD"; python3 -c "import numpy; print('system numpy', numpy.__version__)"
       timeout "$limit" python3 -m pytest -q -W error -p no:cacheprovider -n 4 -m gpu tests/gpu/test_gpu_semantics.py tests/gpu/test_stage_gpu.py
       timeout "$limit" python3 -m benchmarks.runner blackscholes --size quick --targets g,gd --repeat 3 --no-plots --out "$RUN/system-numpy") > "$RUN/system-numpy.log" 2>&1 || status=1
      summary+=("$(grep -E 'system numpy|passed|failed|^\| blackscholes' "$RUN/system-numpy.log" | cut -c1-160)") ;;
    pvs)
      timeout "$limit" python3 -m benchmarks.lab.p_vs_s ${PVS_ARGS:-} --json "$RUN/p_vs_s.json" > "$RUN/p_vs_s.log" 2>&1 || status=1
      summary+=("$(cat "$RUN/p_vs_s.log")") ;;
    cubin)
      (timeout "$limit" python3 -m pytest -q -W error -p no:cacheprovider -m gpu tests/gpu/test_cubin_gpu.py
       timeout "$limit" python3 -m benchmarks.lab.cubin_start --repeat "${CUBIN_REPEAT:-3}" --json "$RUN/cubin_start.json") > "$RUN/cubin.log" 2>&1 || status=1
      summary+=("$(tail -n 25 "$RUN/cubin.log")") ;;
    overhead)
      timeout "$limit" python3 benchmarks/lab/overhead.py --json "$RUN/overhead.json" > "$RUN/overhead.txt" 2>&1 || status=1
      summary+=("$(grep -A 30 '^== offload GPU overhead' "$RUN/overhead.txt")") ;;
    unified)
      timeout "$limit" python3 -m benchmarks.lab.unified_tax ${UNIFIED_NAMES:-} > "$RUN/unified.txt" 2>&1 || status=1
      summary+=("$(grep -E '^==|per iteration|raw kernel|unified call' "$RUN/unified.txt")") ;;
    base-A|base-B|base-C|base-D)
      group="${stage#base-}"
      (cd _base && OFFLOAD_CACHE_DIR=/tmp/offload-base-cache OUT="$RUN/base" timeout "$limit" bash benchmarks/gpu-bench.sh "$group" 3) > "$RUN/bench-$stage.log" 2>&1 || status=1
      summary+=("$(grep -E '^\|' "$RUN/bench-$stage.log" | grep -v -- '---' | cut -c1-220)") ;;
    host|base-host)
      dir=.; [ "$stage" = base-host ] && dir=_base
      for name in ${HOST_NAMES:-sum dotp smvm}; do
        (cd "$dir" && OFFLOAD_CACHE_DIR=/tmp/offload-$stage-cache PYTHONPATH="/tmp/site:$PWD" timeout "$limit" python3 -m benchmarks.lab.acc_host --name "$name" --size "${HOST_SIZE:-quick}" --calls 300 --top 25) > "$RUN/$stage-$name.txt" 2>&1 || status=1
        summary+=("$stage: $(head -n 1 "$RUN/$stage-$name.txt")")
      done ;;
    lane)
      # shellcheck disable=SC2086
      timeout "$limit" python3 -m pytest -v -W error -p no:cacheprovider -n ${GPU_TEST_WORKERS:-8} --dist loadfile -m gpu ${GPU_LANE:-tests/acc tests/dask tests/stream} > "$RUN/lane.txt" 2>&1 || status=1
      summary+=("$(grep -E '(FAILED|ERROR) ' "$RUN/lane.txt" | head -n 20)")
      summary+=("$(tail -n 1 "$RUN/lane.txt")") ;;
    base-acc)
      # shellcheck disable=SC2086
      (cd _base && OFFLOAD_CACHE_DIR=/tmp/offload-base-cache timeout "$limit" python3 -m benchmarks.runner ${ACC_NAMES:-sum dotp smvm} --size ${ACC_SIZE:-paper} --targets ${ACC_TARGETS:-g,gd,gpu-peers} --repeat 3 --out "$RUN/base" --tag "acc-${ACC_SIZE:-paper}" --no-plots) > "$RUN/base-acc.log" 2>&1 || status=1
      summary+=("base: $(grep -E '^\|' "$RUN/base-acc.log" | cut -c1-160)") ;;
    base-quick)
      (cd _base && OFFLOAD_CACHE_DIR=/tmp/offload-base-cache timeout "$limit" python3 -m benchmarks.runner --size quick --targets ${QUICK_TARGETS:-g,gd,gpu-peers} --repeat 3 --out "$RUN/base" --tag quick --no-plots) > "$RUN/base-quick.log" 2>&1 || status=1
      summary+=("$(grep -E '^\|' "$RUN/base-quick.log" | cut -c1-200)") ;;
    base-overhead)
      script=benchmarks/lab/overhead.py; [ -f "_base/$script" ] || script=benchmarks/overhead.py
      (cd _base && OFFLOAD_CACHE_DIR=/tmp/offload-base-cache PYTHONPATH="/tmp/site:$PWD" timeout "$limit" python3 "$script" --json "$RUN/base-overhead.json") > "$RUN/base-overhead.txt" 2>&1 || status=1
      summary+=("$(grep -A 30 '^== offload GPU overhead' "$RUN/base-overhead.txt")") ;;
    *) echo "unknown stage $stage"; status=2 ;;
  esac
  echo "== stage $stage: $(( $(date +%s) - start )) s (status so far $status)"
done
mkdir -p "$OUT"
tar czf "$OUT/gpu-run.tgz" -C "$RUN" . 2>/dev/null
echo
echo "================ summary ================"
for s in "${summary[@]}"; do echo "$s"; echo; done
echo "gpu-run: status $status"
exit $status
