#!/bin/bash
# GPU call 10 (issue 22, one H200): g9's mixed step with the host 2 steps ahead, 2 nodes
# only, 10 interleaved repetitions (g9, 5 repetitions: the bandit 1.069x the oracle
# [1.003, 1.164], 1.035x the default, p = 0.46; the per-repetition spread of the default
# 2,230-2,590 us per step). Default, the static oracle, the bandit; decision logs on.
# Outputs to $OUT: g10-report.md, g10-decisions.md, g10-consistency.txt, g10-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build of main):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g10.sh
set -u
export NCCL_NVLS_ENABLE=0
S=$PWD; B=$S/build; W=/tmp/g10; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g10-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g10: no Release build in $B"; exit 1; }
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
stage mixed 300 --nodes 2 --reps 10 --steps 500 --step $MIXED --workload mixed-ahead2 --step-ahead 2 \
  --configs default,$O,$N
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit \
  --oracle policy-oracle > $OUT/g10-report.md 2>&1
python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/g10-decisions.md 2>&1; echo "band_decisions rc=$?"
for d in $W/declog/*/; do d=${d%/}; echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g10-consistency.txt
echo "consistent: $(grep -c 'consistent$' $OUT/g10-consistency.txt) of $(wc -l < $OUT/g10-consistency.txt)"
grep -v ': .*consistent$' $OUT/g10-consistency.txt | head
grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/g10-report.md
grep -E '^\| mixed-ahead2-n2-policy-prof-bandit-r0' $OUT/g10-decisions.md
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g10-data.tgz -C $W st/steps.csv st/timing.txt declog oracle.json $(cd $W && ls *.txt) 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
