#!/usr/bin/env python3
"""Tables from bench/gpu/net-emulate.sh: per node count and size, the median bus bandwidth
of each config over all repetitions, and the ratios ncclbpf/socket and wrap/standalone.
Errors (wrong results) are summed per config.

Then, per ratio, the paired view: repetition r of both configs ran back to back (the script
interleaves them), so the ratio of their bus bandwidths in the same repetition cancels the
drift of the machine. Per size: the median of the paired ratios and the geometric mean with
a 95 % bootstrap interval (resampling repetitions); over all sizes: the geometric mean of
every paired ratio with a 95 % interval from resampling whole repetitions (a repetition's
sizes stay together). Verdict against a budget (default 0.99): "within" when the interval's
lower end is >= the budget, "over" when its upper end is < the budget, else "not separated
from noise (more repetitions)".

    net_report.py OUT_DIR [OUT_DIR ...] [--budget 0.99]

Several OUT_DIRs (separate invocations of the script, e.g. to add repetitions under the
device's per-command time limit) are pooled; their repetitions stay distinct.
"""
import csv
import glob
import math
import os
import random
import statistics
import sys
from collections import defaultdict

BOOT = 4000


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def boot_ci(blocks, rng):
    """95 % interval of the geometric mean of all ratios in the blocks, resampling blocks."""
    if len(blocks) < 2:
        return float("nan"), float("nan")
    logs = [[math.log(x) for x in b] for b in blocks]
    stats = []
    for _ in range(BOOT):
        pick = [logs[rng.randrange(len(logs))] for _ in logs]
        flat = [x for b in pick for x in b]
        stats.append(sum(flat) / len(flat))
    stats.sort()
    return math.exp(stats[int(0.025 * BOOT)]), math.exp(stats[int(0.975 * BOOT) - 1])


def verdict(lo, hi, budget):
    if math.isnan(lo):
        return "too few repetitions"
    if lo >= budget:
        return f"within budget (lower end >= {budget})"
    if hi < budget:
        return f"over budget (upper end < {budget})"
    return "not separated from noise (more repetitions)"


def paired_tables(per_rep, ratios, budget):
    """per_rep: (cfg, nodes, bytes, rep) -> busbw."""
    rng = random.Random(1)
    for a, b in ratios:
        for nodes in sorted({k[1] for k in per_rep}):
            sizes = sorted({k[2] for k in per_rep if k[1] == nodes})
            reps = sorted({k[3] for k in per_rep if k[1] == nodes})
            by_rep = defaultdict(list)   # rep -> ratios of its sizes
            rows = []
            for size in sizes:
                rs = []
                for r in reps:
                    x, y = per_rep.get((a, nodes, size, r)), per_rep.get((b, nodes, size, r))
                    if x and y and x > 0 and y > 0:
                        rs.append(x / y)
                        by_rep[r].append(x / y)
                if rs:
                    lo, hi = boot_ci([[v] for v in rs], rng)
                    rows.append((size, len(rs), statistics.median(rs), geomean(rs), lo, hi))
            if not rows:
                continue
            print(f"\n### {nodes} emulated nodes, paired {a}/{b} (same repetition)\n")
            print(f"| size | pairs | median | geomean | 95% CI |")
            print("|---|---|---|---|---|")
            for size, n, med, gm, lo, hi in rows:
                print(f"| {human(size)} | {n} | {med:.3f} | {gm:.3f} | [{lo:.3f}, {hi:.3f}] |")
            blocks = [v for _, v in sorted(by_rep.items())]
            allr = [x for blk in blocks for x in blk]
            lo, hi = boot_ci(blocks, rng)
            print(f"\nall sizes: geomean {a}/{b} = {geomean(allr):.4f}, 95% CI [{lo:.4f}, {hi:.4f}] "
                  f"({len(blocks)} repetitions x {len(rows)} sizes): {verdict(lo, hi, budget)}")


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def main():
    args = sys.argv[1:]
    budget = 0.99
    if "--budget" in args:
        i = args.index("--budget")
        if i + 1 >= len(args):
            print(__doc__, file=sys.stderr)
            return 2
        budget = float(args[i + 1])
        del args[i:i + 2]
    if not args or any(a.startswith("-") for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    bw = defaultdict(list)        # (cfg, nodes, bytes) -> busbw samples
    per_rep = {}                  # (cfg, nodes, bytes, rep) -> busbw
    errors = defaultdict(int)
    cfgs = set()
    paths = [(k, p) for k, out in enumerate(args)
             for p in sorted(glob.glob(os.path.join(out, "*", "r*", "summary.csv")))]
    for k, path in paths:
        cfg = path.split(os.sep)[-3]
        rep = f"{k}:{path.split(os.sep)[-2]}"
        cfgs.add(cfg)
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (cfg, int(row["nodes"]), int(row["bytes"]))
                bw[key].append(float(row["busbw_GBs"]))
                per_rep[key + (rep,)] = float(row["busbw_GBs"])
                errors[cfg] += int(row["errors"])
    if not bw:
        print(f"no summary.csv under {' '.join(args)} (*/r*/)", file=sys.stderr)
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
    paired_tables(per_rep, ratios, budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
