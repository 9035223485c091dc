#!/bin/bash
# GPU call 8 (issue 22, one H200, emulated nodes): g4's workloads again with main's bandit
# (8e48655: lateness that comes with one arm is that arm's cost; g4 ran the bandit before
# it). Stages, chosen by the first argument (default: all):
#   a: the 4-node sweep 4 KiB-16 MiB (default, bandit; 2 repetitions; g4: 1.041x at 1 MiB;
#      the 2-node sweep is g5's), the mixed AllReduce step and the FSDP step on 2 and 4 nodes
#   b: overlap (3 ms kernel beside the step) and gap (150 us before each collective)
# Steps: default, the static oracle, the bandit; 5 interleaved repetitions; decision logs on.
# Outputs to $OUT: g8<stage>-report.md, g8a-sweep.md, g8<stage>-decisions.md,
# g8<stage>-consistency.txt, g8<stage>-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build of main):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g8.sh a|b
set -u
export NCCL_NVLS_ENABLE=0
ST=${1:-a}
S=$PWD; B=$S/build; W=/tmp/g8$ST; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g8-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g8: no Release build in $B"; exit 1; }
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
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/st"
O=policy:$W/oracle.bpf.o; N=policy+prof:$B/policies/bandit.bpf.o
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
FSDP="ag:4M,ag:1M,ag:256K,ag:256K,rs:256K,ag:1M,rs:1M,ag:4M,rs:4M"
stage() { # NAME TIMEOUT ARGS...: one emulate-nodes.sh run
  local name=$1 to=$2; shift 2
  timeout $to $E "$@" > $W/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $W/$name.txt
}
if [ $ST = a ]; then
  timeout 60 $S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/sw --nodes 4 --reps 2 \
    --min-bytes 4K --max-bytes 16M --configs default,$N --iters 30 --iter-bytes 32M --min-iters 8 \
    --policy-warmup 120 --policy-min-warmup 100 > $W/sweep.txt 2>&1; echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
  python3 $S/scripts/emulate_report.py $W/sw/samples.csv --bandit policy-prof-bandit > $OUT/g8a-sweep.md 2>&1
  grep -v '^$' $OUT/g8a-sweep.md
  stage mixed 170 --nodes 2,4 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$N
  stage fsdp 200 --nodes 2,4 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$N
else
  stage overlap 180 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
    --overlap-blocks 32 --step-queued --configs default,$O,$N
  stage gap 180 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload gap --gap-us 150 --configs default,$O,$N
fi
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit \
  --oracle policy-oracle > $OUT/g8$ST-report.md 2>&1
python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/g8$ST-decisions.md 2>&1; echo "band_decisions rc=$?"
for d in $W/declog/*/; do d=${d%/}; echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g8$ST-consistency.txt
echo "consistent: $(grep -c 'consistent$' $OUT/g8$ST-consistency.txt) of $(wc -l < $OUT/g8$ST-consistency.txt)"
grep -v ': .*consistent$' $OUT/g8$ST-consistency.txt | head
grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/g8$ST-report.md
grep -E '^\| (n4|mixed-n[24]|fsdp-n[24])-policy-prof-bandit-r0' $OUT/g8$ST-decisions.md | head -40
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g8$ST-data.tgz -C $W st/steps.csv st/timing.txt sw/samples.csv declog oracle.json $(cd $W && ls *.txt) 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
