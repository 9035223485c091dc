#!/bin/bash
# GPU call 19 (issue 22, one H200, emulated nodes): where the bandit's start cost with a host
# far ahead lies, continued. g18: with every connection made at init (NCCL_RUNTIME_CONNECT=0)
# the 2-node start cost halved, but steps 1-5 still cost ~16 ms more than the default's and
# step 6 on none, although the screening goes on to step ~23: a host-side cost of the first
# steps, when the queued host is not yet ahead of the GPU. Candidate: CUDA loads each kernel
# at its first launch (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) and the
# screening launches NCCL kernels (algorithm x protocol) the default never does. Here, as g18
# plus CUDA_MODULE_LOADING=EAGER for every config, 5 interleaved repetitions:
#   overlap --step-queued, 2 and 4 nodes, 300 steps: default, the bandit, and noop as tuner
#   and profiler (the plugins' own first-step cost, no other kernels).
# Outputs to $OUT: g19-report.md, g19-decisions.md, g19-consistency.txt, g19-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build, this directory copied to
#   S/docs/gpu-runs/2026-11-30):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g19.sh
G=g19
. "$(dirname "$0")/../2026-11-29/preamble.sh"
export NCCL_RUNTIME_CONNECT=0 CUDA_MODULE_LOADING=EAGER
stage overlap 330 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N,policy+prof:$B/policies/noop.bpf.o
finish policy-prof-bandit
