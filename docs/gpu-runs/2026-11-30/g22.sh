#!/bin/bash
# GPU call 22 (issue 22, one H200, emulated nodes): the bandit with LL arms screened with one
# sample from 1 MiB on whatever NCCL's estimate (cfg_ll_far_from; g17-g21 put the start cost
# with a host far ahead in the screening turns of Ring/LL at 1-4 MiB, which NCCL's table puts
# under 2x, so 7af1844's far rule did not apply). Against main 2ea9e02's bandit (bandit0.bpf.o,
# staged beside), same library, 5 interleaved repetitions each:
#   overlap --step-queued, 2 and 4 nodes, 300 steps: default, bandit, bandit0;
#   the mixed step with the host waiting, 2 nodes, 500 steps: default, the oracle, both;
#   the FSDP step, 4 nodes, 500 steps: default, the oracle, both.
# Outputs to $OUT: g22-report.md, g22-decisions.md, g22-consistency.txt, g22-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build with bandit0.bpf.o in
#   S/build/policies, this directory copied to S/docs/gpu-runs/2026-11-30):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g22.sh
G=g22
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ -f $B/policies/bandit0.bpf.o ] || { echo "g22: no bandit0.bpf.o staged"; exit 1; }
N0=policy+prof:$B/policies/bandit0.bpf.o
stage overlap 400 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N,$N0
stage mixed 250 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$N,$N0
stage fsdp 300 --nodes 4 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$N,$N0
finish policy-prof-bandit
