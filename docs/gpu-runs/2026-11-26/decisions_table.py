#!/usr/bin/env python3
"""Per run directory (emulate-nodes.sh with NCCLBPF_DECISION_LOG): the pair each rank-0 log
ran over the last N decisions of every size (the timed phase), as 'pair xcount'."""
import collections, glob, json, os, sys
root, last = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 24
rows = collections.defaultdict(dict)
for d in sorted(glob.glob(root + "/*")):
    recs = collections.defaultdict(list)
    for f in glob.glob(d + "/*.jsonl"):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("rank") != 0 or "bytes" not in r:
                continue
            recs[r["bytes"]].append((r["seq"], "%s/%s" % (r["algo"] or "auto", r["proto"] or "auto")))
    name = os.path.basename(d)
    for b, lst in recs.items():
        lst.sort()
        c = collections.Counter(p for _, p in lst[-last:])
        rows[name][b] = " ".join("%s x%d" % kv for kv in c.most_common(2))
sizes = sorted({b for r in rows.values() for b in r})
print("| run | " + " | ".join("%d KiB" % (b // 1024) for b in sizes) + " |")
print("|---" * (len(sizes) + 1) + "|")
for name in sorted(rows):
    print("| %s | " % name + " | ".join(rows[name].get(b, "") for b in sizes) + " |")
