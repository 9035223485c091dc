#!/bin/bash
# GPU call 12 (issue 28, nvidia-h200-x2: two H200s, NVLink between them): the multi-GPU
# confirmation on 2 GPUs as 2 nodes (scripts/emulate-nodes.sh --gpus 2: each node one process
# on its own GPU, its own NCCL_HOSTID, sockets over loopback between them; no GPU sharing).
#  1. forced-pair sweep on this topology (AllReduce, AllGather, ReduceScatter 4 KiB-4 MiB,
#     Tree/Ring x LL/Simple and the default, 2 reps) -> the static per-size oracle (gates
#     open) and the offline tuner's table (`ncclbpf tune -o`, default gates);
#  2. the mixed AllReduce step and the FSDP-like AllGather/ReduceScatter step, 500 steps,
#     5 interleaved repetitions: default, oracle, offline table, bandit (decision logs on);
#  3. agreement under a fault with real NCCL: the bandit (agreement wait bound 1,000 ms) on
#     the mixed step, 4,000 steps; 3 s in, node 1's process is stopped (SIGSTOP) for 2 s =
#     2x the bound, then continued. The job must complete with identical decisions on both
#     ranks or a consistent fallback (`ncclbpf decisions`).
# Outputs to $OUT: g12-report.md, g12-sweep.md, g12-decisions.md, g12-consistency.txt,
# g12-fault.txt, g12-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g12.sh
G=g12
. "$(dirname "$0")/preamble.sh"
nvidia-smi topo -m | head -4
E="$E --gpus 2 --no-mps"
# 1. the sweep on this topology, the oracle and the offline table from it
stage sweep 200 --nodes 2 --coll allreduce,allgather,reducescatter --min-bytes 4K --max-bytes 4M \
  --step-factor 4 --reps 2 --iters 100 --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple
python3 $S/scripts/emulate_report.py $W/st/samples.csv > $OUT/$G-sweep.md 2>&1
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/st/samples.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; }
$B/ncclbpf tune -o $W/tuned.bpf.o --json $W/st/samples.csv > $W/tuned.json 2> $W/tuned.err || { echo "TUNE FAILED"; cat $W/tuned.err; }
O=policy:$W/oracle.bpf.o; T=policy:$W/tuned.bpf.o
# 2. the steps
stage mixed 170 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$T,$N
stage fsdp 170 --nodes 2 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$T,$N
# 3. one rank stopped for 2x the agreement bound mid-run
F=$W/fault; mkdir -p $F/declog
( NCCLBPF_AGREE_WAIT_MS=1000 NCCLBPF_DECISION_LOG=$F/declog timeout 120 $S/scripts/emulate-nodes.sh \
    --bench $W/gb --build $B --out $F/st --gpus 2 --no-mps --nodes 2 --reps 1 --steps 4000 \
    --step $MIXED --workload fault --configs $N > $F/run.txt 2>&1; echo "fault run rc=$?" >> $F/run.txt ) &
FP=$!
sleep 3
for _ in $(seq 100); do P=$(pgrep -f "$W/gb --procs 2" | sort -n | tail -1); [ -n "$P" ] && break; sleep 0.1; done
echo "stopping pid $P (node 1's process) at $(date +%s.%N)"; kill -STOP $P; sleep 2; kill -CONT $P
echo "continued at $(date +%s.%N)"; wait $FP
{ cat $F/run.txt | tail -5; grep -h "WARN\|fell back\|fallback" $F/st/logs/*.log | sort | uniq -c | head -20
  for d in $F/declog/*/; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -2 | tr '\n' ' ')"; done
  python3 - $F/st/steps.csv <<'PY'
import csv, sys, statistics
t = [float(r["time_us"]) for r in csv.DictReader(open(sys.argv[1]))]
print(f"fault run: {len(t)} steps, median {statistics.median(t):.0f} us, max {max(t)/1000:.0f} ms")
PY
} > $OUT/$G-fault.txt 2>&1; cat $OUT/$G-fault.txt
tar czf $OUT/$G-fault-data.tgz -C $F . 2>/dev/null
cp $W/oracle.json $W/tuned.json $OUT/ 2>/dev/null
finish policy-prof-bandit
