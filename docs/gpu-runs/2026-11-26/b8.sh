#!/bin/bash
# GPU call B8 (one GPU, 2 and 4 emulated nodes): a second final sweep, with the offline tuner's
# table policy trained on gpu-b3 (ncclbpf tune b3-samples.csv -o tuned_b3.bpf.o) checked in a new run.
# Plus the default, the pairs, multinode_fix and the bandit, 5 interleaved repetitions.
B=$PWD/gpuwork/build; W=/tmp/b8; mkdir -p $W; nvidia-smi -L; date -u
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_DECISION_LOG
timeout 580 scripts/emulate-nodes.sh --nodes 2,4 --reps 5 \
  --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple,policy:multinode_fix,policy+prof:bandit,policy:$B/policies/tuned_b3.bpf.o \
  --warmup 3 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -3 $W/run.txt
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit > $OUT/b8-report.md 2>&1
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-tuned_b3 > $OUT/b8-report-tuned-b3.md 2>&1; cat $OUT/b8-report-tuned-b3.md | cut -d"|" -f1,2,11-
$B/ncclbpf tune --reps 0,1,2 --json $W/samples.csv > $W/tune.json 2> $W/tune.err; echo "tune rc=$?"
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit --tuned $W/tune.json --check-reps 3,4 > $OUT/b8-report-tuned.md 2>&1
cat $OUT/b8-report-tuned.md
python3 gpuwork/decisions_table.py $W/declog 24 > $OUT/b8-decisions.md; cat $OUT/b8-decisions.md
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/b8-consistency.txt; cat $OUT/b8-consistency.txt
cp $W/tune.json $OUT/b8-tune.json
gzip -c $W/samples.csv > $OUT/b8-samples.csv.gz
tar czf $OUT/b8-logs.tgz -C $W logs timing.txt run.txt tune.err 2>/dev/null
