#!/bin/bash
# Lead's GPU call 1 (2026-11-29): g4 (the bandit as landed: sweep, mixed, FSDP; overlap/gap
# dropped for the device budget) then obs1 (OTLP export off/on, rank-aligned sampling joins).
set -u
export NCCL_NVLS_ENABLE=0
cd "$(dirname "$0")"
T0=$(date +%s)
sed '/^stage overlap/,/^stage gap.*$/d' docs/gpu-runs/2026-11-29/g4.sh > docs/gpu-runs/2026-11-29/g4short.sh
R=$OUT; OUT=/tmp/res; mkdir -p $OUT/g4 $OUT/obs1
OUT=$OUT/g4 timeout 375 bash docs/gpu-runs/2026-11-29/g4short.sh > $OUT/g4/g4.txt 2>&1; echo "g4 rc=$? at $(( $(date +%s) - T0 )) s"
tail -40 $OUT/g4/g4.txt
BENCH=/tmp/g4/gb timeout 195 bash docs/gpu-runs/2026-11-29/obs1.sh build $OUT/obs1 > $OUT/obs1/obs1.txt 2>&1; echo "obs1 rc=$? at $(( $(date +%s) - T0 )) s"
tail -25 $OUT/obs1/obs1.txt
cd $OUT && tar czf $R/all.tgz g4 obs1 && cp g4/g4.txt obs1/obs1.txt $R/ && ls -la $R
