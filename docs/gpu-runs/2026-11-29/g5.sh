#!/bin/bash
# GPU call 5 (issue 22, one H200, emulated nodes; prepared 2026-11-29, not yet run: the
# session's device budget was spent). Two questions, in order of priority:
#  1. Does 8e48655 (lateness that comes with one arm is that arm's cost) make the bandit keep
#     NCCL's choice at 1-16 MiB one size at a time on 2 nodes (g4: Tree/Simple, 1.11/1.30/
#     1.21x the default)? Sweep 256 KiB-16 MiB, 2 nodes, default and bandit, 2 repetitions.
#  2. Where does the mixed step's 2-node loss come from (g4: 1.072x the default after
#     convergence, steps uniformly slower - no 64-step pattern of the sampling bursts - and
#     the same in repetitions that ended on the oracle's pairs)? The oracle ran without the
#     profiler and without the agreement layer; the bandit with both. Controls, interleaved,
#     5 repetitions of 500 steps: default; the oracle as tuner only; the oracle also as
#     profiler (policy+prof: profiler, default sampling, agreement layer on); noop the same
#     way; the bandit.
#     Reading: oracle+prof / oracle = the profiler's and agreement layer's cost on this
#     step; bandit / oracle+prof = what the bandit's own choices and its steered KernelCh
#     sampling cost.
# Outputs to $OUT: g5-sweep.md, g5-report.md, g5-decisions.md, g5-consistency.txt,
# g5-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build of main):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g5.sh
set -u
export NCCL_NVLS_ENABLE=0
S=$PWD; B=$S/build; W=/tmp/g5; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g5-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g5: no Release build in $B"; exit 1; }
nvidia-smi -L; date -u
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1)
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
echo "nvcc: $(( $(date +%s) - t0 )) s"
gzip -dc $D/g1-sweep.csv.gz > $W/sweep.csv
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/sweep.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; exit 1; }
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B"
N=policy+prof:$B/policies/bandit.bpf.o
timeout 90 $E --out $W/sw --nodes 2 --reps 2 --min-bytes 256K --max-bytes 16M --configs default,$N \
  --iters 30 --iter-bytes 32M --min-iters 8 --policy-warmup 120 --policy-min-warmup 100 > $W/sweep.txt 2>&1
echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py $W/sw/samples.csv --bandit policy-prof-bandit > $OUT/g5-sweep.md 2>&1
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
timeout 200 $E --out $W/st --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed \
  --configs default,policy:$W/oracle.bpf.o,policy+prof:$W/oracle.bpf.o,policy+prof:noop,$N > $W/mixed.txt 2>&1
echo "mixed rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit \
  --oracle policy-oracle > $OUT/g5-report.md 2>&1
python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/g5-decisions.md 2>&1
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g5-consistency.txt
echo "consistent: $(grep -c 'consistent$' $OUT/g5-consistency.txt) of $(wc -l < $OUT/g5-consistency.txt)"
grep -v '^$' $OUT/g5-sweep.md; grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/g5-report.md
grep -E '^\| n2-policy-prof-bandit-r0' $OUT/g5-decisions.md
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g5-data.tgz -C $W st/steps.csv sw/samples.csv declog oracle.json sweep.txt mixed.txt 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
