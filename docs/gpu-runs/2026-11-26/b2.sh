#!/bin/bash
# GPU call B2 (one GPU, 4 emulated nodes): what the bandit's reward sees. Timelines
# (NCCLBPF_TRACE, coll mode) of the bandit and of the bandit confined to one pair, 256 KiB-4 MiB.
B=$PWD/gpuwork/build; W=/tmp/b2; mkdir -p $W; date -u
export NCCLBPF_TRACE=$W/trace NCCLBPF_PROFILE=coll NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_TRACE $NCCLBPF_DECISION_LOG
timeout 300 scripts/emulate-nodes.sh --nodes 4 --reps 2 --min-bytes 256K --max-bytes 4M \
  --configs Tree/Simple@policy+prof:bandit,Ring/Simple@policy+prof:bandit,policy+prof:bandit,policy+prof:bandit~w16 \
  --warmup 3 --iter-bytes 128M --min-iters 8 --policy-warmup 320 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -2 $W/run.txt
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit-w16 > $OUT/b2-report.md 2>&1; cat $OUT/b2-report.md
python3 gpuwork/trace_arms.py $W/trace 262144:100,1048576:100,4194304:32 $OUT/b2-colldone.txt.gz > $OUT/b2-arms.md; cat $OUT/b2-arms.md
python3 gpuwork/decisions_table.py $W/declog 24
ls -la $W/trace/* | head -5; du -sh $W/trace
