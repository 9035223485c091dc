#!/bin/bash
# GPU call 16 (issue 28, nvidia-h200-x2): 72863a3 on real NCCL - a process driving two GPUs
# of one communicator (2 nodes x 2 GPUs, --node-process: every node one process with both
# GPUs). g14 before the fix: every rank fell back at collective 0 after the join bound, each
# process logged its two ranks under one rank number, nothing said why. Expected now: the
# WARN naming the cause on every process, no wait of the bound. The bandit, 100 steps,
# NCCL_DEBUG=WARN, NCCLBPF_AGREE_WAIT_MS=30000 (a wait of the bound would show).
# Output: $OUT/g16-nodeproc.txt.
#   usage (device; S = g4-stage.sh's staging of a Release build):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g16.sh
G=g16
. "$(dirname "$0")/preamble.sh"
t1=$(date +%s%N)
NCCL_DEBUG=WARN NCCLBPF_AGREE_WAIT_MS=30000 NCCLBPF_DECISION_LOG=$W/npdeclog timeout 120 $E --gpus 2 --gpus-per-node 2 \
  --node-process --out $W/np --nodes 2 --reps 1 --steps 100 --step $MIXED --workload nodeproc --configs $N > $W/np.txt 2>&1
echo "nodeproc rc=$? $(( ($(date +%s%N) - t1) / 1000000 )) ms"
{ tail -3 $W/np.txt; cat $W/np/timing.txt
  grep -h "WARN" $W/np/logs/*.log | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -20
  for d in $W/npdeclog/*/; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -2 | tr '\n' ' ')"; done
  head -c 400 $W/npdeclog/*/*.jsonl; } > $OUT/$G-nodeproc.txt 2>&1
cat $OUT/$G-nodeproc.txt
