#!/usr/bin/env python3
"""What the bandit's reward sees: per run, size and pair, the completion-to-completion period
(end - previous end, both GPU-timed and consecutive) per rank, from NCCLBPF_TRACE coll_done
lines; learning phase (all but the last `timed` of the size) and timed phase."""
import collections, glob, json, os, statistics as st, sys
root = sys.argv[1]
timed = {int(k): int(v) for k, v in (x.split(":") for x in sys.argv[2].split(","))}
names = {0: "Tree", 1: "Ring"}; protos = {0: "LL", 1: "LL128", 2: "Simple"}
def tmean(x):
    x = sorted(x); n = len(x)
    if n < 4: return st.mean(x) if x else 0
    q1, q3 = x[n // 4], x[(3 * n) // 4]; lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    y = [v for v in x if lo <= v <= hi]; return st.mean(y)
print("| run | size | phase | pair | periods | per-rank trimmed mean (us) | max over ranks | gpu_ns max-rank med |")
print("|---|---|---|---|---|---|---|---|")
for d in sorted(glob.glob(root + "/*")):
    by_rank = collections.defaultdict(list)
    for f in glob.glob(d + "/*.jsonl"):
        for line in open(f):
            if '"coll_done"' in line:
                r = json.loads(line); by_rank[r["rank"]].append(r)
    stats = collections.defaultdict(lambda: collections.defaultdict(list))
    gst = collections.defaultdict(lambda: collections.defaultdict(list))
    for rank, lst in by_rank.items():
        lst.sort(key=lambda r: r["seq"])
        per_size = collections.defaultdict(list)
        for r in lst: per_size[r["bytes"]].append(r)
        prev = None
        for r in lst:
            l = per_size[r["bytes"]]; idx = l.index(r); t = timed.get(r["bytes"], 0)
            phase = "timed" if idx >= len(l) - t else "learn"
            pair = "%s/%s" % (names.get(r["algo"], r["algo"]), protos.get(r["proto"], r["proto"]))
            end = r["start"] + r["host_ns"]
            if r["gpu_ns"]:
                gst[(r["bytes"], phase, pair)][rank].append(r["gpu_ns"] / 1e3)
                if prev and prev["gpu_ns"] and prev["seq"] == r["seq"] - 1 and prev["algo"] == r["algo"] and prev["proto"] == r["proto"]:
                    stats[(r["bytes"], phase, pair)][rank].append((end - prev["start"] - prev["host_ns"]) / 1e3)
            prev = r
    for key in sorted(stats):
        b, phase, pair = key; ranks = stats[key]
        tm = {rk: tmean(v) for rk, v in ranks.items()}
        g = [st.median(v) for v in gst[key].values()]
        print("| %s | %d KiB | %s | %s | %d | %s | %.1f | %.1f |" % (os.path.basename(d), b // 1024, phase, pair,
              sum(len(v) for v in ranks.values()), " ".join("%.1f" % tm[k] for k in sorted(tm)), max(tm.values()), max(g) if g else 0))
