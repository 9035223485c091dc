#!/bin/bash
# GPU call G1 (session of stop 20): the decision path after counted sections,
# runtime_hook_direct and hidden hot globals, against main before them (a5309a6), on the GPU
# host's CPU, interleaved; then the straight path under real NCCL (2 emulated nodes).
# gpuwork/build: this change (Release); gpuwork/base: a5309a6 (Release).
B=$PWD/gpuwork/build; A=$PWD/gpuwork/base; W=/tmp/g1; mkdir -p $W; date -u; lscpu | grep "Model name"
for i in 1 2 3 4 5; do
  echo "round $i base:  $($A/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E 'noop: plugin - native')"
  echo "round $i after: $($B/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E 'noop: plugin - native')"
done 2>&1 | tee $OUT/g1-dispatch.txt
for i in 1 2 3; do
  echo "round $i base:"; $B/ncclbpf bench --lib $A/libncclbpf.so --policy-dir $B/policies --calls 1000000 --rounds 9 --policies noop,size_aware 2>&1 | grep -E "^(noop|size_aware) "
  echo "round $i after:"; $B/ncclbpf bench --calls 1000000 --rounds 9 --policies noop,size_aware 2>&1 | grep -E "^(noop|size_aware) "
done 2>&1 | tee $OUT/g1-bench.txt
NCCL_DEBUG=WARN timeout 240 scripts/emulate-nodes.sh --nodes 2 --reps 1 --max-bytes 64M \
  --configs default,policy:noop,policy:size_aware,policy:lookup_update --warmup 5 --iter-bytes 128M --min-iters 8 --build $B --out $W > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -1 $W/run.txt; grep -c "all results correct" $W/logs/*.log; grep -h "WARN" $W/logs/*.log | head -5
python3 scripts/emulate_report.py $W/samples.csv | tee $OUT/g1-report.md | head -16
