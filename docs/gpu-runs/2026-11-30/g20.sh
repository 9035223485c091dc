#!/bin/bash
# GPU call 20 (issue 22, one H200, emulated nodes): the bandit's start cost with a host far
# ahead, continued. g17-g19: the extra time lies in steps 1-5 (2 nodes: +16-23 ms) although
# the screening runs to step 11 and steps 6-11 cost nothing more than the default's; noop
# as tuner and profiler costs nothing; runtime connection and lazy kernel loading do not
# explain it. Here: the same screening, started later - cfg_start_after = 8 and 16 band
# collectives (NCCL's choice until then; `ncclbpf config` copies bandit_s8/_s16.bpf.o),
# 5 interleaved repetitions:
#   overlap --step-queued, 2 and 4 nodes, 300 steps: default, bandit, bandit_s8, bandit_s16;
#   the mixed step with the host waiting, 2 nodes, 500 steps: default, the oracle, the three.
# Outputs to $OUT: g20-report.md, g20-decisions.md, g20-consistency.txt, g20-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build with bandit_s8/_s16.bpf.o in
#   S/build/policies, this directory copied to S/docs/gpu-runs/2026-11-30):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g20.sh
G=g20
. "$(dirname "$0")/../2026-11-29/preamble.sh"
N8=policy+prof:$B/policies/bandit_s8.bpf.o N16=policy+prof:$B/policies/bandit_s16.bpf.o
stage overlap 400 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N,$N8,$N16
stage mixed 250 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$N,$N8,$N16
finish policy-prof-bandit
