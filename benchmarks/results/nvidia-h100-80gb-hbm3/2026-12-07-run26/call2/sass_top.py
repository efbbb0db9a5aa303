import csv, sys
rows = [ln for ln in open(sys.argv[1]) if ln.startswith('"')]
r = list(csv.reader(rows))
head = r[1] if "Address" in r[1] else r[0]
r = r[1:] if head is r[1] else r
print(head[:12])
col = next(i for i, h in enumerate(head) if "Warp Stall Sampling (All" in h)
src = next(i for i, h in enumerate(head) if h == "Source")
data = []
for i, row in enumerate(r[1:]):
    try:
        data.append((float(row[col].replace(",", "") or 0), i, row[src]))
    except (ValueError, IndexError):
        pass
total = sum(d[0] for d in data)
print("total samples", total, "instructions", len(data))
for v, i, s in sorted(data, reverse=True)[:40]:
    print(f"{v:8.0f} {100*v/total:5.1f}% #{i:5d} {s}")
# cumulative by region of 50 instructions
print("by region of 64 instructions:")
for k in range(0, len(data), 64):
    part = sum(d[0] for d in data[k:k+64])
    print(f"  {k:5d}-{k+63:5d} {100*part/total:5.1f}%")
