#!/bin/bash
# GPU call 2 (issue 22, one H200, 2 and 4 emulated nodes, 5 interleaved repetitions): the
# measurement. The oracle (best forced pair per size, gates open) and the offline tuner's
# table (default gates) are the ones `ncclbpf tune` built from call 1's forced-pair sweep
# (g1: oracle.bpf.o, tuned.bpf.o, carried in build/). Stages, in order of priority:
#  1. mixed AllReduce step (4M,1M,256K,64K,16K,4K), 500 steps: default, oracle, tuned, bandit;
#  2. FSDP-like step (AllGather forward, AllGather + ReduceScatter backward, 3 layers), 500
#     steps: default, oracle, bandit;
#  3. gap (150 us of GPU work before every collective of the mixed step) and overlap (3 ms
#     of compute on another stream per step, the host queued a step ahead), 300 steps:
#     default, oracle, bandit;
#  4. the 2026-11-26 bandit (v1) on the mixed step, 2 repetitions;
#  5. one size at a time (the sweep, 4 KiB..16 MiB), default, bandit, v1, 2 repetitions,
#     decision logs: where each band's exploration ended;
#  6. the issue's step (16M,16M,4M,1M,256K,64K,4K), 4 nodes, 2 repetitions, 200 steps.
set -u
S=$PWD; B=$S/build; W=/tmp/g2; mkdir -p $W; D=$S/docs/gpu-runs/2026-11-29
nvidia-smi -L; date -u
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1)
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
echo "nvcc: $(( $(date +%s) - t0 )) s"
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/st"
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
O=policy:$B/oracle.bpf.o; T=policy:$B/tuned.bpf.o; N=policy+prof:$B/policies/bandit.bpf.o
V1=policy+prof:$B/tests/bandit/progs/bandit_v1.bpf.o
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
FSDP="ag:4M,ag:1M,ag:256K,ag:256K,rs:256K,ag:1M,rs:1M,ag:4M,rs:4M"
report() {
  python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit,policy-prof-bandit_v1 \
    --oracle policy-oracle > $OUT/g2-report.md 2>&1
  python3 $D/band_decisions.py $W/declog > $OUT/g2-decisions.md 2>&1
}
stage() { # NAME TIMEOUT ARGS...: one emulate-nodes.sh run
  local name=$1 to=$2; shift 2
  timeout $to $E "$@" > $W/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $W/$name.txt
  report
}
stage mixed 200 --nodes 2,4 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$T,$N
stage fsdp 200 --nodes 2,4 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$N
stage gap 110 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload gap --gap-us 150 --configs default,$O,$N
stage overlap 110 --nodes 2,4 --reps 5 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$O,$N
stage mixed-v1 60 --nodes 2,4 --reps 2 --steps 500 --step $MIXED --workload mixed --configs $V1
timeout 70 $S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/sw --nodes 2,4 --reps 2 \
  --min-bytes 4K --max-bytes 16M --configs default,$N,$V1 --iters 30 --iter-bytes 32M --min-iters 8 \
  --policy-warmup 120 --policy-min-warmup 100 > $W/sweep.txt 2>&1; echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py $W/sw/samples.csv --bandit policy-prof-bandit > $OUT/g2-sweep.md 2>&1
python3 $S/scripts/emulate_report.py $W/sw/samples.csv --bandit policy-prof-bandit_v1 >> $OUT/g2-sweep.md 2>&1
python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/g2-decisions.md 2>&1; echo "band_decisions rc=$?"
stage heavy 75 --nodes 4 --reps 2 --steps 200 --step ar:16M,ar:16M,ar:4M,ar:1M,ar:256K,ar:64K,ar:4K --workload issue-step \
  --configs default,$O,$N
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g2-consistency.txt
grep -c consistent $OUT/g2-consistency.txt; grep -v ': .*consistent$' $OUT/g2-consistency.txt | head
cat $OUT/g2-report.md | grep -v '^Per repetition'
grep -h 'FAILED' $W/*.txt | head
tar czf $OUT/g2-data.tgz -C $W st/steps.csv st/timing.txt sw/samples.csv sw/timing.txt declog mixed.txt fsdp.txt gap.txt \
  overlap.txt mixed-v1.txt sweep.txt heavy.txt 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
