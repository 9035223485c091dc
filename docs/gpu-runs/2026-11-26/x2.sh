#!/bin/bash
# GPU call X2 (4 GPUs): issue 17 emulated 2 nodes x 2 GPUs sweep, net plugin vs socket, agreement + reload
B=$PWD/gpuwork/build; W=/tmp/x2; mkdir -p $W; date -u
timeout 540 scripts/gpu-multigpu.sh --build $B --reps 5 --out $W > $W/mg.txt 2>&1; echo "multigpu rc=$?"
cp $W/mg.txt $OUT/; cp $W/sweep/samples.csv $OUT/samples-2x2.csv 2>/dev/null; cp $W/sweep/report.md $OUT/sweep.md 2>/dev/null
grep -v '^  ' $W/mg.txt | tail -80
cd /tmp && tar czf $OUT/x2logs.tgz --exclude='*gpubench' --exclude='samples.csv' x2
