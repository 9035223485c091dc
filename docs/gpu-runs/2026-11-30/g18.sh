#!/bin/bash
# GPU call 18 (issue 22, one H200, emulated nodes): where the bandit's start cost with a host
# far ahead lies. g17 showed it is not the join (its warm-up steps absorb it): the bandit's
# step 1 is 15 ms above its step 0 with the same arms, the default's shows no such step -
# the first use of an algorithm the default does not run makes NCCL connect it then
# (runtime connection, NCCL_RUNTIME_CONNECT=1 by default). Here, with every connection made
# at init (NCCL_RUNTIME_CONNECT=0) for every config, 5 interleaved repetitions:
#   overlap --step-queued, 2 and 4 nodes, 300 steps: default, the bandit.
# Compare its bandit/default ratios with g17's (same build, runtime connection).
# Outputs to $OUT: g18-report.md, g18-decisions.md, g18-consistency.txt, g18-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build, this directory copied to
#   S/docs/gpu-runs/2026-11-30):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g18.sh
G=g18
. "$(dirname "$0")/../2026-11-29/preamble.sh"
export NCCL_RUNTIME_CONNECT=0
stage overlap 330 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N
finish policy-prof-bandit
