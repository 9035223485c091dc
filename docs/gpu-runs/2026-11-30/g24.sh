#!/bin/bash
# GPU call 24 (issue 22, one H200, emulated nodes): the round robin's length in the tuner's
# in-flight estimate now counts a survivor screened with one sample (results 14.17: g23's
# overlap round robin ran ~150 band collectives on a far Tree/Simple). Against main a41a026's
# bandit (bandit0.bpf.o, staged beside), same library, 5 interleaved repetitions each:
#   overlap --step-queued, 2 and 4 nodes, 700 steps (the exploration ends by ~300 with the
#   host ~130 steps ahead): default, bandit, bandit0;
#   the mixed step with the host waiting, 2 nodes, 500 steps: default, the oracle, both;
#   the FSDP step, 4 nodes, 500 steps: default, the oracle, both.
# Outputs to $OUT: g24-report.md, g24-decisions.md, g24-consistency.txt, g24-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build with bandit0.bpf.o in
#   S/build/policies, this directory copied to S/docs/gpu-runs/2026-11-30):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g24.sh
G=g24
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ -f $B/policies/bandit0.bpf.o ] || { echo "g24: no bandit0.bpf.o staged"; exit 1; }
N0=policy+prof:$B/policies/bandit0.bpf.o
stage overlap 330 --nodes 2,4 --reps 5 --steps 700 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N,$N0
stage mixed 120 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$N,$N0
stage fsdp 120 --nodes 4 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$N,$N0
finish policy-prof-bandit
