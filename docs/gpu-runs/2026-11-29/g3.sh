#!/bin/bash
# GPU call 3 (issue 22, one H200): after call 2 showed the new bandit keeping NCCL's choice
# at 16/64 KiB one size at a time (where Tree/Simple is 0.6x), the hold reward takes the host's
# lateness from the application's call (ncclbpf_profiler_ctx.api_ns, the GroupApi start)
# instead of the Coll start, which NCCL emits after the launch. Checks, 2 repetitions:
#  1. one size at a time (4 KiB..16 MiB), 2 and 4 nodes: default, bandit, v1 + decision logs;
#  2. overlap again (300 steps), 2 and 4 nodes: default, bandit;
#  3. a traced one-size run (2 nodes, 16 KiB..1 MiB, every collective timed): the rewards
#     against the sweep.
set -u
S=$PWD; B=$S/build; W=/tmp/g3; mkdir -p $W; D=$S/docs/gpu-runs/2026-11-29
nvidia-smi -L; date -u
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1)
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
N=policy+prof:$B/policies/bandit.bpf.o; V1=policy+prof:$B/tests/bandit/progs/bandit_v1.bpf.o
SW="--iters 30 --iter-bytes 32M --min-iters 8 --policy-warmup 120 --policy-min-warmup 100"
timeout 70 $S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/sw --nodes 2,4 --reps 2 \
  --min-bytes 4K --max-bytes 16M --configs default,$N,$V1 $SW > $W/sweep.txt 2>&1; echo "sweep rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py $W/sw/samples.csv --bandit policy-prof-bandit > $OUT/g3-sweep.md 2>&1
python3 $S/scripts/emulate_report.py $W/sw/samples.csv --bandit policy-prof-bandit_v1 >> $OUT/g3-sweep.md 2>&1
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/st"
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
timeout 35 $E --nodes 2,4 --reps 2 --steps 300 --step $MIXED --workload overlap --overlap-us 3000 \
  --overlap-blocks 32 --step-queued --configs default,$N > $W/overlap.txt 2>&1; echo "overlap rc=$? $(( $(date +%s) - t0 )) s"
python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit policy-prof-bandit > $OUT/g3-report.md 2>&1
$B/ncclbpf config $B/policies/bandit.bpf.o cfg_sample_every=1 -o $W/bandit_all.bpf.o
NCCLBPF_TRACE=$W/trace NCCLBPF_PROFILE=coll timeout 20 $S/scripts/emulate-nodes.sh --bench $W/gb --build $B \
  --out $W/tr --nodes 2 --reps 1 --min-bytes 16K --max-bytes 1M --configs policy+prof:$W/bandit_all.bpf.o $SW \
  > $W/traced.txt 2>&1; echo "traced rc=$? $(( $(date +%s) - t0 )) s"
python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/g3-decisions.md 2>&1; echo "band_decisions rc=$?"
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/g3-consistency.txt
grep -c consistent $OUT/g3-consistency.txt
cat $OUT/g3-sweep.md | grep -v '^$'; cat $OUT/g3-report.md | grep -v '^Per repetition\|^$'
grep -E '^\| (n[24]|overlap)-policy-prof-bandit-r0' $OUT/g3-decisions.md
tar czf $OUT/g3-data.tgz -C $W sw/samples.csv st/steps.csv declog trace sweep.txt overlap.txt traced.txt 2>/dev/null
ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
