#!/bin/bash
# GPU call X1 (4 GPUs of one host): issue 17 gpu-validate stages 0,1,2,6; issue 15 profiler sampling + overhead
B=$PWD/gpuwork/build; W=/tmp/x1; mkdir -p $W
nvidia-smi -L; nvidia-smi topo -m | head -6; date -u
timeout 330 scripts/gpu-validate.sh --stages 0,1,2,6 --build $B --out $W/val --results $W/val.md > $W/val.txt 2>&1; echo "validate rc=$?"
cp $W/val/report.md $OUT/validate.md 2>/dev/null; tail -60 $W/val/report.md
timeout 220 bench/gpu/profiler_sampling.sh --build $B --reps 5 --out $W/prof > $W/prof.txt 2>&1; echo "prof rc=$?"
cp $W/prof.txt $OUT/prof.txt; tail -60 $W/prof.txt
cd /tmp && tar czf $OUT/x1logs.tgz --exclude='*gpubench' x1
