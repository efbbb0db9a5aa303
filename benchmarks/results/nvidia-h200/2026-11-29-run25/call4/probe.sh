source tools/gpu-env.sh
mkdir -p "$OUT"
timeout 200 ncu --kernel-name regex:"fold_tail" --launch-skip 3 --launch-count 1 --set full python3 -m benchmarks.lab.tail_probe --sizes 16 --calls 5 > "$OUT/full16.txt" 2>&1
grep -E "Duration|Elapsed Cycles|Registers Per|Block Size|Grid Size|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Stall|Issued Ipc|Memory Throughput|DRAM Throughput|Executed Instructions|Shared Memory Configuration Size|Dynamic Shared|Static Shared|Waves Per SM|One or More Eligible|No Eligible|Active Warps Per" "$OUT/full16.txt" | head -60
grep -iE "est. speedup|stall" -A2 "$OUT/full16.txt" | head -60
