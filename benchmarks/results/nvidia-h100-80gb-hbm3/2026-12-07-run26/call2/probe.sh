source tools/gpu-env.sh
python3 -m benchmarks.lab.small_fold --sizes 16 --calls 1 --per-thread 4 2>&1 | tail -8
ncu --kernel-name regex:"small_|Reduce|fold_tail|offload" --metrics gpu__time_duration.sum --csv \
  python3 -m benchmarks.lab.small_fold --sizes 16,18,20 --calls 10 > /tmp/t.csv 2> /tmp/t.err
tail -5 /tmp/t.err
python3 -m benchmarks.lab.small_fold --summary /tmp/t.csv
grep -v '^"' /tmp/t.csv | tail -20
ncu --kernel-name regex:fold_tail --launch-skip 3 --launch-count 1 --set full --page source --print-source sass --csv \
  python3 -m benchmarks.lab.tail_probe --sizes 16 --calls 5 > /tmp/sass16.csv 2> /tmp/sass16.err
python3 _sass_top.py /tmp/sass16.csv
cp /tmp/sass16.csv $OUT/
