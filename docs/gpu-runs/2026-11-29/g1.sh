#!/bin/bash
# GPU call 1 (issue 22, one H200, 2 and 4 emulated nodes): shakedown of the step workloads and
# the calibration data.
#  1. forced-pair sweeps (the oracle): AllReduce 4 KiB..16 MiB, AllGather/ReduceScatter
#     256 KiB..4 MiB, 2 repetitions; the oracle table (best pair per size, gates open) and the
#     offline tuner's table (default gates) from them;
#  2. the mixed AllReduce step (4M,1M,256K,64K,16K,4K), 2 nodes, 300 steps: default, oracle,
#     the 2026-11-26 bandit (v1), the new bandit with every collective GPU-timed and traced
#     (the reward calibration: every rank's timestamps on one host clock);
#  3. FSDP-like step, gap and overlap at 2 nodes: default and the new bandit (shakedown).
# Run from .gpustage (a copy of the bandit worktree + its Release build in build/).
set -u
S=$PWD; B=$S/build; W=/tmp/g1; mkdir -p $W; D=$S/docs/gpu-runs/2026-11-29
nvidia-smi -L; date -u; nproc
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1); echo "NCCL: $NL"
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
echo "nvcc: $(( $(date +%s) - t0 )) s"
E="timeout 150 $S/scripts/emulate-nodes.sh --bench $W/gb --build $B"
SW="--warmup 3 --iters 30 --iter-bytes 32M --min-iters 8 --reps 2 --nodes 2,4"
$E $SW --coll allreduce --min-bytes 4K --max-bytes 16M \
  --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple --out $W/sw-ar > $W/sw-ar.txt 2>&1; echo "sweep AR rc=$? $(( $(date +%s) - t0 )) s"
$E $SW --coll allgather,reducescatter --min-bytes 256K --max-bytes 4M \
  --configs default,Ring/LL,Ring/Simple,PAT/Simple --out $W/sw-ag > $W/sw-ag.txt 2>&1; echo "sweep AG/RS rc=$? $(( $(date +%s) - t0 )) s"
tail -2 $W/sw-ar.txt $W/sw-ag.txt
cat $W/sw-ar/samples.csv > $W/sweep.csv; tail -n +2 $W/sw-ag/samples.csv >> $W/sweep.csv
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/sweep.csv > $W/oracle.json 2> $W/oracle.err; echo "oracle rc=$?"
$B/ncclbpf tune -o $W/tuned.bpf.o --json $W/sweep.csv > $W/tuned.json 2> $W/tuned.err; echo "tuned rc=$?"
$B/ncclbpf config $B/policies/bandit.bpf.o cfg_sample_every=1 -o $W/bandit_all.bpf.o
python3 $S/scripts/emulate_report.py $W/sw-ar/samples.csv --bandit none > $OUT/g1-sweep.md 2>&1
python3 $S/scripts/emulate_report.py $W/sw-ag/samples.csv --bandit none >> $OUT/g1-sweep.md 2>&1
python3 -c "
import json,sys
for f in ('oracle','tuned'):
    d=json.load(open('$W/'+f+'.json'))
    for r in d['ranges']:
        print(f, r['coll'], r['nnodes'], r['min_bytes'], r['max_bytes'], r['algo'], r['proto'])
" >> $OUT/g1-sweep.md 2>&1
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
STEPS="--steps 300 --step-warmup 2 --reps 1 --nodes 2"
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
V1=$B/tests/bandit/progs/bandit_v1.bpf.o
$E $STEPS --step $MIXED --workload mixed \
  --configs default,policy:$W/oracle.bpf.o,policy:$W/tuned.bpf.o,policy+prof:$V1,policy+prof:$B/policies/bandit.bpf.o \
  --out $W/st > $W/st-mixed.txt 2>&1; echo "mixed rc=$? $(( $(date +%s) - t0 )) s"
NCCLBPF_TRACE=$W/trace NCCLBPF_PROFILE=coll $E $STEPS --step $MIXED --workload mixed-traced \
  --configs policy+prof:$W/bandit_all.bpf.o --out $W/st > $W/st-traced.txt 2>&1; echo "traced rc=$? $(( $(date +%s) - t0 )) s"
FSDP="ag:4M,ag:1M,ag:256K,ag:256K,rs:256K,ag:1M,rs:1M,ag:4M,rs:4M"
$E $STEPS --step $FSDP --workload fsdp --configs default,policy:$W/oracle.bpf.o,policy+prof:$B/policies/bandit.bpf.o \
  --out $W/st > $W/st-fsdp.txt 2>&1; echo "fsdp rc=$? $(( $(date +%s) - t0 )) s"
$E $STEPS --step $MIXED --workload gap --gap-us 150 --configs default,policy+prof:$B/policies/bandit.bpf.o \
  --out $W/st > $W/st-gap.txt 2>&1; echo "gap rc=$? $(( $(date +%s) - t0 )) s"
$E $STEPS --step $MIXED --workload overlap --overlap-us 1500 --overlap-blocks 16 --step-queued \
  --configs default,policy+prof:$B/policies/bandit.bpf.o --out $W/st > $W/st-overlap.txt 2>&1; echo "overlap rc=$? $(( $(date +%s) - t0 )) s"
grep -h 'FAILED\|rc [1-9]' $W/st-*.txt | head
cat $W/st/timing.txt $W/sw-ar/timing.txt | tail -30
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit --oracle policy-oracle \
  --first-steps 300 > $OUT/g1-report.md 2>&1; cat $OUT/g1-report.md
python3 $D/reward_calib.py $W/trace 6 > $OUT/g1-calib.md 2>&1; tail -40 $OUT/g1-calib.md
python3 $D/band_decisions.py $W/declog > $OUT/g1-decisions.md 2>&1; cat $OUT/g1-decisions.md | head -60
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g1-consistency.txt; cat $OUT/g1-consistency.txt
tar czf $OUT/g1-data.tgz -C $W sweep.csv oracle.json tuned.json oracle.err tuned.err st declog sw-ar/timing.txt sw-ag/timing.txt \
  sw-ar.txt sw-ag.txt st-mixed.txt st-traced.txt st-fsdp.txt st-gap.txt st-overlap.txt 2>/dev/null
tar czf $OUT/g1-trace.tgz -C $W trace 2>/dev/null; ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
