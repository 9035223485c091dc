#!/bin/bash
# GPU call B6 (one GPU, 2 emulated nodes, 4 KiB and 1 MiB): the periods the bandit learns from
# (NCCLBPF_TRACE timelines) against the harness's times of the same pairs.
B=$PWD/gpuwork/build; W=/tmp/b6; mkdir -p $W; date -u
export NCCLBPF_TRACE=$W/trace NCCLBPF_PROFILE=coll NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_TRACE $NCCLBPF_DECISION_LOG
timeout 300 scripts/emulate-nodes.sh --nodes 2 --reps 3 --min-bytes 4K --max-bytes 1M --step-factor 256 \
  --configs default,Tree/LL,Ring/LL,Tree/Simple,Ring/Simple,policy+prof:bandit,policy+prof:bandit~w16 \
  --warmup 3 --iter-bytes 256M --min-iters 8 --policy-warmup 320 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -1 $W/run.txt
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit | tee $OUT/b6-report.md
python3 gpuwork/period_arms.py $W/trace 4096:100,1048576:100 | tee $OUT/b6-periods.md
python3 gpuwork/decisions_table.py $W/declog 24
