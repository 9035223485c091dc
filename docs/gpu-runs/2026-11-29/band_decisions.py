#!/usr/bin/env python3
"""Per run directory of NCCLBPF_DECISION_LOG (emulate-nodes.sh): per band (collective type,
power of two of the bytes) on rank 0, the pair it ended on, the last collective of the band
(its band_seq + 1) that ran another pair - where exploration ended -, and how many the band
had. The log's seq is the communicator's collective count, so the band's own count is its
position among the band's records.

    band_decisions.py DECLOG_ROOT [--max-explore 80]   -> markdown table; exit 1 over the bound
"""
import collections, glob, json, os, sys

root = sys.argv[1]
bound = int(sys.argv[sys.argv.index("--max-explore") + 1]) if "--max-explore" in sys.argv else None
print("| run | band | collectives | ends on | last other decision (band collective) | pairs seen |")
print("|---|---|---|---|---|---|")
over = 0
for d in sorted(glob.glob(os.path.join(root, "*"))):
    recs = collections.defaultdict(list)
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("rank") != 0 or "bytes" not in r or "seq" not in r:
                continue
            band = (r["coll"], max(r["bytes"], 1).bit_length() - 1)
            recs[band].append((r["seq"], "%s/%s" % (r["algo"] or "auto", r["proto"] or "auto")))
    for band in sorted(recs):
        lst = [p for _, p in sorted(recs[band])]
        final = lst[-1]
        last = max((i + 1 for i, p in enumerate(lst) if p != final), default=0)
        seen = collections.Counter(lst)
        if bound is not None and last > bound:
            over += 1
        print("| %s | %s 2^%d | %d | %s | %d | %s |" % (os.path.basename(d), band[0], band[1], len(lst),
              final, last, ", ".join("%s x%d" % kv for kv in seen.most_common())))
sys.exit(1 if over else 0)
