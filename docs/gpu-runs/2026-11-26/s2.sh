#!/bin/bash
# GPU call S2 (one GPU, emulated nodes): issue 11 final sweep -- default vs every forced pair vs
# multinode_fix vs the bandit, AllReduce 4 KiB..64 MiB, 5 interleaved reps, 2 and 4 nodes.
B=$PWD/gpuwork/build; W=/tmp/c2; mkdir -p $W/declog
nvidia-smi -L; date -u
NCCLBPF_DECISION_LOG=$W/declog timeout 330 scripts/emulate-nodes.sh --nodes 2,4 --reps 5 --configs default,pairs,policy:multinode_fix,policy+prof:bandit --warmup 3 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/emu.txt 2>&1; echo "emu rc=$?"
tail -4 $W/emu.txt; cp $W/samples.csv $OUT/samples.csv
$B/ncclbpf tune $W/samples.csv --reps even --json > $W/tune.json 2> $W/tune.err; echo "tune rc=$?"; cp $W/tune.json $OUT/
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit --tuned $W/tune.json --check-reps 1,3 > $OUT/report.md 2>&1; echo "report rc=$?"
cat $OUT/report.md
$B/ncclbpf decisions $W/declog | tail -3
cd /tmp && tar czf $OUT/c2logs.tgz --exclude='*gpubench' --exclude='samples.csv' c2
