#!/usr/bin/env python3
"""Markdown tables from the testbed's samples (scripts/emulate-nodes.sh --samples).

    emulate_report.py SAMPLES.csv [--bandit CONFIG] [--default CONFIG]
                      [--tuned TUNE.json --check-reps 1,3]

Per node count and size: the median of every config over all samples of all repetitions,
the best forced pair, and the bandit against the best pair and against NCCL's default with
a one-sided Mann-Whitney U test (H1: the bandit is slower; normal approximation with tie
correction) -- this testbed's run-to-run spread at small sizes is about +-30 %, so the
verdict comes from the test over all samples, not from single medians. The last column
tests the same at the level of repetitions (exact permutation test on per-repetition
medians): every repetition is a fresh set of processes and communicator whose state (rings,
trees, channels, host placement) moves all its samples together, so samples of one
repetition are not independent and the test over all samples overstates significance.

--tuned: decisions of `ncclbpf tune --json` trained on some repetitions; the table checks
them on the held-out repetitions given by --check-reps (chosen config vs default there).
Pure Python (no SciPy on the GPU machine).
"""
import argparse
import csv
import itertools
import json
import math
import statistics
import sys
from collections import defaultdict

PAIRS = [f"{a}-{p}" for a in ("Tree", "Ring") for p in ("LL", "LL128", "Simple")]


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def mwu_greater(x, y):
    """One-sided p that x is stochastically greater than y (normal approx., tie-corrected)."""
    n1, n2 = len(x), len(y)
    if not n1 or not n2:
        return float("nan")
    allv = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks = [0.0] * len(allv)
    ties = 0.0
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1][0] == allv[i][0]:
            j += 1
        r = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, allv) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 0.5
    z = (u1 - n1 * n2 / 2 - 0.5) / math.sqrt(var)  # continuity correction
    return 0.5 * math.erfc(z / math.sqrt(2))


def rep_medians(pairs):
    """Median per repetition of [(rep, time)]."""
    by = defaultdict(list)
    for r, v in pairs:
        by[r].append(v)
    return [statistics.median(v) for v in by.values()]


def perm_greater(x, y):
    """Exact one-sided permutation p that the values x are larger than y (difference of
    means), over every split of the pooled values: for per-repetition medians, where each
    repetition is one unit (fresh processes and communicator) and the samples within one
    share its state."""
    pooled = list(x) + list(y)
    n, k = len(pooled), len(x)
    if not x or not y or math.comb(n, k) > 200000:
        return float("nan")
    obs = sum(x) / k - sum(y) / (n - k)
    tot = sum(pooled)
    hits = cnt = 0
    for idx in itertools.combinations(range(n), k):
        sx = sum(pooled[i] for i in idx)
        d = sx / k - (tot - sx) / (n - k)
        hits += d >= obs - 1e-12
        cnt += 1
    return hits / cnt


def load(path):
    data = defaultdict(list)  # (nnodes, bytes, config) -> [(rep, time)]
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (int(row["nnodes"]), int(row["bytes"]), row["config"])
            data[key].append((int(row["rep"]), float(row["time_us"])))
    return data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    ap.add_argument("--bandit", default="policy-prof-bandit")
    ap.add_argument("--default", default="default")
    ap.add_argument("--tuned")
    ap.add_argument("--check-reps", default="")
    # the testbed in the table titles; {nodes} is replaced by the node count
    ap.add_argument("--title", default="{nodes} emulated nodes on one GPU")
    a = ap.parse_args()
    data = load(a.samples)
    nodes = sorted({k[0] for k in data})
    configs = sorted({k[2] for k in data}, key=lambda c: (c != a.default, c not in PAIRS, PAIRS.index(c) if c in PAIRS else 0, c))
    reps = sorted({r for v in data.values() for r, _ in v})
    bad = 0
    for nn in nodes:
        sizes = sorted({k[1] for k in data if k[0] == nn})
        print()
        print(f"### Testbed: {a.title.replace('{nodes}', str(nn))}, AllReduce ({len(reps)} interleaved repetitions; median µs over all samples)")
        print()
        print("| size | " + " | ".join(configs) + " | best pair | bandit / best pair (p slower) | bandit / default (p slower) | per-rep p slower: best, default |")
        print("|" + "---|" * (len(configs) + 5))
        for b in sizes:
            t = {c: [v for _, v in data.get((nn, b, c), [])] for c in configs}
            med = {c: statistics.median(v) for c, v in t.items() if v}
            pairs = [c for c in PAIRS if c in med]
            best = min(pairs, key=lambda c: med[c]) if pairs else None
            cells = [human(b)] + [f"{med[c]:.1f}" if c in med else "–" for c in configs]
            cells.append(best or "–")
            if a.bandit in med and best:
                pb = mwu_greater(t[a.bandit], t[best])
                r = med[a.bandit] / med[best]
                cells.append(f"{r:.3f} (p={pb:.3g}){' **slower**' if pb < 0.01 else ''}")
                bad += pb < 0.01
            else:
                cells.append("–")
            if a.bandit in med and a.default in med:
                pd = mwu_greater(t[a.bandit], t[a.default])
                cells.append(f"{med[a.bandit] / med[a.default]:.3f} (p={pd:.3g}){' **slower**' if pd < 0.01 else ''}")
                bad += pd < 0.01
            else:
                cells.append("–")
            if a.bandit in med and a.default in med and best:
                rb = rep_medians(data[(nn, b, a.bandit)])
                cells.append(f"{perm_greater(rb, rep_medians(data[(nn, b, best)])):.3g}, "
                             f"{perm_greater(rb, rep_medians(data[(nn, b, a.default)])):.3g}")
            else:
                cells.append("–")
            print("| " + " | ".join(cells) + " |")
    if a.tuned:
        check = {int(x) for x in a.check_reps.split(",") if x}
        with open(a.tuned) as f:
            text = f.read().strip()
        # ncclbpf.tune/1: {"schema", "ranges": [...]}; older builds printed the bare array
        doc = json.loads(text) if text.startswith(("[", "{\"schema\"")) else [json.loads(l) for l in text.splitlines() if l.strip()]
        rules = doc["ranges"] if isinstance(doc, dict) else doc
        print()
        print(f"### Offline tuner decisions checked on held-out repetitions {sorted(check)}")
        print()
        print("| nodes | size | tuner's choice | held-out median µs | default median µs | ratio | p (choice slower) |")
        print("|---|---|---|---|---|---|---|")
        for nn in nodes:
            for b in sorted({k[1] for k in data if k[0] == nn}):
                rule = next((r for r in rules if r["nnodes"] == nn and r["min_bytes"] <= b <= r["max_bytes"]), None)
                if not rule:
                    continue
                cfg = a.default if rule["algo"] == "default" else f"{rule['algo']}-{rule['proto']}"
                ho = [v for rp, v in data.get((nn, b, cfg), []) if rp in check]
                hd = [v for rp, v in data.get((nn, b, a.default), []) if rp in check]
                if not ho or not hd:
                    continue
                p = mwu_greater(ho, hd)
                print(f"| {nn} | {human(b)} | {cfg} | {statistics.median(ho):.1f} | {statistics.median(hd):.1f} | "
                      f"{statistics.median(ho) / statistics.median(hd):.3f} | {p:.3g} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
