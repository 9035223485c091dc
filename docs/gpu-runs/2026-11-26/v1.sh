#!/bin/bash
# GPU call V1 (one GPU, 2 and 4 emulated nodes): the rewritten closed loops (adaptive_channels,
# slo_enforcer: branch-free bucket and arg-min, verification 13x / 10x faster) on real NCCL in
# strict mode - results correct, decision logs consistent, no E-RANK-LOCAL or fallback.
B=$PWD/gpuwork/build; W=/tmp/v1; mkdir -p $W; date -u
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_DECISION_LOG
NCCL_DEBUG=WARN timeout 300 scripts/emulate-nodes.sh --nodes 2,4 --reps 2 --max-bytes 16M \
  --configs default,policy+prof:adaptive_channels,policy+prof:slo_enforcer \
  --warmup 3 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -1 $W/run.txt
echo "runs with all results correct: $(grep -l 'all results correct' $W/logs/*.log | wc -l) of $(ls $W/logs/*.log | wc -l)"
echo "WARN lines: $(grep -h WARN $W/logs/*.log | wc -l); E-RANK-LOCAL: $(grep -h E-RANK-LOCAL $W/logs/*.log | wc -l); fallback at a collective: $(grep -h 'fallback at [0-9]' $W/logs/*.log | wc -l)"
grep -h WARN $W/logs/*.log | sed 's/^[^ ]* //' | sort | uniq -c | head -5
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-adaptive_channels | grep "^| [0-9]" | awk -F"|" '{print $2, $3, $4, $5}'
