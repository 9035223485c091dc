#!/bin/bash
# GPU call 26 (issues 23 and 28, nvidia-h200-x2): the agreement's leader stopped on real NCCL,
# after the ninth session's stopped-leader fixes (e08a3d3: a fallback point closes only the
# versions activating at or after it; a member that said BYE keeps its ACKs). 2 GPUs as 2
# nodes (T1), the bandit (tuner + profiler + agreement, NCCLBPF_AGREE_WAIT_MS=1000) on the
# mixed step; 3 s in, rank 0's process - the agreement's leader - is stopped (SIGSTOP) for
# 2 s, twice the bound, then continued:
#   A: the host waits for each step (4,000 steps);
#   B: the host never waits (--step-queued, ~130 steps ahead; 3,000 steps): the other rank's
#      tuner keeps deciding while the leader is stopped.
# Each: the job completes; `ncclbpf decisions` on the logs; the WARNs; step times.
# Outputs to $OUT: g26-fault.txt, g26-fault-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build, this directory copied to
#   S/docs/gpu-runs/2026-11-30):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g26.sh
G=g26
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "g26: needs 2 GPUs"; exit 1; }
fault() { # NAME STEPS EXTRA...
  local name=$1 steps=$2; shift 2
  local F=$W/$name; mkdir -p $F/declog
  ( NCCLBPF_AGREE_WAIT_MS=1000 NCCLBPF_DECISION_LOG=$F/declog timeout 150 $S/scripts/emulate-nodes.sh \
      --bench $W/gb --build $B --out $F/st --gpus 2 --no-mps --nodes 2 --reps 1 --steps $steps \
      --step $MIXED --workload fault "$@" --configs $N > $F/run.txt 2>&1; echo "fault run rc=$?" >> $F/run.txt ) &
  local FP=$! P=
  sleep 3
  # the harness forks its rank processes in rank order: the parent, then rank 0, rank 1
  for _ in $(seq 100); do
    P=$(pgrep -f "$W/gb --procs 2" | sort -n | sed -n 2p); [ -n "$P" ] && break; sleep 0.1
  done
  echo "== $name: stopping pid $P (rank 0, the leader) at $(date +%s.%N)"; kill -STOP $P; sleep 2; kill -CONT $P
  echo "continued at $(date +%s.%N)"; wait $FP
  tail -3 $F/run.txt
  echo "the stopped process's decision log: $(ls $F/declog/*/decisions-*-$P.jsonl 2>/dev/null | head -1 | xargs -r head -c 200)"
  grep -h "WARN\|fell back\|fallback" $F/st/logs/*.log | sed 's/^[^ ]* //' | sort | uniq -c | head -20
  for d in $F/declog/*/; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -2 | tr '\n' ' ')"; done
  python3 - $F/st/steps.csv <<'PY'
import csv, sys, statistics
t = [float(r["time_us"]) for r in csv.DictReader(open(sys.argv[1]))]
print(f"steps: {len(t)}, median {statistics.median(t):.0f} us, max {max(t)/1000:.0f} ms, "
      f"steps over 100 ms: {sum(x > 1e5 for x in t)}")
PY
}
{ fault host-waits 4000; fault host-queued 3000 --step-queued; } > $OUT/$G-fault.txt 2>&1
cat $OUT/$G-fault.txt
tar czf $OUT/$G-fault-data.tgz -C $W host-waits host-queued 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
