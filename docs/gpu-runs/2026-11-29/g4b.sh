#!/bin/bash
# GPU call 4 (issue 22, one H200, 2 and 4 emulated nodes; for the lead to run): the bandit as
# landed on main, after the screening fix that followed g3 (results 14.4: the screening's
# wait ends after cfg_screen_grace of the band's collectives), which no GPU run has measured
# yet - g2's step numbers (14.3) are of the bandit before it. Stages, in order of priority:
#  1. one size at a time (4 KiB..16 MiB), default and bandit, 2 repetitions, decision logs:
#     the fix's target (Tree at 16/64 KiB on 2 nodes, exploration <= 80 per band);
#  2. mixed AllReduce step (4M,1M,256K,64K,16K,4K), 500 steps, 5 repetitions: default,
#     oracle, bandit;
#  3. FSDP-like step (AllGather/ReduceScatter), 500 steps, 5 repetitions: same configs;
#  4. overlap (3 ms compute on another stream) and gap (150 us before each collective),
#     300 steps, 5 repetitions: same configs.
# The oracle is the table `ncclbpf tune` builds from g1's committed forced-pair sweep
# (g1-sweep.csv.gz, gates opened as in g1.sh; the same ranges as g1-oracle.json).
# g4-data.tgz to $OUT.
#
#   usage (device; S = a copy of main's scripts/, bench/gpu/, docs/gpu-runs/2026-11-29/ and
#   its Release build in S/build: libncclbpf.so, ncclbpf, policies/*.bpf.o - g4-stage.sh
#   makes it):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g4.sh
set -u
S=$PWD; B=$S/build; W=/tmp/g4; rm -rf $W; mkdir -p $W ${OUT:=/tmp/g4-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "g4: no Release build in $B"; exit 1; }
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
python3 -c "
import json, sys
k = lambda f: [(r['coll'], r['nnodes'], r['min_bytes'], r['algo'], r['proto']) for r in json.load(open(f))['ranges']]
sys.exit(0 if k('$W/oracle.json') == k('$D/g1-oracle.json') else 1)" && echo "oracle: the ranges of g1-oracle.json" ||
  echo "oracle: DIFFERS from g1-oracle.json"
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/st"
O=policy:$W/oracle.bpf.o; N=policy+prof:$B/policies/bandit.bpf.o
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
FSDP="ag:4M,ag:1M,ag:256K,ag:256K,rs:256K,ag:1M,rs:1M,ag:4M,rs:4M"
report() {
  python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit \
    --oracle policy-oracle > $OUT/g4-report.md 2>&1
}
stage() { # NAME TIMEOUT ARGS...: one emulate-nodes.sh run
  local name=$1 to=$2; shift 2
  timeout $to $E "$@" > $W/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $W/$name.txt
  report
}
stage overlap 110 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$O,$N
stage gap 110 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload gap --gap-us 150 --configs default,$O,$N
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g4b-consistency.txt; cat $OUT/g4b-consistency.txt; grep -v "^Per repetition\|^$" $OUT/g4-report.md; tar czf $OUT/g4b-data.tgz -C $W st declog overlap.txt gap.txt
