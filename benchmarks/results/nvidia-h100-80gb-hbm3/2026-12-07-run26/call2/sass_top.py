"""The SASS instructions of one kernel with the most warp-stall samples, from an
``ncu --page source --print-source sass --csv`` log: ``python sass_top.py LOG``."""

import csv
import sys

with open(sys.argv[1], encoding="utf-8") as fh:
    r = list(csv.reader(ln for ln in fh if ln.startswith('"')))
head = r[1] if "Address" in r[1] else r[0]
r = r[1:] if head is r[1] else r
print(head[:12])
col = next(i for i, h in enumerate(head) if "Warp Stall Sampling (All" in h)
src = next(i for i, h in enumerate(head) if h == "Source")
data = []
for i, row in enumerate(r[1:]):
    text = row[col].replace(",", "") if col < len(row) else ""
    if text.replace(".", "", 1).isdigit():
        data.append((float(text), i, row[src]))
total = sum(d[0] for d in data)
print("total samples", total, "instructions", len(data))
for v, i, s in sorted(data, reverse=True)[:40]:
    print(f"{v:8.0f} {100 * v / total:5.1f}% #{i:5d} {s}")
print("by region of 64 instructions:")
for k in range(0, len(data), 64):
    part = sum(d[0] for d in data[k : k + 64])
    print(f"  {k:5d}-{k + 63:5d} {100 * part / total:5.1f}%")
