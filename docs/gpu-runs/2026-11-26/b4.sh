#!/bin/bash
# GPU call B4 (one GPU, 2 emulated nodes): where does the bandit config's cost at 1-4 MiB come
# from when it keeps NCCL's choice? tuner plugin alone (noop), + profiler plugin with KernelCh
# on every collective (noop, NCCLBPF_PROFILE=coll), the bandit; 6 interleaved repetitions.
B=$PWD/gpuwork/build; W=/tmp/b4; mkdir -p $W; date -u
export NCCLBPF_PROFILE=coll
timeout 500 scripts/emulate-nodes.sh --nodes 2 --reps 6 --min-bytes 256K --max-bytes 4M \
  --configs default,Tree/Simple,Ring/Simple,policy:noop,policy+prof:noop,policy+prof:bandit \
  --warmup 3 --iter-bytes 256M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -2 $W/run.txt
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit > $OUT/b4-report.md 2>&1; cat $OUT/b4-report.md
python3 - $W/samples.csv <<'PY' | tee $OUT/b4-reps.txt
import csv, statistics as st, collections, sys
d = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    d[(int(r['bytes']), r['config'], int(r['rep']))].append(float(r['time_us']))
cfgs = sorted({k[1] for k in d}); reps = sorted({k[2] for k in d})
for b in sorted({k[0] for k in d}):
    for c in cfgs:
        meds = [st.median(d[(b, c, rp)]) for rp in reps]
        rat = [m / st.median(d[(b, 'default', rp)]) for m, rp in zip(meds, reps)]
        print(b // 1024, 'KiB', c.ljust(22), ' '.join('%7.1f' % m for m in meds), ' vs default per rep:', ' '.join('%.3f' % x for x in rat), ' median ratio %.3f' % st.median(rat))
PY
gzip -c $W/samples.csv > $OUT/b4-samples.csv.gz
