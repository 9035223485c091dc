#!/bin/bash
# GPU call 6 (issue 22, one H200, 2 emulated nodes): where the bandit's mixed-step loss
# against the static oracle comes from. g5 (same step, 5 x 500 steps, decision logs on in
# every policy config): the oracle as tuner only 0.899x the default, the oracle with the
# profiler plugin and the agreement layer 0.966x, noop with both 1.060x, the bandit 0.976x -
# the profiler/agreement side looked like most of the gap, but g5's spread was wide.
# Here 10 interleaved repetitions of 500 steps, decision logs off (they cost I/O the
# default does not pay), and the plugin's parts switched on one at a time:
#   default                      no plugin
#   policy:noop                  the tuner plugin only
#   policy+prof:noop~a0~n        + profiler plugin, callbacks return at once
#                                (NCCL's Coll + KernelCh instrumentation on every collective)
#   policy+prof:noop~a0~m0x2     + our profiler, Coll events only
#   policy+prof:noop~a0          + our profiler as shipped (Coll, sampled KernelCh)
#   policy+prof:noop             + the agreement layer
#   policy:oracle, policy+prof:oracle, policy+prof:bandit
# Outputs to $OUT: g6-report.md, g6-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build of main):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g6.sh
set -u
export NCCL_NVLS_ENABLE=0
S=$PWD; B=$S/build; W=/tmp/g6; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g6-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g6: no Release build in $B"; exit 1; }
nvidia-smi -L; date -u
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1)
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
gzip -dc $D/g1-sweep.csv.gz > $W/sweep.csv
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/sweep.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; exit 1; }
unset NCCLBPF_DECISION_LOG NCCLBPF_TRACE
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B"
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
C=default,policy:noop,policy+prof:noop~a0~n,policy+prof:noop~a0~m0x2,policy+prof:noop~a0,policy+prof:noop
C=$C,policy:$W/oracle.bpf.o,policy+prof:$W/oracle.bpf.o,policy+prof:$B/policies/bandit.bpf.o
timeout 500 $E --out $W/st --nodes 2 --reps 10 --steps 500 --step $MIXED --workload mixed \
  --configs $C > $W/mixed.txt 2>&1
echo "mixed rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit \
  --oracle policy-oracle > $OUT/g6-report.md 2>&1
grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/g6-report.md
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g6-data.tgz -C $W st/steps.csv oracle.json mixed.txt 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
