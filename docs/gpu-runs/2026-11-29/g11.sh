#!/bin/bash
# GPU call 11 (issue 22, one H200, emulated nodes): the bandit with a host far ahead of the
# GPU (55fa8a4: the screening's wait ends on the published progress, only round-robin turns
# in flight count towards the budgets, NCCL's choice until their samples are in, the host's
# lead lengthens a run that counts as exploitation). g8b: overlap with --step-queued (~130
# steps ahead), first 300 steps 1.025x (p=0.004) / 1.030x (p=0.036) the default on 2 / 4
# nodes with the previous bandit. Here, 5 interleaved repetitions each:
#   overlap --step-queued, 2 and 4 nodes, 300 steps: default, the oracle, the bandit, and the
#     previous bandit (bandit0.bpf.o: main d0ab35c's policies/bandit.bpf.c, staged beside);
#   the mixed step with the host waiting for each step, 2 nodes, 500 steps: default, the
#     oracle, the bandit (a regression check: g8a 1.018x the oracle).
# Outputs to $OUT: g11-report.md, g11-decisions.md, g11-consistency.txt, g11-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g11.sh
G=g11
. "$(dirname "$0")/preamble.sh"
[ -f $B/policies/bandit0.bpf.o ] || { echo "g11: no bandit0.bpf.o staged"; exit 1; }
N0=policy+prof:$B/policies/bandit0.bpf.o
stage overlap 330 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$O,$N,$N0
stage mixed 150 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$N
finish policy-prof-bandit
