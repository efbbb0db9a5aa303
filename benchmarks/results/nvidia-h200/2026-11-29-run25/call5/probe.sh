source tools/gpu-env.sh
mkdir -p "$OUT"
timeout 400 python3 -m pytest -q -m gpu -n 4 -p no:cacheprovider tests/stream > "$OUT/lane.txt" 2>&1; echo "lane rc=$?"; grep -E "passed|failed|FAILED" "$OUT/lane.txt" | tail -8
