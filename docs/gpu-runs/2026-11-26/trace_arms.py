#!/usr/bin/env python3
"""coll_done lines of NCCLBPF_TRACE runs (emulate-nodes.sh subdirectories): per run, size and
pair NCCL ran, split into the learning phase (all but the last `timed` collectives of the
size) and the timed phase: per-rank medians of gpu_ns, max over ranks, and the median
completion interval (end_n - end_{n-1} on a rank, end = gpu_start + gpu_ns)."""
import collections, glob, gzip, json, os, statistics, sys
root = sys.argv[1]
timed = {int(k): int(v) for k, v in (x.split(":") for x in sys.argv[2].split(","))}
out = gzip.open(sys.argv[3], "wt") if len(sys.argv) > 3 else None
names = {0: "Tree", 1: "Ring"}; protos = {0: "LL", 1: "LL128", 2: "Simple"}
print("| run | size | phase | pair | n | gpu_ns med per rank (us) | max-rank med | max-rank mean | interval med (us) | host_ns med |")
print("|---|---|---|---|---|---|---|---|---|---|")
for d in sorted(glob.glob(root + "/*")):
    by_rank = collections.defaultdict(list)
    for f in glob.glob(d + "/*.jsonl"):
        for line in open(f):
            if '"coll_done"' not in line:
                continue
            r = json.loads(line)
            if out:
                out.write(os.path.basename(d) + " " + line)
            by_rank[r["rank"]].append(r)
    stats = collections.defaultdict(lambda: collections.defaultdict(list))
    for rank, lst in by_rank.items():
        lst.sort(key=lambda r: r["seq"])
        per_size = collections.defaultdict(list)
        for r in lst:
            per_size[r["bytes"]].append(r)
        for b, l in per_size.items():
            t = timed.get(b, 0)
            prev_end = None
            for i, r in enumerate(l):
                phase = "timed" if i >= len(l) - t else "learn"
                pair = "%s/%s" % (names.get(r["algo"], r["algo"]), protos.get(r["proto"], r["proto"]))
                end = r["gpu_start"] + r["gpu_ns"] if r["gpu_ns"] else None
                iv = end - prev_end if end and prev_end else None
                prev_end = end
                stats[(b, phase, pair)][rank].append((r["gpu_ns"], iv, r["host_ns"]))
    for (b, phase, pair), ranks in sorted(stats.items()):
        meds = {rk: statistics.median([g for g, _, _ in v if g]) / 1e3 for rk, v in ranks.items() if any(g for g, _, _ in v)}
        means = {rk: statistics.mean([g for g, _, _ in v if g]) / 1e3 for rk, v in ranks.items() if any(g for g, _, _ in v)}
        ivs = [i for v in ranks.values() for _, i, _ in v if i]
        hs = [h for v in ranks.values() for _, _, h in v if h]
        n = sum(len(v) for v in ranks.values())
        print("| %s | %d KiB | %s | %s | %d | %s | %.1f | %.1f | %s | %.1f |" % (
            os.path.basename(d), b // 1024, phase, pair, n,
            " ".join("%.0f" % meds[k] for k in sorted(meds)), max(meds.values() or [0]),
            max(means.values() or [0]), "%.1f" % (statistics.median(ivs) / 1e3) if ivs else "-",
            statistics.median(hs) / 1e3 if hs else 0))
