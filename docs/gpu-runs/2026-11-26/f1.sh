#!/bin/bash
# GPU call F1: the decision path on the GPU host's CPU (quieter than the CI VM), and the tuner's
# straight path under real NCCL (2 emulated nodes, policies with and without hash maps).
B=$PWD/gpuwork/build; W=/tmp/f1; mkdir -p $W; date -u; lscpu | grep "Model name"
for i in 1 2 3; do $B/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E "raw JIT entry =|plugin - native"; done | tee $OUT/f1-dispatch.txt
$B/ncclbpf bench --calls 1000000 --rounds 9 --policies noop,size_aware,lookup_only,lookup_update 2>&1 | tail -8 | tee $OUT/f1-bench.txt
NCCL_DEBUG=WARN timeout 200 scripts/emulate-nodes.sh --nodes 2 --reps 1 --max-bytes 64M \
  --configs default,policy:size_aware,policy:lookup_update --warmup 5 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -1 $W/run.txt; grep -c "all results correct" $W/logs/*.log; grep -h "WARN" $W/logs/*.log | head -5
python3 scripts/emulate_report.py $W/samples.csv | tee $OUT/f1-report.md | head -14
