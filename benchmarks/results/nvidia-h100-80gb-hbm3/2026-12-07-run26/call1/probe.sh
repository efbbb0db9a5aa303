set -x
source tools/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv
ncu --version | tail -1
python3 -m benchmarks.lab.small_fold --sizes 16 --calls 1 --per-thread 4 > /dev/null 2>&1  # warm caches
ncu --kernel-name regex:"small_|Reduce|fold_tail|offload" --metrics gpu__time_duration.sum --csv \
  python3 -m benchmarks.lab.small_fold --sizes 16,18,20 --calls 10 > $OUT/t.csv 2> $OUT/t.err
python3 -m benchmarks.lab.small_fold --summary $OUT/t.csv
grep -v '^"' $OUT/t.csv | tail -15
for c in 64 32 16 8; do
  echo "== chunk $c"
  ncu --kernel-name regex:"fold_tail|offload|Reduce" --metrics gpu__time_duration.sum --csv \
    python3 -m benchmarks.lab.tail_probe --sizes 16,18 --calls 10 --chunk $c > $OUT/c$c.csv 2>$OUT/c$c.err
  python3 -m benchmarks.lab.tail_probe --summary $OUT/c$c.csv; grep -v '^"' $OUT/c$c.csv | grep "2^"
done
ncu --kernel-name regex:fold_tail --launch-skip 3 --launch-count 1 --set full --page source --print-source sass --csv \
  python3 -m benchmarks.lab.tail_probe --sizes 16 --calls 5 > $OUT/sass16.csv 2> $OUT/sass16.err
wc -l $OUT/sass16.csv; head -3 $OUT/sass16.csv | cut -c1-600
python3 -m pytest -q -x -m gpu tests/stream tests/gpu/test_staging_gpu.py 2>&1 | tail -5
python3 -m benchmarks.lab.stream_bench --budget-gib 2 --times 4 --copy-gib 2 --only map,sum --fold --memory pageable,out,pinned 2>&1 | tail -20
