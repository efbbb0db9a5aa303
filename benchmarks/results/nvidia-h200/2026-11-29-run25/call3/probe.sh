source tools/gpu-env.sh
mkdir -p "$OUT"
for u in 4 8 16 4; do
  timeout 120 ncu --kernel-name regex:"fold_tail|Reduce|offload" --metrics gpu__time_duration.sum --csv python3 -m benchmarks.lab.tail_probe --sizes 16,18,20,22 --calls 10 --unroll $u > "$OUT/ncu-u$u.csv" 2> "$OUT/ncu-u$u.err"
  echo "== unroll $u"; grep "^2^" "$OUT/ncu-u$u.csv"; python3 -m benchmarks.lab.tail_probe --summary "$OUT/ncu-u$u.csv"
done
