source tools/gpu-env.sh
mkdir -p "$OUT"
timeout 280 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/stream/test_stream_stencils.py tests/stream/test_stream_composite.py tests/stream/test_stream_gpu.py > "$OUT/lane.txt" 2>&1; echo "lane rc=$?"; tail -5 "$OUT/lane.txt"
timeout 280 python3 -m benchmarks.lab.stream_bench --budget-gib 2 --times 4 --copy-gib 2 --only map,stencil --node-stencil --json "$OUT/stream.json" > "$OUT/stream.log" 2>&1; echo "bench rc=$?"; tail -12 "$OUT/stream.log"
