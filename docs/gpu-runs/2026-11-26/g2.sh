#!/bin/bash
# GPU call G2: G1's CPU benchmarks again on the warm machine, pinned to one core (taskset -c 3),
# more rounds: bench_cpu_dispatch 7 interleaved rounds, ncclbpf bench 4 interleaved rounds.
B=$PWD/gpuwork/build; A=$PWD/gpuwork/base; date -u; lscpu | grep "Model name"; uptime
for i in 1 2 3 4 5 6 7; do
  echo "round $i base:  $(taskset -c 3 $A/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E 'noop: plugin - native')"
  echo "round $i after: $(taskset -c 3 $B/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E 'noop: plugin - native')"
done 2>&1 | tee $OUT/g2-dispatch.txt
for i in 1 2 3 4; do
  echo "round $i base:"; taskset -c 3 $B/ncclbpf bench --lib $A/libncclbpf.so --policy-dir $B/policies --calls 1000000 --rounds 9 --policies noop,size_aware 2>&1 | grep -E "^(noop|size_aware) "
  echo "round $i after:"; taskset -c 3 $B/ncclbpf bench --calls 1000000 --rounds 9 --policies noop,size_aware 2>&1 | grep -E "^(noop|size_aware) "
done 2>&1 | tee $OUT/g2-bench.txt
uptime
