#!/bin/bash
# GPU call 9 (issue 22, one H200, emulated nodes): overlap with a host that runs 2 steps
# ahead (--step-ahead 2) instead of as far as CUDA's launch queue lets it (--step-queued:
# ~130 steps in g8b, where the bandit's learning phase cost 1.025/1.030x the default because
# the screening's samples came back ~130 of a band's collectives late), and the mixed step
# the same way. Default, the static oracle, the bandit; 2 and 4 nodes; 5 interleaved
# repetitions; decision logs on.
# Outputs to $OUT: g9-report.md, g9-decisions.md, g9-consistency.txt, g9-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build of main):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g9.sh
set -u
export NCCL_NVLS_ENABLE=0
S=$PWD; B=$S/build; W=/tmp/g9; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g9-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g9: no Release build in $B"; exit 1; }
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
stage() { # NAME TIMEOUT ARGS...: one emulate-nodes.sh run
  local name=$1 to=$2; shift 2
  timeout $to $E "$@" > $W/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $W/$name.txt
}
stage overlap 180 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap-ahead2 --overlap-us 3000 \
  --overlap-blocks 32 --step-ahead 2 --configs default,$O,$N
stage mixed 200 --nodes 2,4 --reps 5 --steps 500 --step $MIXED --workload mixed-ahead2 --step-ahead 2 \
  --configs default,$O,$N
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit \
  --oracle policy-oracle > $OUT/g9-report.md 2>&1
python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/g9-decisions.md 2>&1; echo "band_decisions rc=$?"
for d in $W/declog/*/; do d=${d%/}; echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g9-consistency.txt
echo "consistent: $(grep -c 'consistent$' $OUT/g9-consistency.txt) of $(wc -l < $OUT/g9-consistency.txt)"
grep -v ': .*consistent$' $OUT/g9-consistency.txt | head
grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/g9-report.md
grep -E '^\| overlap-ahead2-n2-policy-prof-bandit-r0' $OUT/g9-decisions.md
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g9-data.tgz -C $W st/steps.csv st/timing.txt declog oracle.json $(cd $W && ls *.txt) 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
