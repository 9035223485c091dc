#!/bin/bash
# GPU call B1 (one GPU, 4 emulated nodes): issue 11, does the bandit learn in the regime it is
# timed in? Forced pairs back to back and isolated (~s1), the bandit learning isolated (w1,
# the old testbed) and in chunks of 16 queued (w16), and the bandit confined to Tree/LL (its own cost).
B=$PWD/gpuwork/build; W=/tmp/b1; mkdir -p $W; nvidia-smi -L; date -u
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_DECISION_LOG
timeout 560 scripts/emulate-nodes.sh --nodes 4 --reps 4 --max-bytes 4M \
  --configs default,Tree/LL,Tree/Simple,Ring/Simple,Ring/LL,default~s1,Tree/LL~s1,Tree/Simple~s1,Ring/Simple~s1,policy+prof:bandit,policy+prof:bandit~w16,Tree/LL@policy+prof:bandit \
  --warmup 3 --iter-bytes 128M --min-iters 8 --policy-warmup 320 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -4 $W/run.txt
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit-w16 > $OUT/b1-report.md 2>&1; head -60 $OUT/b1-report.md
python3 gpuwork/decisions_table.py $W/declog 24 > $OUT/b1-decisions.md; cat $OUT/b1-decisions.md | head -40
gzip -c $W/samples.csv > $OUT/b1-samples.csv.gz
tar czf $OUT/b1-logs.tgz -C $W logs timing.txt run.txt 2>/dev/null
$B/ncclbpf decisions $W/declog/n4-policy-prof-bandit-w16-r0 2>&1 | tail -3
