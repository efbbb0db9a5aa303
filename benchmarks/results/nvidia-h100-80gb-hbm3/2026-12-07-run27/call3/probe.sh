source tools/gpu-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
k=0
for cfg in base:512 now:512 base:512 now:512; do
  k=$((k+1)); tree=${cfg%:*}; t=${cfg#*:}; if [ $tree = base ]; then d=_base; else d=.; fi
  f=$OUT/$k-$tree-$t.csv
  (cd $d && timeout 60 ncu --kernel-name regex:"fold_tail|Reduce" --metrics gpu__time_duration.sum --csv \
    python3 -m benchmarks.lab.tail_probe --sizes 16,18 --calls 10 --threads $t > $f 2>&1
  echo "== $k $tree threads $t"; python3 -m benchmarks.lab.tail_probe --summary $f | grep fold_tail; grep "^2^" $f)
done
timeout 150 python3 -m pytest -q -x -m gpu tests/acc/test_fold_gpu.py -p no:cacheprovider 2>&1 | tail -2
