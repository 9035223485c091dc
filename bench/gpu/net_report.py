#!/usr/bin/env python3
"""Tables from bench/gpu/net-emulate.sh: per node count and size, the median bus bandwidth
of each config over all repetitions (every timed iteration of every repetition), and the
ratios ncclbpf/socket and wrap/standalone. Errors (wrong results) are summed per config.

    net_report.py OUT_DIR
"""
import csv
import glob
import os
import statistics
import sys
from collections import defaultdict


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    bw = defaultdict(list)        # (cfg, nodes, bytes) -> busbw samples
    errors = defaultdict(int)
    cfgs = set()
    for path in glob.glob(os.path.join(out, "*", "r*", "summary.csv")):
        cfg = path.split(os.sep)[-3]
        cfgs.add(cfg)
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (cfg, int(row["nodes"]), int(row["bytes"]))
                bw[key].append(float(row["busbw_GBs"]))
                errors[cfg] += int(row["errors"])
    if not bw:
        print(f"no summary.csv under {out}/*/r*/", file=sys.stderr)
        return 1
    order = [c for c in ("socket", "ncclbpf", "standalone", "wrap") if c in cfgs]
    ratios = [(a, b) for a, b in (("ncclbpf", "socket"), ("wrap", "standalone")) if a in cfgs and b in cfgs]
    for nodes in sorted({k[1] for k in bw}):
        print(f"\n### {nodes} emulated nodes, AllReduce bus bandwidth (GB/s, median)\n")
        head = "| size | " + " | ".join(order) + " | " + " | ".join(f"{a}/{b}" for a, b in ratios) + " |"
        print(head)
        print("|" + "---|" * (1 + len(order) + len(ratios)))
        for size in sorted({k[2] for k in bw if k[1] == nodes}):
            med = {c: statistics.median(bw[(c, nodes, size)]) for c in order if bw.get((c, nodes, size))}
            cells = [f"{med[c]:.3f}" if c in med else "-" for c in order]
            rs = []
            for a, b in ratios:
                rs.append(f"{med[a] / med[b]:.3f}" if a in med and b in med and med[b] > 0 else "-")
            print(f"| {human(size)} | " + " | ".join(cells) + " | " + " | ".join(rs) + " |")
    print("\nwrong results: " + ", ".join(f"{c} {errors[c]}" for c in order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
