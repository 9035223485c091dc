#!/usr/bin/env python3
"""Per size: each config's median time (median over repetitions of each repetition's median)
and its ratio to the default, with the per-repetition ratios' range and a one-sided
Mann-Whitney p (config slower than the default) over all samples.
  overhead_table.py SAMPLES.csv [CONFIG ...]   (configs in column order; default first)"""
import csv, statistics, sys
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "../../../scripts"))
from emulate_report import mwu_greater, human  # noqa: E402

rows = {}
for r in csv.DictReader(open(sys.argv[1])):
    rows.setdefault((r["config"], int(r["bytes"]), int(r["rep"])), []).append(float(r["time_us"]))
configs = sys.argv[2:] or sorted({c for c, _, _ in rows})
base = configs[0]
sizes = sorted({b for _, b, _ in rows})
print("| size | " + " | ".join(f"{c} µs" if c == base else f"{c} µs (x {base}, per-rep range, p slower)" for c in configs) + " |")
print("|---" * (len(configs) + 1) + "|")
for b in sizes:
    cells = [human(b)]
    reps = sorted({r for c, bb, r in rows if bb == b and c == base})
    bmed = {r: statistics.median(rows[(base, b, r)]) for r in reps}
    bmm = statistics.median(bmed.values()) if bmed else None
    for c in configs:
        per = {r: statistics.median(v) for (cc, bb, r), v in rows.items() if cc == c and bb == b}
        if not per or bmm is None:
            cells.append("–"); continue
        m = statistics.median(per.values())
        if c == base:
            cells.append(f"{m:.1f}"); continue
        ratios = [per[r] / bmed[r] for r in per if r in bmed]
        allc = [x for (cc, bb, _), v in rows.items() if cc == c and bb == b for x in v]
        allb = [x for (cc, bb, _), v in rows.items() if cc == base and bb == b for x in v]
        p = mwu_greater(allc, allb)
        cells.append(f"{m:.1f} ({m / bmm:.3f}, {min(ratios):.3f}-{max(ratios):.3f}, p={p:.2g})")
    print("| " + " | ".join(cells) + " |")
