source tools/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
for tree in base fence; do
  if [ $tree = base ]; then d=_base; else d=.; fi
  (cd $d && timeout 140 ncu --kernel-name regex:"fold_tail|Reduce" --metrics gpu__time_duration.sum --csv \
    python3 -m benchmarks.lab.tail_probe --sizes 16,18,20 --calls 10 > $OUT/$tree.csv 2>$OUT/$tree.err; \
   echo "== $tree"; python3 -m benchmarks.lab.tail_probe --summary $OUT/$tree.csv)
done
timeout 100 ncu --kernel-name regex:"small_|Reduce|fold_tail" --metrics gpu__time_duration.sum --csv \
  python3 -m benchmarks.lab.small_fold --sizes 16,18 --calls 10 > $OUT/small.csv 2>$OUT/small.err
echo "== small_fold"; python3 -m benchmarks.lab.small_fold --summary $OUT/small.csv
timeout 120 python3 -m pytest -q -x -m gpu tests/acc/test_fold_gpu.py -p no:cacheprovider 2>&1 | tail -3
