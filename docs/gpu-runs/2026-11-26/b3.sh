#!/bin/bash
# GPU call B3 (one GPU, 2 and 4 emulated nodes): issue 11 final sweep with the period reward
# and policy-steered sampling. Default, every pair NCCL offers the tuner here, multinode_fix
# and the bandit, 5 interleaved repetitions; the offline tuner trained on reps 0-2, checked on 3-4.
B=$PWD/gpuwork/build; W=/tmp/b3; mkdir -p $W; nvidia-smi -L; date -u
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $NCCLBPF_DECISION_LOG
timeout 580 scripts/emulate-nodes.sh --nodes 2,4 --reps 5 \
  --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple,policy:multinode_fix,policy+prof:bandit \
  --warmup 3 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -3 $W/run.txt
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit > $OUT/b3-report.md 2>&1
$B/ncclbpf tune --reps 0,1,2 --json $W/samples.csv > $W/tune.json 2> $W/tune.err; echo "tune rc=$?"
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit --tuned $W/tune.json --check-reps 3,4 > $OUT/b3-report-tuned.md 2>&1
cat $OUT/b3-report-tuned.md
python3 gpuwork/decisions_table.py $W/declog 24 > $OUT/b3-decisions.md; cat $OUT/b3-decisions.md
for d in $W/declog/*; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/b3-consistency.txt; cat $OUT/b3-consistency.txt
cp $W/tune.json $OUT/b3-tune.json
gzip -c $W/samples.csv > $OUT/b3-samples.csv.gz
tar czf $OUT/b3-logs.tgz -C $W logs timing.txt run.txt tune.err 2>/dev/null
