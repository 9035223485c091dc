#!/bin/bash
# GPU call B7 (one GPU, 2 emulated nodes, 1 and 4 MiB): what the bandit costs where it keeps
# NCCL's choice - with and without the agreement layer (~a0) - against the default; 8 reps.
B=$PWD/gpuwork/build; W=/tmp/b7; mkdir -p $W; date -u
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_DECISION_LOG
timeout 500 scripts/emulate-nodes.sh --nodes 2 --reps 8 --min-bytes 1M --max-bytes 4M \
  --configs default,policy:noop,policy+prof:bandit,policy+prof:bandit~a0 \
  --warmup 3 --iter-bytes 256M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -1 $W/run.txt
python3 - $W/samples.csv <<'PY' | tee $OUT/b7-reps.txt
import csv, statistics as st, collections, sys
d = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    d[(int(r['bytes']), r['config'], int(r['rep']))].append(float(r['time_us']))
cfgs = sorted({k[1] for k in d}); reps = sorted({k[2] for k in d})
for b in sorted({k[0] for k in d}):
    for c in cfgs:
        meds = [st.median(d[(b, c, rp)]) for rp in reps]
        rat = [m / st.median(d[(b, 'default', rp)]) for m, rp in zip(meds, reps)]
        print(b // 1024, 'KiB', c.ljust(24), ' '.join('%7.1f' % m for m in meds), ' | vs default:', ' '.join('%.3f' % x for x in rat), ' median %.3f' % st.median(rat))
PY
python3 gpuwork/decisions_table.py $W/declog 24 | tee $OUT/b7-decisions.md
gzip -c $W/samples.csv > $OUT/b7-samples.csv.gz
