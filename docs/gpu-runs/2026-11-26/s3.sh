#!/bin/bash
# GPU call S3 (one GPU): issue 11, 4-node rerun of the bandit after the turn-based exploration fix
B=$PWD/gpuwork/build; W=/tmp/c3; mkdir -p $W/declog; nvidia-smi -L; date -u
NCCLBPF_DECISION_LOG=$W/declog timeout 200 scripts/emulate-nodes.sh --nodes 4 --reps 5 --configs default,Tree/LL,Tree/Simple,Ring/Simple,policy+prof:bandit --warmup 3 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/emu.txt 2>&1; echo "emu rc=$?"
tail -3 $W/emu.txt; cp $W/samples.csv $OUT/samples.csv
python3 scripts/emulate_report.py $W/samples.csv --bandit policy-prof-bandit > $OUT/report.md 2>&1; cat $OUT/report.md
$B/ncclbpf decisions $W/declog | tail -2
cd /tmp && tar czf $OUT/c3logs.tgz --exclude='*gpubench' --exclude='samples.csv' c3
