#!/bin/bash
# GPU call 7 (issue 22, one H200, 2 emulated nodes): what decision logs cost on the mixed
# step. g6 (logs off): the bandit 1.011x the static oracle after convergence, the profiler
# and agreement layer within noise (oracle+prof / oracle 1.006x). g4 and g5 (logs on in
# every policy config, off for the default): the bandit 1.072x and 1.085x the oracle.
# Same step, 10 interleaved repetitions of 500 steps, NCCLBPF_DECISION_LOG set; ~d0 runs a
# config without it. (The first run of this script, before env -u in emulate-nodes.sh, let ~d0 runs inherit
# NCCLBPF_DECISION_LOG itself: they logged too; not used.)
# Outputs to $OUT: g7-report.md, g7-consistency.txt, g7-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build of main):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g7.sh
set -u
export NCCL_NVLS_ENABLE=0
S=$PWD; B=$S/build; W=/tmp/g7; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g7-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g7: no Release build in $B"; exit 1; }
nvidia-smi -L; date -u
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1)
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
gzip -dc $D/g1-sweep.csv.gz > $W/sweep.csv
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/sweep.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; exit 1; }
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B"
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
O=policy:$W/oracle.bpf.o; BA=policy+prof:$B/policies/bandit.bpf.o
C=default,$O,$O~d0,policy+prof:$W/oracle.bpf.o,policy+prof:$W/oracle.bpf.o~d0,$BA,$BA~d0
timeout 500 $E --out $W/st --nodes 2 --reps 10 --steps 500 --step $MIXED --workload mixed \
  --configs $C > $W/mixed.txt 2>&1
echo "mixed rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit-d0 \
  --oracle policy-oracle-d0 > $OUT/g7-report.md 2>&1
for d in $W/declog/*/; do d=${d%/}; echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g7-consistency.txt
echo "consistent: $(grep -c 'consistent$' $OUT/g7-consistency.txt) of $(wc -l < $OUT/g7-consistency.txt)"
du -sh $W/declog; echo "files outside a run's directory (must be 0): $(find $W/declog -maxdepth 1 -type f | wc -l)"
grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/g7-report.md
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g7-data.tgz -C $W st/steps.csv oracle.json mixed.txt 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
