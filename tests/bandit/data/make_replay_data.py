#!/usr/bin/env python3
"""Trims GPU testbed samples (emulate-nodes.sh, one row per timed collective) to the replay
data of test_bandit: per (nodes, bytes, config) 16 quantiles of time_us at (i + 0.5) / 16.

  make_replay_data.py samples2.csv samples4.csv > gpu_c1_quantiles.csv
"""
import csv, sys, collections

CONFIGS = ["default", "Tree-LL", "Tree-LL128", "Tree-Simple", "Ring-LL", "Ring-LL128", "Ring-Simple"]
NQ = 16

def quantile(xs, q):  # type 7
    h = (len(xs) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])

d = collections.defaultdict(list)
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        if r["config"] in CONFIGS:
            d[(int(r["nnodes"]), int(r["bytes"]), r["config"])].append(float(r["time_us"]))
print("# nodes,bytes,config,16 quantiles of time_us at (i+0.5)/16 (first GPU sweep, H200, NCCL 2.28.9)")
for (n, b, c) in sorted(d, key=lambda k: (k[0], k[1], CONFIGS.index(k[2]))):
    xs = sorted(d[(n, b, c)])
    print("%d,%d,%s,%s" % (n, b, c, ",".join("%.1f" % quantile(xs, (i + 0.5) / NQ) for i in range(NQ))))
