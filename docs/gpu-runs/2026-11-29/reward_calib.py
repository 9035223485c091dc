#!/usr/bin/env python3
"""What the bandit's reward sees against what a collective costs the step (issue 22).

Input: NCCLBPF_TRACE directories (emulate-nodes.sh runs of a --step workload, every
collective GPU-timed), coll_done lines. All ranks run on one host, so their CLOCK_MONOTONIC
timestamps compare: per collective i (ordered by cseq, the communicator's count) and rank r,
end_r(i) = gpu_start + gpu_ns, kstart_r(i) = gpu_start, enq_r(i) = start.

  truth   G(i) = max_r end_r(i) - max_r end_r(i-1): the step's time spent on i (collectives
          inside a step run back to back; the first of each step is left out)
  period  max_r (end_r(i) - end_r(i-1)), and MIN; "host": the completions as the host saw them
          (start + host_ns: the 2026-11-26 bandit's clock)
  hold    kstart_r(i+1) - kstart_r(i) less max(0, enq_r(i+1) - end_r(i)) (the host's lateness):
          the time i holds the stream (its kernel and the traffic after it), MAX / MIN over ranks
  ready   end_r(i) - ready_r(i), ready = end_r(i-1) + max(0, kstart_r(i) - max(end_r(i-1), enq_r(i)))
          reduced with MAX, MIN and their midpoint      (the new bandit, cfg_rank_mix 0/100/50)
  stagger max_r end_r(i) - min_r end_r(i)

Per run, band (type, bytes) and pair: medians over its collectives, and per band whether each
estimator orders the pairs (with at least 3 collectives) as the truth does.

    reward_calib.py TRACE_ROOT CALLS_PER_STEP [--sweep SAMPLES.csv]
"""
import collections, glob, json, os, statistics as st, sys

root, ncalls = sys.argv[1], int(sys.argv[2])
# --sweep SAMPLES.csv: the forced pairs measured one size at a time (emulate-nodes.sh), the
# reference each estimator's order of the pairs is checked against (the oracle is built from it)
ref = collections.defaultdict(list)
if "--sweep" in sys.argv:
    import csv
    for row in csv.DictReader(open(sys.argv[sys.argv.index("--sweep") + 1])):
        if row.get("policy") or row["algo"] == "default":
            continue
        ref[(row["coll"], int(row["nnodes"]), int(row["bytes"]), "%s/%s" % (row["algo"], row["proto"]))].append(
            float(row["time_us"]))
collname = {2: "AllGather", 3: "ReduceScatter", 4: "AllReduce"}
names = {0: "Tree", 1: "Ring", 6: "PAT"}
protos = {0: "LL", 1: "LL128", 2: "Simple"}
est_names = ["truth G", "hold max", "hold min", "period max", "period min", "period host max", "ready max",
             "ready min", "ready mid"]
print("| run | band | pair | n | " + " | ".join(e + " (us)" for e in est_names) + " | stagger (us) | one size at a time (us) |")
print("|---|---|---|---|" + "---|" * (len(est_names) + 2))
agree = collections.Counter()
miss = collections.defaultdict(list)
dev = collections.defaultdict(list)
total = collections.Counter()
for d in sorted(glob.glob(os.path.join(root, "*"))):
    per = collections.defaultdict(dict)  # cseq -> rank -> rec
    for f in glob.glob(os.path.join(d, "*.jsonl")):
        for line in open(f):
            if '"coll_done"' not in line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not r.get("gpu_ns") or "cseq" not in r:
                continue
            per[r["cseq"]][r["rank"]] = r
    if not per:
        continue
    nranks = max(len(v) for v in per.values())
    vals = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    for c in sorted(per):
        cur, prev, nxt = per[c], per.get(c - 1), per.get(c + 1)
        if c % ncalls == 0 or not prev or not nxt or len(cur) < nranks or len(prev) < nranks or len(nxt) < nranks:
            continue
        r0 = next(iter(cur.values()))
        band = "%s %d B" % (collname.get(r0["coll"], r0["coll"]), r0["bytes"])
        pair = "%s/%s" % (names.get(r0["algo"], r0["algo"]), protos.get(r0["proto"], r0["proto"]))
        end = {k: v["gpu_start"] + v["gpu_ns"] for k, v in cur.items()}
        pend = {k: v["gpu_start"] + v["gpu_ns"] for k, v in prev.items()}
        ready = {}
        for k, v in cur.items():
            wait = v["gpu_start"] - max(pend[k], v["start"])
            ready[k] = pend[k] + max(0, wait)
        rr = [end[k] - ready[k] for k in cur]
        # hold: this kernel's start to the next kernel's start, less the host's lateness
        hold = []
        for k, v in cur.items():
            gap = max(0, nxt[k]["gpu_start"] - end[k])
            late = max(0, nxt[k]["start"] - end[k])
            hold.append(end[k] - v["gpu_start"] + max(0, gap - late))
        e = vals[band][pair]
        e["truth G"].append(max(end.values()) - max(pend.values()))
        e["hold max"].append(max(hold))
        e["hold min"].append(min(hold))
        e["period max"].append(max(end[k] - pend[k] for k in cur))
        e["period min"].append(min(end[k] - pend[k] for k in cur))
        e["period host max"].append(max(v["start"] + v["host_ns"] - prev[k]["start"] - prev[k]["host_ns"]
                                        for k, v in cur.items()))
        e["ready max"].append(max(rr))
        e["ready min"].append(min(rr))
        e["ready mid"].append((max(rr) + min(rr)) / 2)
        e["stagger"].append(max(end.values()) - min(end.values()))
    for band in sorted(vals):
        med = {}
        for pair in sorted(vals[band]):
            e = vals[band][pair]
            n = len(e["truth G"])
            med[pair] = {k: st.median(v) / 1e3 for k, v in e.items()}
            cname, nbytes = band.split(" ")[0], int(band.split(" ")[1])
            rv = ref.get((cname, nranks, nbytes, pair))
            med[pair]["ref"] = st.median(rv) if rv else None
            print("| %s | %s | %s | %d | %s | %.1f | %s |" % (os.path.basename(d), band, pair, n,
                  " | ".join("%.1f" % med[pair][k] for k in est_names), med[pair]["stagger"],
                  "%.1f" % med[pair]["ref"] if rv else "-"))
        truth = "ref" if ref else "truth G"
        ok = [p for p in med if len(vals[band][p]["truth G"]) >= 3 and med[p].get(truth) is not None]
        if len(ok) >= 2:
            order = sorted(ok, key=lambda p: med[p][truth])
            for p in ok:
                for k in est_names:
                    if med[p].get("ref"):
                        dev[k].append(abs(med[p][k] / med[p]["ref"] - 1))
            for k in est_names[1:]:
                total[k] += 1
                hit = sorted(ok, key=lambda p: med[p][k])[0] == order[0]
                agree[k] += hit
                if not hit:
                    miss[k].append(band)
print()
print("Bands whose fastest pair (by %s) each estimator also ranks first: " %
      ("the one-size sweep" if ref else "the truth G") +
      ", ".join("%s %d/%d" % (k, agree[k], total[k]) for k in est_names[1:]))
if dev:
    print("Median |estimate / one size at a time - 1| over pairs with >= 3 collectives: " +
          ", ".join("%s %.2f" % (k, st.median(dev[k])) for k in est_names if dev[k]))
for k in est_names[1:]:
    if miss[k]:
        print("  %s misranks: %s" % (k, "; ".join(miss[k])))
