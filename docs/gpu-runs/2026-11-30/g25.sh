#!/bin/bash
# GPU call 25 (issues 22 and 28, nvidia-h200-x2): the bandit as of the ninth session (the LL
# prior 380d3d1/2afdb87, the round robin's fix bfa97b9) on 2 GPUs as 2 nodes (T1 of results
# 20: each node one process on its own GPU, its own NCCL_HOSTID, sockets between them, no
# GPU sharing), against main a41a026's bandit (bandit0.bpf.o; the one before the LL prior is
# g15's), 5 interleaved repetitions:
#   the forced-pair sweep (AllReduce Tree and Ring pairs; AllGather/ReduceScatter Ring pairs,
#   separately: NCCL refuses Tree for them), the oracle and the offline table from it;
#   the mixed and FSDP steps, 500 steps: default, oracle, offline table, bandit, bandit0;
#   the overlap step with the host far ahead, 700 steps: default, bandit, bandit0.
# Outputs to $OUT: g25-sweep.md, g25-report.md, g25-decisions.md, g25-consistency.txt,
# g25-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build with bandit0.bpf.o in
#   S/build/policies, this directory copied to S/docs/gpu-runs/2026-11-30):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g25.sh
G=g25
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ -f $B/policies/bandit0.bpf.o ] || { echo "g25: no bandit0.bpf.o staged"; exit 1; }
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "g25: needs 2 GPUs"; exit 1; }
N0=policy+prof:$B/policies/bandit0.bpf.o
E="$E --gpus 2 --no-mps"
stage sweep-ar 120 --nodes 2 --coll allreduce --min-bytes 4K --max-bytes 4M --step-factor 4 --reps 2 \
  --iters 100 --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple
stage sweep-agrs 120 --nodes 2 --coll allgather,reducescatter --min-bytes 256K --max-bytes 4M --step-factor 4 \
  --reps 2 --iters 100 --configs default,Ring/LL,Ring/Simple
python3 $S/scripts/emulate_report.py $W/st/samples.csv --title "{nodes} nodes (2 GPUs)" > $OUT/$G-sweep.md 2>&1
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/st/samples.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; }
$B/ncclbpf tune -o $W/tuned.bpf.o --json $W/st/samples.csv > $W/tuned.json 2> $W/tuned.err || { echo "TUNE FAILED"; cat $W/tuned.err; }
O=policy:$W/oracle.bpf.o; T=policy:$W/tuned.bpf.o
stage mixed 150 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$T,$N,$N0
stage fsdp 150 --nodes 2 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$T,$N,$N0
stage overlap 150 --nodes 2 --reps 5 --steps 700 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N,$N0
finish policy-prof-bandit
