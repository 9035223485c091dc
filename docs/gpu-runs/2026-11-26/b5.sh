#!/bin/bash
# GPU call B5 (one GPU, 2 emulated nodes): the bandit's cost at 1-4 MiB where it keeps NCCL's
# choice - KernelCh toggling (bursts) vs every collective (bandit_every: cfg_sample_every=1) -
# and learning in queued chunks of 16 (~w16) vs waited-for collectives; 6 interleaved reps.
B=$PWD/gpuwork/build; W=/tmp/b5; mkdir -p $W; date -u
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_DECISION_LOG
timeout 500 scripts/emulate-nodes.sh --nodes 2 --reps 6 --max-bytes 4M \
  --configs default,Tree/LL,Tree/Simple,Ring/Simple,policy+prof:bandit,policy+prof:$B/policies/bandit_every.bpf.o,policy+prof:bandit~w16 \
  --warmup 3 --iter-bytes 256M --min-iters 8 --policy-warmup 320 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -2 $W/run.txt
for c in policy-prof-bandit policy-prof-bandit_every policy-prof-bandit-w16; do
echo "## $c"; python3 scripts/emulate_report.py $W/samples.csv --bandit $c | grep "^| [0-9]" | awk -F"|" "{print \$2, \$(NF-3), \$(NF-2), \$(NF-1)}"; done | tee $OUT/b5-report.md
python3 gpuwork/decisions_table.py $W/declog 24 | tee $OUT/b5-decisions.md
gzip -c $W/samples.csv > $OUT/b5-samples.csv.gz
