#!/bin/bash
# GPU call 17 (issues 22/23, one H200, emulated nodes): the join at collective 0 with a host
# far ahead. g11 (docs/results.md 14.14) put ~10 ms of the bandit's start cost there; the
# join now starts at the tuner's open and moves on answers, not 20 ms timers (results 15.3).
# An interleaved A/B of two library builds, 5 repetitions each:
#   overlap --step-queued, 2 and 4 nodes, 300 steps: default, the bandit with this build's
#     library, the bandit with the previous library (build/alt: main 0b3a4c7, config ~x);
#   the mixed step with the host waiting for each step, 2 nodes, 500 steps: default, the
#     oracle, both libraries (a regression check).
# Outputs to $OUT: g17-report.md, g17-decisions.md, g17-consistency.txt, g17-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build, the previous build's
#   libncclbpf.so in S/build/alt/, this directory copied to S/docs/gpu-runs/2026-11-30):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g17.sh
G=g17
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ -f $B/alt/libncclbpf.so ] || { echo "g17: no build/alt/libncclbpf.so staged"; exit 1; }
E="$E --alt-build $B/alt"
stage overlap 330 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N,$N~x
stage mixed 200 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$N,$N~x
finish policy-prof-bandit
